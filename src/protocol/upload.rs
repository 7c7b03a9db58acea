//! Segmented upload (`docs/PROTOCOL.md` §4): a producer that can't stream a request body sends
//! the stream as numbered parts `POST /{path}?part=K[&upload=ID][&final=1]`.

/// Query parameter: the part number K (0, 1, 2, ...). `part=0` starts an upload.
pub const PART: &str = "part";
/// Query parameter: the upload id from the `part=0` answer's [`HEADER`] (required for K ≥ 1,
/// unless sent as the [`HEADER`] request header).
pub const UPLOAD: &str = "upload";
/// Query parameter: `final=1` marks the last part (its body may be empty).
pub const FINAL: &str = "final";
/// Response header of `part=0` (and request-header alternative to [`UPLOAD`]).
pub const HEADER: &str = "X-Httpipe-Upload";

/// Relay default: largest part body accepted, in bytes (larger → 413).
pub const DEFAULT_MAX_PART_BYTES: usize = 16 * 1024 * 1024;
/// Relay default: seconds without a next part before the consumer is truncated.
pub const DEFAULT_GAP_TIMEOUT_SECS: u64 = 60;
/// SDK default part size in bytes.
pub const SDK_PART_BYTES: usize = 1024 * 1024;
/// SDK default size of the first part (smaller, for a fast start), in bytes.
pub const SDK_FIRST_PART_BYTES: usize = 64 * 1024;

/// The query string (without `?`) of part `part`: `part=K[&upload=ID][&final=1]`.
/// `upload_id` is URL-safe base64 (as minted by the relay), so it needs no escaping.
pub fn part_query(part: u64, upload_id: Option<&str>, is_final: bool) -> String {
    let mut q = format!("{PART}={part}");
    if let Some(id) = upload_id {
        q.push_str(&format!("&{UPLOAD}={id}"));
    }
    if is_final {
        q.push_str(&format!("&{FINAL}=1"));
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query() {
        assert_eq!(part_query(0, None, false), "part=0");
        assert_eq!(
            part_query(3, Some("abc"), true),
            "part=3&upload=abc&final=1"
        );
    }
}
