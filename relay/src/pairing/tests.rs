//! Unit tests of the rendezvous rules (the HTTP-level ones are in relay/tests/).

use super::*;
use std::time::Duration;
use tokio::time::timeout;

type H = Hub<u32>;

const SHORT: Duration = Duration::from_millis(50);

#[tokio::test]
async fn producer_then_consumer_matches() {
    let hub = H::new();
    let mut p = hub.producer("/a", None, 1).unwrap();
    assert_eq!(hub.counts().waiting_producers, 1);
    assert!(timeout(SHORT, p.matched()).await.is_err());
    let _c = hub.consumer("/a", None, 1, 7).unwrap();
    let m = p.matched().await;
    assert_eq!(m.consumers, vec![7]);
    assert_eq!(hub.counts().active_transfers, 1);
    drop(m);
    assert_eq!(hub.counts(), Counts::default());
}

#[tokio::test]
async fn consumer_first_and_fan_out() {
    let hub = H::new();
    let _c1 = hub.consumer("/a", None, 2, 1).unwrap();
    let mut p = hub.producer("/a", None, 2).unwrap();
    assert!(timeout(SHORT, p.matched()).await.is_err());
    let _c2 = hub.consumer("/a", None, 2, 2).unwrap();
    assert_eq!(p.matched().await.consumers, vec![1, 2]);
}

#[tokio::test]
async fn rejections() {
    let hub = H::new();
    let _p = hub.producer("/a", None, 1).unwrap();
    assert_eq!(
        hub.producer("/a", None, 1).err(),
        Some(Rejection::AnotherSender("/a".into()))
    );
    assert_eq!(
        hub.consumer("/a", None, 3, 0).err(),
        Some(Rejection::ReceiverCountMismatch {
            expected: 1,
            got: 3
        })
    );
    let _c = hub.consumer("/b", None, 1, 0).unwrap();
    assert_eq!(
        hub.consumer("/b", None, 1, 0).err(),
        Some(Rejection::TooManyReceivers)
    );
}

#[tokio::test]
async fn busy_path_rejects_until_transfer_ends() {
    let hub = H::new();
    let mut p = hub.producer("/a", None, 1).unwrap();
    let _c = hub.consumer("/a", None, 1, 0).unwrap();
    let m = p.matched().await;
    drop(p);
    assert!(matches!(
        hub.producer("/a", None, 1),
        Err(Rejection::AnotherSender(_))
    ));
    assert!(matches!(
        hub.consumer("/a", None, 1, 0),
        Err(Rejection::TooManyReceivers)
    ));
    drop(m);
    assert!(hub.producer("/a", None, 1).is_ok());
}

/// piping-server-rust bug 1: a waiting sender that leaves must free the path.
#[tokio::test]
async fn waiting_producer_that_leaves_frees_the_path() {
    let hub = H::new();
    let p = hub.producer("/a", None, 1).unwrap();
    drop(p);
    assert_eq!(hub.counts(), Counts::default());
    assert!(hub.producer("/a", None, 1).is_ok());
}

/// piping-server-rust bug 2: a consumer that left must not be matched with a later producer.
#[tokio::test]
async fn waiting_consumer_that_leaves_is_forgotten() {
    let hub = H::new();
    drop(hub.consumer("/a", None, 1, 1).unwrap());
    let mut p = hub.producer("/a", None, 1).unwrap();
    assert!(
        timeout(SHORT, p.matched()).await.is_err(),
        "matched a consumer that left"
    );
    let _c = hub.consumer("/a", None, 1, 2).unwrap();
    assert_eq!(p.matched().await.consumers, vec![2]);
}

