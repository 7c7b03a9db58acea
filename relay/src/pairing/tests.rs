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
    let mut r = hub.await_peer("/a", None, Await::Reader, None);
    assert!(timeout(SHORT, r.ready()).await.is_err());
    let mut w = hub.await_peer("/a", None, Await::Writer, None);
    assert_eq!(timeout(SHORT, r.ready()).await.unwrap(), None);
    assert_eq!(timeout(SHORT, w.ready()).await.unwrap(), None);
    drop((r, w));
    assert_eq!(hub.counts(), Counts::default());

    // a Data API consumer releases a producer's await-reader, now or later
    let mut r = hub.await_peer("/b", None, Await::Reader, None);
    let _c = hub.consumer("/b", 1, 0).unwrap();
    timeout(SHORT, r.ready()).await.unwrap();
    let mut r2 = hub.await_peer("/b", None, Await::Reader, None);
    timeout(SHORT, r2.ready()).await.unwrap();

    // a Data API producer releases a consumer's await-writer
    let _p = hub.producer("/c", 1).unwrap();
    let mut w = hub.await_peer("/c", None, Await::Writer, None);
    timeout(SHORT, w.ready()).await.unwrap();
}

#[tokio::test]
async fn connect_caller_that_leaves_is_forgotten() {
    let hub = H::new();
    drop(hub.await_peer("/a", None, Await::Reader, None));
    assert_eq!(hub.counts(), Counts::default());
    let mut w = hub.await_peer("/a", None, Await::Writer, None);
    assert!(timeout(SHORT, w.ready()).await.is_err());
}

fn hello(s: &str) -> Option<String> {
    Some(s.to_string())
}

/// §5.1: two Connect callers swap hellos, whoever comes first.
#[tokio::test]
async fn connect_callers_swap_hellos_in_both_orders() {
    let hub = H::new();
    for (first, second) in [
        (Await::Reader, Await::Writer),
        (Await::Writer, Await::Reader),
    ] {
        let mut a = hub.await_peer("/a", None, first, hello(&format!("{first:?}")));
        assert!(timeout(SHORT, a.ready()).await.is_err());
        let mut b = hub.await_peer("/a", None, second, hello(&format!("{second:?}")));
        assert_eq!(
            timeout(SHORT, a.ready()).await.unwrap(),
            hello(&format!("{second:?}"))
        );
        assert_eq!(
            timeout(SHORT, b.ready()).await.unwrap(),
            hello(&format!("{first:?}"))
        );
        drop((a, b));
        assert_eq!(hub.counts(), Counts::default());
    }
    // one side without a hello: the other gets none, it still gets the other's
    let mut r = hub.await_peer("/b", None, Await::Reader, None);
    let mut w = hub.await_peer("/b", None, Await::Writer, hello("w"));
    assert_eq!(timeout(SHORT, r.ready()).await.unwrap(), hello("w"));
    assert_eq!(timeout(SHORT, w.ready()).await.unwrap(), None);
}

/// §5.1: a caller released by a Data API peer gets no hello, and its own goes nowhere.
#[tokio::test]
async fn connect_caller_released_by_data_peer_gets_no_hello() {
    let hub = H::new();
    // released later by a consumer / a producer
    let mut r = hub.await_peer("/a", None, Await::Reader, hello("r"));
    let mut w = hub.await_peer("/b", None, Await::Writer, hello("w"));
    let _c = hub.consumer("/a", 1, 0).unwrap();
    let _p = hub.producer("/b", 1).unwrap();
    assert_eq!(timeout(SHORT, r.ready()).await.unwrap(), None);
    assert_eq!(timeout(SHORT, w.ready()).await.unwrap(), None);
    // released at once by a waiting one
    let mut r = hub.await_peer("/a", None, Await::Reader, hello("r"));
    let mut w = hub.await_peer("/b", None, Await::Writer, hello("w"));
    assert_eq!(timeout(SHORT, r.ready()).await.unwrap(), None);
    assert_eq!(timeout(SHORT, w.ready()).await.unwrap(), None);
    assert_eq!(hub.counts().connect_waiters, 0);
}

/// §5.1: a channel call meets only its own channel's Connect callers on its path.
#[tokio::test]
async fn channels_are_isolated() {
    let hub = H::new();
    // Data API peers don't release a channel call, nor does a channel call see them
    let _c = hub.consumer("/a", 1, 0).unwrap();
    let mut r = hub.await_peer("/a", Some("x"), Await::Reader, hello("r"));
    assert!(timeout(SHORT, r.ready()).await.is_err());
    let _p = hub.producer("/b", 1).unwrap();
    let mut w = hub.await_peer("/b", Some("x"), Await::Writer, None);
    assert!(timeout(SHORT, w.ready()).await.is_err());
    // a channel waiter doesn't keep a Data API producer from matching on the same path
    let mut r2 = hub.await_peer("/b", Some("y"), Await::Reader, None);
    let _c2 = hub.consumer("/b", 1, 5).unwrap();
    assert!(timeout(SHORT, r2.ready()).await.is_err());
    drop((w, r2));

    // plain Connect callers and channel callers don't meet
    let mut plain = hub.await_peer("/a", None, Await::Writer, hello("plain"));
    assert!(timeout(SHORT, r.ready()).await.is_err());
    assert!(timeout(SHORT, plain.ready()).await.is_err());
    // another channel on the same path, or the same channel on another path, doesn't either
    let mut other = hub.await_peer("/a", Some("y"), Await::Writer, hello("y"));
    let mut elsewhere = hub.await_peer("/z", Some("x"), Await::Writer, hello("z"));
    assert!(timeout(SHORT, r.ready()).await.is_err());
    assert!(timeout(SHORT, other.ready()).await.is_err());
    assert!(timeout(SHORT, elsewhere.ready()).await.is_err());
    // the same channel on the same path does, with hellos
    let mut same = hub.await_peer("/a", Some("x"), Await::Writer, hello("same"));
    assert_eq!(timeout(SHORT, r.ready()).await.unwrap(), hello("same"));
    assert_eq!(timeout(SHORT, same.ready()).await.unwrap(), hello("r"));
    assert!(timeout(SHORT, plain.ready()).await.is_err());
    assert!(timeout(SHORT, other.ready()).await.is_err());
    // the plain caller still meets a plain peer (a Data API producer here)
    let _p2 = hub.producer("/a", 1).unwrap();
    assert_eq!(timeout(SHORT, plain.ready()).await.unwrap(), None);
}

/// Guards of channel and hello callers unregister on drop: nothing is left behind, and the
/// next pair meets.
#[tokio::test]
async fn channel_callers_that_leave_are_forgotten() {
    let hub = H::new();
    drop(hub.await_peer("/a", Some("x"), Await::Reader, hello("gone")));
    drop(hub.await_peer("/a", None, Await::Writer, hello("gone")));
    assert_eq!(hub.counts(), Counts::default());
    assert!(hub.lock().is_empty(), "an empty slot was left behind");
    let mut w = hub.await_peer("/a", Some("x"), Await::Writer, hello("w"));
    assert!(timeout(SHORT, w.ready()).await.is_err());
    let mut r = hub.await_peer("/a", Some("x"), Await::Reader, hello("r"));
    assert_eq!(timeout(SHORT, w.ready()).await.unwrap(), hello("r"));
    assert_eq!(timeout(SHORT, r.ready()).await.unwrap(), hello("w"));
    drop((w, r));
    assert!(hub.lock().is_empty());
}
