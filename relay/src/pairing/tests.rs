//! Unit tests of the rendezvous rules (the HTTP-level ones are in relay/tests/).

use super::*;
use std::time::Duration;
use tokio::time::timeout;

type H = Hub<u32>;

const SHORT: Duration = Duration::from_millis(50);

#[tokio::test]
async fn producer_then_consumer_matches() {
    let hub = H::new();
    let mut p = hub.producer("/a", 1).unwrap();
    assert_eq!(hub.counts().waiting_producers, 1);
    assert!(timeout(SHORT, p.matched()).await.is_err());
    let _c = hub.consumer("/a", 1, 7).unwrap();
    let m = p.matched().await;
    assert_eq!(m.consumers, vec![7]);
    assert_eq!(hub.counts().active_transfers, 1);
    drop(m);
    assert_eq!(hub.counts(), Counts::default());
}

#[tokio::test]
async fn consumer_first_and_fan_out() {
    let hub = H::new();
    let _c1 = hub.consumer("/a", 2, 1).unwrap();
    let mut p = hub.producer("/a", 2).unwrap();
    assert!(timeout(SHORT, p.matched()).await.is_err());
    let _c2 = hub.consumer("/a", 2, 2).unwrap();
    assert_eq!(p.matched().await.consumers, vec![1, 2]);
}

#[tokio::test]
async fn rejections() {
    let hub = H::new();
    let _p = hub.producer("/a", 1).unwrap();
    assert_eq!(
        hub.producer("/a", 1).err(),
        Some(Rejection::AnotherSender("/a".into()))
    );
    assert_eq!(
        hub.consumer("/a", 3, 0).err(),
        Some(Rejection::ReceiverCountMismatch {
            expected: 1,
            got: 3
        })
    );
    let _c = hub.consumer("/b", 1, 0).unwrap();
    assert_eq!(
        hub.consumer("/b", 1, 0).err(),
        Some(Rejection::TooManyReceivers)
    );
}

#[tokio::test]
async fn busy_path_rejects_until_transfer_ends() {
    let hub = H::new();
    let mut p = hub.producer("/a", 1).unwrap();
    let _c = hub.consumer("/a", 1, 0).unwrap();
    let m = p.matched().await;
    drop(p);
    assert!(matches!(
        hub.producer("/a", 1),
        Err(Rejection::AnotherSender(_))
    ));
    assert!(matches!(
        hub.consumer("/a", 1, 0),
        Err(Rejection::TooManyReceivers)
    ));
    drop(m);
    assert!(hub.producer("/a", 1).is_ok());
}

/// piping-server-rust bug 1: a waiting sender that leaves must free the path.
#[tokio::test]
async fn waiting_producer_that_leaves_frees_the_path() {
    let hub = H::new();
    let p = hub.producer("/a", 1).unwrap();
    drop(p);
    assert_eq!(hub.counts(), Counts::default());
    assert!(hub.producer("/a", 1).is_ok());
}

/// piping-server-rust bug 2: a consumer that left must not be matched with a later producer.
#[tokio::test]
async fn waiting_consumer_that_leaves_is_forgotten() {
    let hub = H::new();
    drop(hub.consumer("/a", 1, 1).unwrap());
    let mut p = hub.producer("/a", 1).unwrap();
    assert!(
        timeout(SHORT, p.matched()).await.is_err(),
        "matched a consumer that left"
    );
    let _c = hub.consumer("/a", 1, 2).unwrap();
    assert_eq!(p.matched().await.consumers, vec![2]);
}

#[tokio::test]
async fn n_may_change_once_the_path_is_empty() {
    let hub = H::new();
    drop(hub.consumer("/a", 2, 1).unwrap());
    assert!(hub.producer("/a", 3).is_ok());
}

#[tokio::test]
async fn connect_pairs_with_connect_and_with_data_peers() {
    let hub = H::new();
    let mut r = hub.await_peer("/a", Await::Reader);
    assert!(timeout(SHORT, r.ready()).await.is_err());
    let mut w = hub.await_peer("/a", Await::Writer);
    timeout(SHORT, r.ready()).await.unwrap();
    timeout(SHORT, w.ready()).await.unwrap();
    drop((r, w));
    assert_eq!(hub.counts(), Counts::default());

    // a Data API consumer releases a producer's await-reader, now or later
    let mut r = hub.await_peer("/b", Await::Reader);
    let _c = hub.consumer("/b", 1, 0).unwrap();
    timeout(SHORT, r.ready()).await.unwrap();
    let mut r2 = hub.await_peer("/b", Await::Reader);
    timeout(SHORT, r2.ready()).await.unwrap();

    // a Data API producer releases a consumer's await-writer
    let _p = hub.producer("/c", 1).unwrap();
    let mut w = hub.await_peer("/c", Await::Writer);
    timeout(SHORT, w.ready()).await.unwrap();
}

#[tokio::test]
async fn connect_caller_that_leaves_is_forgotten() {
    let hub = H::new();
    drop(hub.await_peer("/a", Await::Reader));
    assert_eq!(hub.counts(), Counts::default());
    let mut w = hub.await_peer("/a", Await::Writer);
    assert!(timeout(SHORT, w.ready()).await.is_err());
}
