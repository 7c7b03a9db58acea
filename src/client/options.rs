//! Checks and defaults of the options every driver takes (`docs/js-api.md`, the native
//! client's `SendOptions` / `ReceiveOptions`): one rule and one message per mistake, the
//! option named as the caller spells it (`receiptTimeout` in JavaScript, `receipt_timeout` in
//! Rust). Errors are `UNSUPPORTED` usage errors, before anything waits on the relay.

use super::error::Error;
use super::producer::ReceiptConfig;
use super::receipt::new_transfer_id;
use crate::protocol::hello::{RECEIPT_TIMEOUT_S, RESUME_TIME_S};

/// The `receipt` option (§12), as every driver means it: `Auto` (the default) — a consumer
/// sends its receipt at the stream's clean end, a producer waits for it; `Manual` (a
/// consumer) — the application confirms after it saved the data; `Ciphertext` (a producer)
/// — accept a receipt for the ciphertext from a consumer without keys (§12.2); `Off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptOption {
    Off,
    Auto,
    Manual,
    Ciphertext,
}

impl ReceiptOption {
    /// A consumer sends a receipt (and says so in its hello, §12.1); a producer waits for one.
    pub fn on(self) -> bool {
        self != ReceiptOption::Off
    }

    /// The consumer's application confirms (`confirm()`), not the end of the stream.
    pub fn manual(self) -> bool {
        self == ReceiptOption::Manual
    }
}

/// The `resume` option (§12.3) as given: `None` (the default: on for [`RESUME_TIME_S`]),
/// on / off, or seconds to keep trying.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResumeOption {
    Flag(bool),
    Seconds(f64),
}

/// Seconds to keep trying to resume after a break (`None`: off). On by default: a break is
/// worth waiting [`RESUME_TIME_S`] for; an app shows `reconnecting` meanwhile, and a peer
/// that failed says so at once.
///
/// # Errors
///
/// `UNSUPPORTED` for seconds that are not finite and greater than zero.
pub fn resume_seconds(given: Option<ResumeOption>) -> Result<Option<f64>, Error> {
    match given {
        None | Some(ResumeOption::Flag(true)) => Ok(Some(RESUME_TIME_S)),
        Some(ResumeOption::Flag(false)) => Ok(None),
        Some(ResumeOption::Seconds(s)) if s > MAX_WAIT_S && s.is_finite() => {
            Err(too_long("resume"))
        }
        Some(ResumeOption::Seconds(s)) if s.is_finite() && s > 0.0 => Ok(Some(s)),
        Some(ResumeOption::Seconds(_)) => Err(Error::usage(
            "`resume` must be false, true or a positive number of seconds",
        )),
    }
}

/// Whether a consumer sends receipts, for the caller's `receipt` (§12.1).
///
/// # Errors
///
/// `UNSUPPORTED` for `'ciphertext'`, which is a sender's option (§12.2).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
pub fn consumer_receipt(receipt: ReceiptOption) -> Result<bool, Error> {
    if receipt == ReceiptOption::Ciphertext {
        return Err(Error::usage(
            "`receipt: 'ciphertext'` is a sender's; a receiver takes true, false or 'manual'",
        ));
    }
    Ok(receipt.on())
}

/// The producer's declared `size` (§11.1, `httpipe-size=N`): a whole number of bytes that a
/// JavaScript number holds exactly (at most 2^53).
///
/// # Errors
///
/// `UNSUPPORTED` for anything else (negative, fractional, not finite, larger).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the wasm driver's
pub fn declared_size(size: Option<f64>) -> Result<Option<u64>, Error> {
    match size {
        None => Ok(None),
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_992.0 => {
            Ok(Some(n as u64))
        }
        Some(n) => Err(Error::usage(format!(
            "`size` must be a whole number of bytes from 0 to 2^53, got {}",
            number_text(n)
        ))),
    }
}

/// The longest wait an option may ask for, in seconds (~23 days): a JavaScript timer holds at
/// most 2^31 − 1 ms (24.8 days) and fires at once past it, which made a `receiptTimeout` of 30
/// days an immediate, false `UNCONFIRMED`.
pub const MAX_WAIT_S: f64 = 2_000_000.0;

fn too_long(name: &str) -> Error {
    Error::usage(format!(
        "`{name}` must be at most {} seconds (23 days)",
        MAX_WAIT_S as u64
    ))
}

