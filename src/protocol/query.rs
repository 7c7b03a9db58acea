//! Query parameter names and values of the Data and Connect APIs (`docs/PROTOCOL.md` §3.1,
//! §5, §6).

/// Number of consumers of a transfer (`?n=N`, default 1, a positive integer).
pub const N: &str = "n";
/// Access token as a query parameter (§6), for `<a href>` / `<video src>` consumers.
pub const ACCESS_TOKEN: &str = "accesstoken";
/// Connect API mode (§5): [`MODE_AWAIT_READER`] or [`MODE_AWAIT_WRITER`].
pub const MODE: &str = "mode";
/// Sent by a producer: return when a consumer is present.
pub const MODE_AWAIT_READER: &str = "await-reader";
/// Sent by a consumer: return when a producer is present.
pub const MODE_AWAIT_WRITER: &str = "await-writer";
/// Connect API wait limit in seconds (§5); elapsed → 408.
pub const TIMEOUT: &str = "timeout";
/// Connect API: `redirect=true` answers 307 to the data URL (§5).
pub const REDIRECT: &str = "redirect";

/// Parses `n` (§3.1): `None` (absent) means 1; anything but a positive integer is `Err`.
pub fn parse_n(value: Option<&str>) -> Result<usize, ()> {
    match value {
        None => Ok(1),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n >= 1 && v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_values() {
        assert_eq!(parse_n(None), Ok(1));
        assert_eq!(parse_n(Some("3")), Ok(3));
        for bad in ["0", "-1", "+2", "abc", "", "1.5", "99999999999999999999999"] {
            assert_eq!(parse_n(Some(bad)), Err(()), "{bad}");
        }
    }
}
