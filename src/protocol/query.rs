//! Query parameter names and values of the Data and Connect APIs (`docs/PROTOCOL.md` §3.1,
//! §5, §5.1, §6).

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
/// Connect API: `channel=ID` meets only Connect callers with the same channel on the same
/// stream path (§5.1); see [`is_valid_channel`].
pub const CHANNEL: &str = "channel";
/// The longest [`CHANNEL`] id, in bytes (§5.1).
pub const MAX_CHANNEL_BYTES: usize = 64;
/// Connect API on a channel: `linger=S` keeps the caller's hello for the next caller of the
/// opposite role until S seconds (at most [`crate::protocol::hello::LINGER_MAX_S`]) after the
/// call arrived, though the caller left (§5.1).
pub const LINGER: &str = "linger";

/// True if `id` is a valid [`CHANNEL`] (§5.1): 1 to [`MAX_CHANNEL_BYTES`] bytes of
/// `A-Z a-z 0-9 - _`.
pub fn is_valid_channel(id: &str) -> bool {
    (1..=MAX_CHANNEL_BYTES).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Parses `n` (§3.1): absent means 1; anything but a positive integer is `None` (→ 400).
pub fn parse_n(value: Option<&str>) -> Option<usize> {
    match value {
        None => Some(1),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n >= 1 && v.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_values() {
        assert_eq!(parse_n(None), Some(1));
        assert_eq!(parse_n(Some("3")), Some(3));
        for bad in ["0", "-1", "+2", "abc", "", "1.5", "99999999999999999999999"] {
            assert_eq!(parse_n(Some(bad)), None, "{bad}");
        }
    }

    #[test]
    fn channels() {
        assert!(is_valid_channel("receipt-Ab_09"));
        assert!(is_valid_channel(&"x".repeat(MAX_CHANNEL_BYTES)));
        for bad in [
            "",
            "a b",
            "a/b",
            "a.b",
            "\u{e9}",
            &"x".repeat(MAX_CHANNEL_BYTES + 1),
        ] {
            assert!(!is_valid_channel(bad), "{bad}");
        }
    }
}
