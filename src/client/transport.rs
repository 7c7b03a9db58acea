//! Choosing the upload transport (`PROTOCOL.md` §10): a streaming request body where the
//! runtime supports one, the segmented upload (§4) otherwise; an `auto` streaming attempt that
//! fails before any byte was sent falls back, and the answer is remembered per relay origin.

use std::collections::HashMap;

use super::error::{Error, ErrorCode};

/// The `upload` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadMode {
    /// Streaming where the runtime and the relay can, else segmented (§10).
    Auto,
    /// One streaming request body.
    Stream,
    /// Parts of at most the part size (§4).
    Segmented,
}

impl UploadMode {
    /// `'auto'` (or none), `'stream'` or `'segmented'`; else `UNSUPPORTED`.
    pub fn parse(s: Option<&str>) -> Result<Self, Error> {
        match s {
            None | Some("auto") => Ok(UploadMode::Auto),
            Some("stream") => Ok(UploadMode::Stream),
            Some("segmented") => Ok(UploadMode::Segmented),
            Some(other) => Err(Error::new(
                ErrorCode::Unsupported,
                format!("`upload` must be 'auto', 'stream' or 'segmented', got {other:?}"),
            )),
        }
    }
}

/// The transport actually used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One streaming upload.
    Stream,
    /// A segmented upload (§4).
    Segmented,
}

impl Transport {
    /// `"stream"` or `"segmented"`, as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stream => "stream",
            Transport::Segmented => "segmented",
        }
    }
}

/// The plan for one upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Stream; on a failure before the first byte, fall back to segmented if `fallback`.
    Stream {
        fallback: bool,
    },
    Segmented,
}

/// What is known about streaming uploads per relay origin.
#[derive(Debug, Default)]
pub struct OriginMemory {
    streaming_works: HashMap<String, bool>,
}

impl OriginMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decides the plan from the option, the runtime's feature detection and the memory.
    pub fn plan(
        &self,
        mode: UploadMode,
        runtime_supports_streams: bool,
        origin: &str,
    ) -> Result<Plan, Error> {
        match mode {
            UploadMode::Segmented => Ok(Plan::Segmented),
            UploadMode::Stream if runtime_supports_streams => Ok(Plan::Stream { fallback: false }),
            UploadMode::Stream => Err(Error::new(
                ErrorCode::Unsupported,
                "this runtime can't send a streaming request body; use upload: 'auto' or 'segmented'",
            )),
            UploadMode::Auto if !runtime_supports_streams => Ok(Plan::Segmented),
            UploadMode::Auto => Ok(match self.streaming_works.get(origin) {
                Some(false) => Plan::Segmented,
                Some(true) => Plan::Stream { fallback: false },
                None => Plan::Stream { fallback: true },
            }),
        }
    }

    /// Records what an upload to `origin` showed.
    pub fn remember(&mut self, origin: &str, streaming_works: bool) {
        self.streaming_works
            .insert(origin.to_string(), streaming_works);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        let mut m = OriginMemory::new();
        let o = "http://h:1";
        assert_eq!(
            m.plan(UploadMode::Auto, true, o).unwrap(),
            Plan::Stream { fallback: true }
        );
        assert_eq!(m.plan(UploadMode::Auto, false, o).unwrap(), Plan::Segmented);
        assert_eq!(
            m.plan(UploadMode::Segmented, true, o).unwrap(),
            Plan::Segmented
        );
        assert_eq!(
            m.plan(UploadMode::Stream, true, o).unwrap(),
            Plan::Stream { fallback: false }
        );
        assert_eq!(
            m.plan(UploadMode::Stream, false, o).unwrap_err().code,
            ErrorCode::Unsupported
        );
        m.remember(o, false);
        assert_eq!(m.plan(UploadMode::Auto, true, o).unwrap(), Plan::Segmented);
        assert_eq!(
            m.plan(UploadMode::Auto, true, "https://h:2").unwrap(),
            Plan::Stream { fallback: true }
        );
        m.remember(o, true);
        assert_eq!(
            m.plan(UploadMode::Auto, true, o).unwrap(),
            Plan::Stream { fallback: false }
        );
    }

    #[test]
    fn parse_modes() {
        assert_eq!(UploadMode::parse(None).unwrap(), UploadMode::Auto);
        assert_eq!(
            UploadMode::parse(Some("segmented")).unwrap(),
            UploadMode::Segmented
        );
        assert!(UploadMode::parse(Some("fast")).is_err());
        assert_eq!(Transport::Segmented.as_str(), "segmented");
    }
}