#[tokio::test]
async fn n_may_change_once_the_path_is_empty() {
    let hub = H::new();
    drop(hub.consumer("/a", None, 2, 1).unwrap());
    assert!(hub.producer("/a", None, 3).is_ok());
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
    let _c = hub.consumer("/b", None, 1, 0).unwrap();
    timeout(SHORT, r.ready()).await.unwrap();
    let mut r2 = hub.await_peer("/b", None, Await::Reader, None);
    timeout(SHORT, r2.ready()).await.unwrap();

    // a Data API producer releases a consumer's await-writer
    let _p = hub.producer("/c", None, 1).unwrap();
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
    let _c = hub.consumer("/a", None, 1, 0).unwrap();
    let _p = hub.producer("/b", None, 1).unwrap();
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
    let _c = hub.consumer("/a", None, 1, 0).unwrap();
    let mut r = hub.await_peer("/a", Some("x"), Await::Reader, hello("r"));
    assert!(timeout(SHORT, r.ready()).await.is_err());
    let _p = hub.producer("/b", None, 1).unwrap();
    let mut w = hub.await_peer("/b", Some("x"), Await::Writer, None);
    assert!(timeout(SHORT, w.ready()).await.is_err());
    // a channel waiter doesn't keep a Data API producer from matching on the same path
    let mut r2 = hub.await_peer("/b", Some("y"), Await::Reader, None);
    let _c2 = hub.consumer("/b", None, 1, 5).unwrap();
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
    let _p2 = hub.producer("/a", None, 1).unwrap();
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

/// §5.1 `linger`: a channel caller that leaves unreleased leaves its hello to the next caller
/// of the opposite role until its time ends; taken once, or its time over, it is gone. A
/// caller of the same role doesn't take it; without a channel, or once released, nothing
/// lingers.
#[tokio::test]
async fn a_lingering_hello_outlives_its_caller() {
    let hub = H::new();
    let later = || std::time::Instant::now() + Duration::from_secs(60);
    let mut gone = hub.await_peer("/a", Some("x"), Await::Reader, hello("failed"));
    gone.linger_until(later());
    drop(gone);
    assert_eq!(hub.lingering(), 1);
    assert_eq!(
        hub.counts().connect_waiters,
        0,
        "a lingering hello waits for nobody"
    );
    let mut same = hub.await_peer("/a", Some("x"), Await::Reader, None);
    assert!(timeout(SHORT, same.ready()).await.is_err());
    drop(same);
    let mut w = hub.await_peer("/a", Some("x"), Await::Writer, hello("w"));
    assert_eq!(timeout(SHORT, w.ready()).await.unwrap(), hello("failed"));
    drop(w);
    assert_eq!(hub.lingering(), 0);
    assert!(hub.lock().is_empty());
    let mut w = hub.await_peer("/a", Some("x"), Await::Writer, None);
    assert!(timeout(SHORT, w.ready()).await.is_err(), "taken once");
    drop(w);
    // its time over: met by nobody, then swept
    let mut short = hub.await_peer("/a", Some("x"), Await::Reader, hello("late"));
    short.linger_until(std::time::Instant::now() + Duration::from_millis(20));
    drop(short);
    tokio::time::sleep(Duration::from_millis(40)).await;
    let mut w = hub.await_peer("/a", Some("x"), Await::Writer, None);
    assert!(timeout(SHORT, w.ready()).await.is_err());
    drop(w);
    hub.sweep_lingering();
    assert_eq!(hub.lingering(), 0);
    assert!(hub.lock().is_empty());
    // released, or without a channel: nothing lingers
    let mut r = hub.await_peer("/a", Some("x"), Await::Reader, hello("r"));
    r.linger_until(later());
    let _w = hub.await_peer("/a", Some("x"), Await::Writer, None);
    assert_eq!(timeout(SHORT, r.ready()).await.unwrap(), None);
    drop(r);
    let mut plain = hub.await_peer("/a", None, Await::Reader, hello("p"));
    plain.linger_until(later());
    drop(plain);
    assert_eq!(hub.lingering(), 0);
}

/// §5.1 "Data API channels": a Data API producer and consumer with the same channel on the
/// same path meet, and the channel's transfer doesn't make the plain path busy.
#[tokio::test]
async fn data_channel_meets_data_channel() {
    let hub = H::new();
    let mut p = hub.producer("/a", Some("x"), 1).unwrap();
    let _c = hub.consumer("/a", Some("x"), 1, 7).unwrap();
    let m = timeout(SHORT, p.matched()).await.unwrap();
    assert_eq!(m.consumers, vec![7]);
    assert_eq!(hub.counts().active_transfers, 1);
    // the channel is busy, the plain path and another channel are not
    assert_eq!(
        hub.producer("/a", Some("x"), 1).err(),
        Some(Rejection::AnotherSender("/a".into()))
    );
    let mut plain = hub.producer("/a", None, 1).unwrap();
    let mut other = hub.producer("/a", Some("y"), 1).unwrap();
    let _pc = hub.consumer("/a", None, 1, 1).unwrap();
    assert_eq!(
        timeout(SHORT, plain.matched()).await.unwrap().consumers,
        vec![1]
    );
    assert!(timeout(SHORT, other.matched()).await.is_err());
    // nor on another path with the same channel
    let _elsewhere = hub.consumer("/b", Some("y"), 1, 2).unwrap();
    assert!(timeout(SHORT, other.matched()).await.is_err());
    drop(m);
    assert!(hub.producer("/a", Some("x"), 1).is_ok());
}

/// §5.1: a Data API channel never meets a Connect caller with the same channel id, nor one
/// without channel, and the other way round.
#[tokio::test]
async fn data_channel_never_meets_connect_callers() {
    let hub = H::new();
    let _p = hub.producer("/a", Some("x"), 1).unwrap();
    let _c = hub.consumer("/b", Some("x"), 1, 0).unwrap();
    let mut w_chan = hub.await_peer("/a", Some("x"), Await::Writer, None);
    let mut w_plain = hub.await_peer("/a", None, Await::Writer, None);
    let mut r_chan = hub.await_peer("/b", Some("x"), Await::Reader, None);
    let mut r_plain = hub.await_peer("/b", None, Await::Reader, None);
    assert!(timeout(SHORT, w_chan.ready()).await.is_err());
    assert!(timeout(SHORT, w_plain.ready()).await.is_err());
    assert!(timeout(SHORT, r_chan.ready()).await.is_err());
    assert!(timeout(SHORT, r_plain.ready()).await.is_err());
    // and Connect callers waiting first aren't released by Data API channel peers either
    let mut w2 = hub.await_peer("/c", Some("x"), Await::Writer, None);
    let mut w3 = hub.await_peer("/c", None, Await::Writer, None);
    let _p2 = hub.producer("/c", Some("x"), 1).unwrap();
    assert!(timeout(SHORT, w2.ready()).await.is_err());
    assert!(timeout(SHORT, w3.ready()).await.is_err());
    assert_eq!(hub.counts().connect_waiters, 6);
}

/// §5.1: a Data API channel never meets a Data API peer without channel.
#[tokio::test]
async fn data_channel_never_meets_plain_peers() {
    let hub = H::new();
    let mut p = hub.producer("/a", Some("x"), 1).unwrap();
    let _c = hub.consumer("/a", None, 1, 0).unwrap();
    assert!(timeout(SHORT, p.matched()).await.is_err());
    let mut plain = hub.producer("/b", None, 1).unwrap();
    let _c2 = hub.consumer("/b", Some("x"), 1, 0).unwrap();
    assert!(timeout(SHORT, plain.matched()).await.is_err());
    // `n` is agreed within a channel, not across rooms
    assert!(hub.consumer("/a", Some("x"), 1, 1).is_ok());
    assert!(hub.consumer("/a", Some("z"), 3, 1).is_ok());
    let c = hub.counts();
    assert_eq!((c.waiting_producers, c.active_transfers), (1, 1));
}

/// Data API channel guards unregister on drop: nothing is left behind.
#[tokio::test]
async fn data_channel_peers_that_leave_are_forgotten() {
    let hub = H::new();
    drop(hub.producer("/a", Some("x"), 1).unwrap());
    drop(hub.consumer("/a", Some("x"), 2, 0).unwrap());
    assert_eq!(hub.counts(), Counts::default());
    assert!(hub.lock().is_empty(), "an empty slot was left behind");
    // a new pair on the channel meets (with another n: the old slot is gone)
    let mut p = hub.producer("/a", Some("x"), 1).unwrap();
    let c = hub.consumer("/a", Some("x"), 1, 3).unwrap();
    let m = timeout(SHORT, p.matched()).await.unwrap();
    drop((m, p, c));
    assert!(hub.lock().is_empty());
}

#[tokio::test]
async fn a_consumer_that_needs_a_producer_never_waits() {
    // §14.5 rule 2: refused and not registered, with no producer or a running transfer
    let hub = H::new();
    assert_eq!(
        hub.consumer_with("/a", None, 1, 1, true).err(),
        Some(Rejection::NoSender)
    );
    assert_eq!(hub.counts(), Counts::default());
    let mut p = hub.producer("/a", None, 1).unwrap();
    let _c = hub.consumer_with("/a", None, 1, 2, true).unwrap();
    let m = p.matched().await;
    assert_eq!(m.consumers, vec![2]);
    assert_eq!(
        hub.consumer_with("/a", None, 1, 3, true).err(),
        Some(Rejection::NoSender)
    );
    // another room of the path is another place
    let _other = hub.producer("/a", Some("ch"), 1).unwrap();
    assert_eq!(
        hub.consumer_with("/a", None, 1, 4, true).err(),
        Some(Rejection::NoSender)
    );
}
