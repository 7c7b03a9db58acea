//! Checks and defaults of the options every driver takes (`docs/js-api.md`, the native
//! client's `SendOptions` / `ReceiveOptions`): one rule and one message per mistake, the
//! option named as the caller spells it (`receiptTimeout` in JavaScript, `receipt_timeout` in
//! Rust). Errors are `UNSUPPORTED` usage errors, before anything waits on the relay.

use super::error::Error;
use super::producer::ReceiptConfig;
use super::receipt::new_transfer_id;
use crate::protocol::hello::RECEIPT_TIMEOUT_S;

/// A number of seconds given as `name`: finite and greater than zero.
pub fn positive_seconds(name: &str, seconds: Option<f64>) -> Result<Option<f64>, Error> {
    match seconds {
        Some(s) if !(s.is_finite() && s > 0.0) => Err(Error::usage(format!(
            "`{name}` must be a positive number of seconds"
        ))),
        s => Ok(s),
    }
}

/// The producer's side of §12 for the caller's `receipt` (wait for one; `ciphertext`: accept
/// a receipt for the ciphertext from a consumer without keys, §12.2) and `resume`
/// (seconds, `None`: off): a fresh transfer id whenever either is on — the id serves both
/// (§12.1, §12.3) — with the receipt's wait (`RECEIPT_TIMEOUT_S` unless given); `None` when
/// both are off (the rendezvous is plain §5).
pub fn receipt_config(
    wait: bool,
    ciphertext: bool,
    timeout_s: Option<f64>,
    resume_s: Option<f64>,
) -> Result<Option<ReceiptConfig>, Error> {
    if !wait && resume_s.is_none() {
        return Ok(None);
    }
    Ok(Some(ReceiptConfig {
        transfer: new_transfer_id()?,
        wait,
        timeout_s: timeout_s.unwrap_or(RECEIPT_TIMEOUT_S),
        ciphertext,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(receipt_config(false, false, None, None)
            .expect("ok")
            .is_none());
        let r = receipt_config(false, false, None, Some(60.0))
            .expect("ok")
            .expect("an id");
        assert!(!r.wait);
        assert_eq!(r.timeout_s, RECEIPT_TIMEOUT_S);
        let r = receipt_config(true, false, Some(5.0), None)
            .expect("ok")
            .expect("an id");
        assert!(r.wait && r.timeout_s == 5.0 && r.transfer.len() == 22);
        let other = receipt_config(true, false, None, None)
            .expect("ok")
            .expect("an id");
        assert_ne!(r.transfer, other.transfer, "fresh each time");
    }
}