/// A number of seconds given as `name`: finite, greater than zero, at most [`MAX_WAIT_S`].
pub fn positive_seconds(name: &str, seconds: Option<f64>) -> Result<Option<f64>, Error> {
    match seconds {
        Some(s) if !(s.is_finite() && s > 0.0) => Err(Error::usage(format!(
            "`{name}` must be a positive number of seconds"
        ))),
        Some(s) if s > MAX_WAIT_S => Err(too_long(name)),
        s => Ok(s),
    }
}

/// A number from an option or a clock as a message shows it: to the thousandth, without
/// trailing zeros ("15", "0.25", "-3", "NaN", "Infinity"; past 2^64 thousandths, the first
/// digit and the magnitude: "3e300"). `<f64 as Display>` would bring the
/// float formatter, 11 KB of the wasm module, for a few messages (issue #27).
pub(crate) fn number_text(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    let sign = if n < 0.0 { "-" } else { "" };
    if n.is_infinite() {
        return format!("{sign}Infinity");
    }
    let milli = (n.abs() * 1000.0).round();
    if milli >= u64::MAX as f64 {
        // its first digit and magnitude: "3e300" (by division: `log10` is 0.5 KB of wasm)
        let (mut m, mut exp) = (n.abs(), 0);
        while m >= 10.0 {
            m /= 10.0;
            exp += 1;
        }
        let first = (m + 1e-9).trunc().min(9.0) as u8;
        return format!("{sign}{first}e{exp}");
    }
    let milli = milli as u64;
    let (whole, frac) = (milli / 1000, milli % 1000);
    if frac == 0 {
        return format!("{sign}{whole}");
    }
    let frac = format!("{frac:03}");
    format!("{sign}{whole}.{}", frac.trim_end_matches('0'))
}

