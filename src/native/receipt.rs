//! Delivery receipts in the native driver (`docs/PROTOCOL.md` §12.2): the core's
//! [`ConsumerReceipt`](crate::client::consumer::ConsumerReceipt) decides which
//! receipt goes when and how long to wait for it; this module makes its calls and waits as
//! its [`ReceiptWait`] says. (The mirror of `wasm/receipt.rs`.)

use std::time::Instant;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::http::{self, text_request, HeaderView};
use super::stop::Stop;
use crate::client::consumer::{LastWord, ReceiptWait};
use crate::client::delivery::{DeliveryStep, ReceiptDelivery};
use crate::client::error::Error;

/// Makes the calls of one receipt's delivery as the core says (its times on `clock`), until
/// its end: `Ok` when the producer took it (and stated the end, when it checks that).
pub(crate) async fn deliver(
    http_client: &reqwest::Client,
    mut delivery: ReceiptDelivery,
    clock: Instant,
) -> Result<(), Error> {
    let now = || clock.elapsed().as_secs_f64() * 1000.0;
    loop {
        match delivery.poll(now()) {
            DeliveryStep::Call(req) => {
                match text_request(http_client, &req, None, &Stop::new()).await {
                    Ok(a) => delivery.on_answer(a.status, &HeaderView(&a.headers), &a.body, now()),
                    Err(f) => delivery.on_failure(f, now()),
                }
            }
            DeliveryStep::WakeAt(t) => {
                tokio::time::sleep(http::duration_of_ms((t - now()).max(0.0))).await
            }
            DeliveryStep::Done(r) => return r,
        }
    }
}

/// Sends `word` as its wait says: the future to await before reporting (its output: the
/// stream's verdict, an error instead of the end), or `None` when nobody waits (it goes on in
/// the background while the runtime runs).
pub(crate) fn send_last_word(
    http_client: &reqwest::Client,
    word: LastWord,
    clock: Instant,
) -> Option<BoxFuture<'static, Option<Error>>> {
    let http_client = http_client.clone();
    let call = async move { deliver(&http_client, word.delivery, clock).await };
    match word.wait {
        ReceiptWait::Verdict => Some(async move { call.await.err() }.boxed()),
        ReceiptWait::BeforeEnd => Some(
            async move {
                let _ = call.await;
                None
            }
            .boxed(),
        ),
        ReceiptWait::AtMost(ms) => {
            let task = http::spawn_finishing(call)?;
            Some(
                async move {
                    let _ = tokio::time::timeout(http::duration_of_ms(ms), task).await;
                    None
                }
                .boxed(),
            )
        }
        ReceiptWait::Background => {
            http::spawn_finishing(call);
            None
        }
    }
}
