//! Choosing the upload transport (`PROTOCOL.md` §10): a streaming request body where the
//! runtime supports one, the segmented upload (§4) otherwise; an `auto` streaming attempt that
//! fails before any byte was sent falls back, and the answer is remembered per relay origin.

use super::error::{Error, ErrorCode};
use crate::text::quoted;

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
                format!(
                    "`upload` must be 'auto', 'stream' or 'segmented', got {}",
                    quoted(other)
                ),
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

/// Whether the runtime can send a streaming request body (§10), by feature detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeStreams {
    /// No (Firefox, WebKit, an old runtime): segmented uploads only.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    No,
    /// Over any connection (Node, Deno, workerd, the native client).
    Yes,
    /// Over HTTP/2 only, which a browser speaks over TLS only (a Chromium page): never to an
    /// `http:` origin, where the attempt would only fail (Chromium logs
    /// `ERR_ALPN_NEGOTIATION_FAILED`) before the fallback.
    OverTls,
}

impl RuntimeStreams {
    /// Whether an upload to `origin` can stream.
    fn to(self, origin: &str) -> bool {
        match self {
            RuntimeStreams::No => false,
            RuntimeStreams::Yes => true,
            RuntimeStreams::OverTls => origin.starts_with("https:"),
        }
    }
}

/// What cuts a streaming upload in this runtime, never ending it cleanly (`PROTOCOL.md` §10,
/// §11.2 step 5): a property of its HTTP client, which the driver knows and tells the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadCut {
    /// An error in the request body: Chromium resets an HTTP/2 upload whose body stream
    /// errored but ends an aborted one cleanly (END_STREAM); Node, Deno and the native client
    /// cut it either way.
    BodyError,
    /// Only an abort: a body that errors ends the request as if it were complete (workerd).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    Abort,
}

/// The order in which a driver stops a streaming upload (a source that failed, the caller's
/// abort, a stall that turns into a resume) so that the relay sees a cut (§11.2 step 5). The
/// native driver's cancel fails the body and drops the request: `BodyFirst`, by construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
pub enum StopOrder {
    /// Error the request body, then abort the request.
    BodyFirst,
    /// Abort the request before the error reaches the body.
    AbortFirst,
}

impl UploadCut {
    /// The order that cuts an upload in a runtime with this property: what cuts it comes
    /// first (what follows is harmless there, and stops the rest).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
    pub fn stop_order(self) -> StopOrder {
        match self {
            UploadCut::BodyError => StopOrder::BodyFirst,
            UploadCut::Abort => StopOrder::AbortFirst,
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

/// What is known about streaming uploads per relay origin: a list, not a `HashMap` (a process
/// talks to a handful of relays; the hash map and its SipHash were 2 KB gzipped of the wasm
/// module, issue #27).
#[derive(Debug, Default)]
pub struct OriginMemory {
    streaming_works: Vec<(String, bool)>,
}

impl OriginMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decides the plan from the option, the runtime's feature detection and the memory.
    pub fn plan(
        &self,
        mode: UploadMode,
        runtime: RuntimeStreams,
        origin: &str,
    ) -> Result<Plan, Error> {
        let runtime_supports_streams = runtime.to(origin);
        match mode {
            UploadMode::Stream if runtime == RuntimeStreams::OverTls && !runtime_supports_streams => {
                Err(Error::new(
                    ErrorCode::Unsupported,
                    "a browser streams an upload over HTTP/2 only, which needs an https:// relay; use upload: 'auto' or 'segmented' (or an https relay)",
                ))
            }
            UploadMode::Segmented => Ok(Plan::Segmented),
            UploadMode::Stream if runtime_supports_streams => Ok(Plan::Stream { fallback: false }),
            UploadMode::Stream => Err(Error::new(
                ErrorCode::Unsupported,
                "this runtime can't send a streaming request body; use upload: 'auto' or 'segmented'",
            )),
            UploadMode::Auto if !runtime_supports_streams => Ok(Plan::Segmented),
            UploadMode::Auto => Ok(match self.known(origin) {
                Some(false) => Plan::Segmented,
                Some(true) => Plan::Stream { fallback: false },
                None => Plan::Stream { fallback: true },
            }),
        }
    }

    fn known(&self, origin: &str) -> Option<bool> {
        self.streaming_works
            .iter()
            .find(|(o, _)| o == origin)
            .map(|(_, works)| *works)
    }

    /// Records what an upload to `origin` showed.
    pub fn remember(&mut self, origin: &str, streaming_works: bool) {
        match self.streaming_works.iter_mut().find(|(o, _)| o == origin) {
            Some((_, works)) => *works = streaming_works,
            None => self
                .streaming_works
                .push((origin.to_string(), streaming_works)),
        }
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
            m.plan(UploadMode::Auto, RuntimeStreams::Yes, o).unwrap(),
            Plan::Stream { fallback: true }
        );
        assert_eq!(
            m.plan(UploadMode::Auto, RuntimeStreams::No, o).unwrap(),
            Plan::Segmented
        );
        assert_eq!(
            m.plan(UploadMode::Segmented, RuntimeStreams::Yes, o)
                .unwrap(),
            Plan::Segmented
        );
        assert_eq!(
            m.plan(UploadMode::Stream, RuntimeStreams::Yes, o).unwrap(),
            Plan::Stream { fallback: false }
        );
        assert_eq!(
            m.plan(UploadMode::Stream, RuntimeStreams::No, o)
                .unwrap_err()
                .code,
            ErrorCode::Unsupported
        );
        m.remember(o, false);
        assert_eq!(
            m.plan(UploadMode::Auto, RuntimeStreams::Yes, o).unwrap(),
            Plan::Segmented
        );
        assert_eq!(
            m.plan(UploadMode::Auto, RuntimeStreams::Yes, "https://h:2")
                .unwrap(),
            Plan::Stream { fallback: true }
        );
        m.remember(o, true);
        assert_eq!(
            m.plan(UploadMode::Auto, RuntimeStreams::Yes, o).unwrap(),
            Plan::Stream { fallback: false }
        );
    }

    #[test]
    fn a_page_streams_to_https_origins_only() {
        let m = OriginMemory::new();
        let page = RuntimeStreams::OverTls;
        assert_eq!(
            m.plan(UploadMode::Auto, page, "http://h:1").unwrap(),
            Plan::Segmented
        );
        assert_eq!(
            m.plan(UploadMode::Auto, page, "https://h:1").unwrap(),
            Plan::Stream { fallback: true }
        );
        let e = m.plan(UploadMode::Stream, page, "http://h:1").unwrap_err();
        assert_eq!(e.code, ErrorCode::Unsupported);
        assert!(e.message.contains("https://"), "{e}");
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

    #[test]
    fn the_stop_order_is_whatever_cuts_the_upload_first() {
        // Chromium (and Node, Deno, native): the body's error resets; workerd: only an abort
        assert_eq!(UploadCut::BodyError.stop_order(), StopOrder::BodyFirst);
        assert_eq!(UploadCut::Abort.stop_order(), StopOrder::AbortFirst);
    }
}