/// The producer's side of §12 for the caller's `receipt` (on: wait for one; `Ciphertext`:
/// accept a receipt for the ciphertext from a consumer without keys, §12.2) and `resume`
/// (seconds, `None`: off): a fresh transfer id whenever either is on — the id serves both
/// (§12.1, §12.3) — with the receipt's wait (`timeout_s`, as `name`d by the driver:
/// `RECEIPT_TIMEOUT_S` unless given); `None` when both are off (the rendezvous is plain §5).
///
/// # Errors
///
/// `UNSUPPORTED` for a timeout that is not a positive number of seconds.
pub fn receipt_config(
    receipt: ReceiptOption,
    (name, timeout_s): (&str, Option<f64>),
    resume_s: Option<f64>,
) -> Result<Option<ReceiptConfig>, Error> {
    if receipt == ReceiptOption::Manual {
        return Err(Error::usage(
            "`receipt: 'manual'` is a receiver's (it calls confirm()); a sender takes true, false or 'ciphertext'",
        ));
    }
    let timeout_s = positive_seconds(name, timeout_s)?;
    if !receipt.on() && resume_s.is_none() {
        return Ok(None);
    }
    Ok(Some(ReceiptConfig {
        transfer: new_transfer_id()?,
        wait: receipt.on(),
        timeout_s: timeout_s.unwrap_or(RECEIPT_TIMEOUT_S),
        ciphertext: receipt == ReceiptOption::Ciphertext,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 30 days (2 592 000 s) went to a JavaScript timer as more than 2^31 − 1 ms, which fired
    /// at once: CONNECT_TIMEOUT in 31 ms, and UNCONFIRMED after a complete delivery.
    #[test]
    fn waits_past_what_a_javascript_timer_holds_are_refused() {
        for name in ["timeout", "receiptTimeout"] {
            assert_eq!(
                positive_seconds(name, Some(MAX_WAIT_S)).ok(),
                Some(Some(MAX_WAIT_S))
            );
            for bad in [2_592_000.0, 1e300] {
                let e = positive_seconds(name, Some(bad)).unwrap_err();
                assert_eq!(e.code, crate::client::error::ErrorCode::Unsupported);
                assert!(
                    e.message.contains("at most 2000000 seconds"),
                    "{}",
                    e.message
                );
            }
        }
        let e = resume_seconds(Some(ResumeOption::Seconds(2_592_000.0))).unwrap_err();
        assert!(
            e.message.starts_with("`resume` must be at most"),
            "{}",
            e.message
        );
        assert_eq!(
            resume_seconds(Some(ResumeOption::Seconds(MAX_WAIT_S))).ok(),
            Some(Some(MAX_WAIT_S))
        );
    }

    /// From the helper's run: these were taken silently (`size: 1e300` reached the receiver
    /// as 18446744073709552000, `-1` and `NaN` as no size at all).
    #[test]
    fn sizes_and_receipt_roles_are_checked() {
        assert_eq!(declared_size(None).ok(), Some(None));
        assert_eq!(declared_size(Some(0.0)).ok(), Some(Some(0)));
        assert_eq!(declared_size(Some(12345.0)).ok(), Some(Some(12345)));
        for bad in [-1.0, 1.5, f64::NAN, f64::INFINITY, -f64::INFINITY, 1e300] {
            assert!(declared_size(Some(bad)).is_err(), "{bad}");
        }
        let e = receipt_config(ReceiptOption::Manual, ("receiptTimeout", None), None);
        assert!(e.is_err_and(|e| e.message.contains("is a receiver's")));
        assert!(consumer_receipt(ReceiptOption::Ciphertext).is_err());
        assert_eq!(consumer_receipt(ReceiptOption::Manual).ok(), Some(true));
        assert_eq!(consumer_receipt(ReceiptOption::Off).ok(), Some(false));
    }

    #[test]
    fn seconds_must_be_positive_and_finite() {
        assert_eq!(positive_seconds("timeout", None).ok(), Some(None));
        assert_eq!(positive_seconds("timeout", Some(0.5)).ok(), Some(Some(0.5)));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = positive_seconds("receiptTimeout", Some(bad)).err();
            assert!(e.is_some_and(
                |e| e.message == "`receiptTimeout` must be a positive number of seconds"
            ));
        }
    }

    #[test]
    fn a_transfer_id_serves_receipts_and_resume() {
        let t = |s| ("receiptTimeout", s);
        assert!(receipt_config(ReceiptOption::Off, t(None), None)
            .expect("ok")
            .is_none());
        let r = receipt_config(ReceiptOption::Off, t(None), Some(60.0))
            .expect("ok")
            .expect("an id");
        assert!(!r.wait);
        assert_eq!(r.timeout_s, RECEIPT_TIMEOUT_S);
        let r = receipt_config(ReceiptOption::Auto, t(Some(5.0)), None)
            .expect("ok")
            .expect("an id");
        assert!(r.wait && !r.ciphertext && r.timeout_s == 5.0 && r.transfer.len() == 22);
        let other = receipt_config(ReceiptOption::Ciphertext, t(None), None)
            .expect("ok")
            .expect("an id");
        assert!(other.wait && other.ciphertext);
        assert_ne!(r.transfer, other.transfer, "fresh each time");
        let e = receipt_config(ReceiptOption::Auto, t(Some(0.0)), None).err();
        assert!(e.is_some_and(|e| e.message.contains("`receiptTimeout`")));
    }

    #[test]
    fn resume_is_on_by_default_and_takes_positive_seconds() {
        assert_eq!(resume_seconds(None).ok(), Some(Some(RESUME_TIME_S)));
        let on = resume_seconds(Some(ResumeOption::Flag(true))).ok();
        assert_eq!(on, Some(Some(RESUME_TIME_S)));
        assert_eq!(
            resume_seconds(Some(ResumeOption::Flag(false))).ok(),
            Some(None)
        );
        assert_eq!(
            resume_seconds(Some(ResumeOption::Seconds(5.0))).ok(),
            Some(Some(5.0))
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = resume_seconds(Some(ResumeOption::Seconds(bad))).err();
            assert!(e.is_some_and(
                |e| e.message == "`resume` must be false, true or a positive number of seconds"
            ));
        }
    }

    #[test]
    fn numbers_are_written_to_the_thousandth_without_trailing_zeros() {
        for (n, text) in [
            (15.0, "15"),
            (0.5, "0.5"),
            (2.25, "2.25"),
            (0.001, "0.001"),
            (90.1234, "90.123"),
            (-3.0, "-3"),
            (-0.75, "-0.75"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (3e300, "3e300"),
            (-2.5e19, "-2e19"),
            (1e20, "1e20"),
            (1e300, "1e300"),
            (9.99e307, "9e307"),
            (f64::MAX, "1e308"),
            (16_777_217.0, "16777217"),
        ] {
            assert_eq!(number_text(n), text);
        }
    }
}
