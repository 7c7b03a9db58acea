//! How a transfer ends and what the CLI says of it (PROTOCOL.md §12.2): the producer finishes
//! or aborts its stream and reports the receiver's receipt; the consumer gives its receipt
//! once its output is complete.

use crate::exit::{from_net, CliError, Role};
use crate::interrupt::{self, Stage};
use crate::transfer::{self, Delivery};

/// The producer's last line: whether the receiver confirmed (§12.2).
pub(crate) fn delivered(d: &Delivery) {
    let resumed = match d.resumes {
        0 => String::new(),
        n => format!(" (after {n} reconnect{})", if n == 1 { "" } else { "s" }),
    };
    // §12.2: only a receipt made with the transfer's key is a proof
    let proof = match (d.encrypted, d.authenticated) {
        (true, true) => "authenticated: it decrypted them",
        (true, false) => "ciphertext, not authenticated: the receiver holds no key",
        (false, _) => "a plain transfer's receipt: a checksum, not a proof",
    };
    match d.confirmed {
        Some(n) => {
            eprintln!("httpipe: delivered: the receiver confirmed {n} bytes ({proof}){resumed}")
        }
        None => eprintln!(
            "httpipe: sent {} bytes{resumed}; the receiver did not confirm (it sends no receipts)",
            d.bytes
        ),
    }
}

/// The consumer's last word (§12.2): the `ok` receipt once the output is complete, else the
/// `cancelled` one (so the producer fails at once instead of waiting to resume).
pub(crate) async fn settle(rx: transfer::Receiver, complete: bool) {
    match rx.settle(complete).await {
        Ok(true) => {
            interrupt::enter(Stage::Confirmed);
            tracing::info!("the sender has our receipt")
        }
        Ok(false) => {}
        // The data is saved either way: the sender reports itself unconfirmed.
        Err(e) => tracing::warn!("the receipt did not reach the sender: {e}"),
    }
}

/// Finishes the stream if `r` is Ok, else aborts it (the consumer sees it cut short). An
/// input that ended after this process caught a signal is not finished either: a terminal's
/// Ctrl-C stops the feeding pipeline too, whose end is then no end of the data.
pub(crate) async fn end_stream<T>(
    sender: transfer::Sender,
    r: Result<T, CliError>,
) -> Result<(T, Delivery), CliError> {
    let r = match r {
        Ok(_) if interrupt::caught().is_some() => Err(interrupt::stopped()),
        r => r,
    };
    match r {
        Ok(v) => {
            interrupt::enter(Stage::Sent);
            let d = sender
                .finish()
                .await
                .map_err(|e| from_net(&e, Role::Producer))?;
            Ok((v, d))
        }
        Err(e) => {
            sender.abort(&e.what).await;
            Err(e)
        }
    }
}
