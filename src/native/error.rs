//! The native client's errors at its edges (the mirror of `wasm/error.rs`): the core's
//! [`Error`] inside an `io::Error` of the [`super::Reader`] / [`super::Writer`] faces, and
//! back.

use std::io;

use super::{Error, ErrorCode};
#[allow(unused_imports)] // for the doc links
use super::{Reader, Writer};

/// The [`Error`] carried by an `io::Error` of [`Reader`] or [`Writer`] (their `AsyncRead` /
/// `AsyncWrite` faces).
///
/// ```
/// use httpipe::native::{error_of, Error, ErrorCode};
/// let e = std::io::Error::other(Error::new(ErrorCode::Truncated, "cut"));
/// assert_eq!(error_of(&e).map(|e| e.code), Some(ErrorCode::Truncated));
/// assert!(error_of(&std::io::Error::other("plain")).is_none());
/// ```
pub fn error_of(e: &io::Error) -> Option<&Error> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<Error>())
}

/// An `io::Error` carrying `e` (kind by code; never `Interrupted`, which readers retry).
pub(crate) fn io_error(e: Error) -> io::Error {
    let kind = match e.code {
        ErrorCode::Truncated => io::ErrorKind::UnexpectedEof,
        ErrorCode::PeerDisconnected | ErrorCode::Unconfirmed => io::ErrorKind::BrokenPipe,
        ErrorCode::WrongKey | ErrorCode::DecryptFailed | ErrorCode::WrongCode => {
            io::ErrorKind::InvalidData
        }
        ErrorCode::Unauthorized | ErrorCode::Forbidden => io::ErrorKind::PermissionDenied,
        ErrorCode::ConnectTimeout => io::ErrorKind::TimedOut,
        ErrorCode::Network => io::ErrorKind::ConnectionAborted,
        ErrorCode::RelayBusy => io::ErrorKind::ResourceBusy,
        ErrorCode::Unsupported => io::ErrorKind::InvalidInput,
        ErrorCode::RelayError | ErrorCode::Aborted => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}
