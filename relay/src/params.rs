//! The one query-string parser of the relay (`docs/PROTOCOL.md` §3.1, §4, §5, §6): decoded
//! `name=value` pairs, where a parameter the relay reads may appear at most once (a second
//! value is refused, not silently preferred, so no two checks can read different values).

use httpipe::protocol::control::Rejection;
use httpipe::protocol::{channel, query};

/// Decoded query parameters (and, for the token endpoint, form fields).
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parses a query string (`None`: no query).
    pub fn parse(query: Option<&str>) -> Params {
        let mut p = Params::default();
        p.extend(query.unwrap_or("").as_bytes());
        p
    }

    /// Adds the pairs of an `application/x-www-form-urlencoded` body.
    pub fn extend(&mut self, form: &[u8]) {
        self.0
            .extend(form_urlencoded::parse(form).map(|(k, v)| (k.into_owned(), v.into_owned())));
    }

    /// The value of `name`, if given; given twice is [`Rejection::InvalidParameter`].
    pub fn get(&self, name: &'static str) -> Result<Option<&str>, Rejection> {
        let mut found = self.0.iter().filter(|(k, _)| k == name);
        let first = found.next().map(|(_, v)| v.as_str());
        if found.next().is_some() {
            return Err(Rejection::InvalidParameter(name));
        }
        Ok(first)
    }

    /// `channel=ID` (§5.1, on Connect calls and Data API requests alike): absent is `None`;
    /// given twice or not [`query::is_valid_channel`] is `invalid-parameter`; without the
    /// channel's key in `headers` (`X-Httpipe-Channel-Key`, deriving `ID`) `invalid-header`.
    pub fn channel(&self, headers: &http::HeaderMap) -> Result<Option<&str>, Rejection> {
        match self.get(query::CHANNEL)? {
            Some(c) if !query::is_valid_channel(c) => {
                Err(Rejection::InvalidParameter(query::CHANNEL))
            }
            Some(c) => {
                let keys = headers.get_all(channel::KEY_HEADER).iter();
                channel::check_key(c, keys.map(|v| v.as_bytes()))?;
                Ok(Some(c))
            }
            None => Ok(None),
        }
    }

    /// `name=S`, seconds (`timeout`, `linger`): a number ≥ 0 (absent is `None`); given twice
    /// or anything else is [`Rejection::InvalidParameter`].
    pub fn seconds(&self, name: &'static str) -> Result<Option<std::time::Duration>, Rejection> {
        match self.get(name)?.map(str::parse::<f64>) {
            None => Ok(None),
            Some(Ok(t)) if t.is_finite() && t >= 0.0 => {
                Ok(Some(std::time::Duration::from_secs_f64(t.min(1e9))))
            }
            Some(_) => Err(Rejection::InvalidParameter(name)),
        }
    }

    /// `name=true|1` → true, `false|0` or absent → false, anything else refused.
    pub fn flag(&self, name: &'static str) -> Result<bool, Rejection> {
        match self.get(name)? {
            None | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") => Ok(true),
            Some(_) => Err(Rejection::InvalidParameter(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_name() {
        let p = Params::parse(Some("n=2&part=0&x=1&x=2&final=true&a=%2Fb"));
        assert_eq!(p.get("n"), Ok(Some("2")));
        assert_eq!(p.get("missing"), Ok(None));
        assert_eq!(p.get("x"), Err(Rejection::InvalidParameter("x")));
        assert_eq!(p.flag("final"), Ok(true));
        assert_eq!(p.flag("none"), Ok(false));
        assert_eq!(p.get("a"), Ok(Some("/b")));
        assert_eq!(
            Params::parse(Some("final=yes")).flag("final"),
            Err(Rejection::InvalidParameter("final"))
        );
        let mut form = Params::parse(Some("path=/a"));
        form.extend(b"path=/b");
        assert!(form.get("path").is_err());
        let id = channel::channel_id("key-1");
        let mut keyed = http::HeaderMap::new();
        keyed.insert(channel::KEY_HEADER, http::HeaderValue::from_static("key-1"));
        let none = http::HeaderMap::new();
        let q = format!("channel={id}");
        assert_eq!(
            Params::parse(Some(&q)).channel(&keyed),
            Ok(Some(id.as_str()))
        );
        assert_eq!(Params::parse(None).channel(&none), Ok(None));
        // the id alone (from a log) is not enough: the key must derive it (§5.1)
        for headers in [&none, &{
            let mut other = http::HeaderMap::new();
            other.insert(channel::KEY_HEADER, http::HeaderValue::from_static("key-2"));
            other
        }] {
            assert_eq!(
                Params::parse(Some(&q)).channel(headers),
                Err(Rejection::InvalidHeader("x-httpipe-channel-key"))
            );
        }
        for bad in ["channel=", "channel=a.b", "channel=a&channel=a"] {
            assert_eq!(
                Params::parse(Some(bad)).channel(&keyed),
                Err(Rejection::InvalidParameter(query::CHANNEL)),
                "{bad}"
            );
        }
    }
}
