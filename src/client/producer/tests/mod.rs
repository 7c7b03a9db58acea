use super::*;
use crate::client::error::Cause;
use crate::client::request::{LastWords, NoHeaders};

mod channel;
mod receipts;
mod resume;
mod segmented;
mod streaming;

const OK_LOG: &str = "[INFO] Start sending to 1 receiver(s)!\n[STATE:TRANSFER_SUCCESSFUL]\n";

fn cfg(upload: UploadMode, runtime_streams: bool, rendezvous: bool) -> SendConfig {
    SendConfig {
        relay: RelayBase::parse("http://h:1").unwrap(),
        path: "/p".into(),
        token: Some("tok".into()),
        rendezvous,
        timeout_s: None,
        upload,
        part_size: 4,
        meta: Metadata {
            content_type: Some("text/plain".into()),
            filename: None,
            size: Some(10),
        },
        encrypted: false,
        runtime_streams: if runtime_streams {
            RuntimeStreams::Yes
        } else {
            RuntimeStreams::No
        },
        upload_cut: UploadCut::BodyError,
        receipt: None,
        resume_s: None,
    }
}

fn with_receipt(mut c: SendConfig) -> SendConfig {
    c.receipt = Some(ReceiptConfig {
        transfer: "TID".into(),
        wait: true,
        timeout_s: 5.0,
        ciphertext: false,
    });
    c
}

/// A streaming producer with receipts and `resume_s`, after a rendezvous answered with
/// `hello`, whose consumer left when it had sent `high` bytes and held `low..high` (§12.3).
fn consumer_left(
    mem: &mut OriginMemory,
    hello: &[(&str, &str)],
    resume_s: f64,
    low: u64,
    high: u64,
) -> Producer<Vec<u8>> {
    let (mut p, _) = streaming_after(mem, hello, resume_s);
    p.observe(0.0, low, high);
    p.on_stream_log(b"[ERROR:RECEIVER_PREMATURE_DISCONNECT]\n");
    p
}

/// A producer uploading by `upload` with receipts and `resume_s`, whose rendezvous was
/// answered with `hello`.
fn met_after(
    mem: &mut OriginMemory,
    upload: UploadMode,
    hello: &[(&str, &str)],
    resume_s: f64,
) -> Producer<Vec<u8>> {
    let mut c = with_receipt(cfg(upload, true, true));
    c.resume_s = Some(resume_s);
    let mut p = Producer::<Vec<u8>>::new(c).unwrap();
    let Step::Rendezvous(_) = p.poll(mem) else {
        panic!()
    };
    p.on_response(200, &hello.to_vec(), "http://h:1/p\n");
    p
}

/// A streaming producer with receipts and `resume_s`, whose rendezvous was answered with
/// `hello`: the producer and its upload's request.
fn streaming_after(
    mem: &mut OriginMemory,
    hello: &[(&str, &str)],
    resume_s: f64,
) -> (Producer<Vec<u8>>, Request) {
    let mut p = met_after(mem, UploadMode::Stream, hello, resume_s);
    let Step::Stream(up) = p.poll(mem) else {
        panic!()
    };
    (p, up)
}

/// A segmented upload's part 0 (8 bytes) answered 200: the request of part 1.
fn segmented_to_part_one(p: &mut Producer<Vec<u8>>, mem: &mut OriginMemory) -> Request {
    let Step::NeedSource = p.poll(mem) else {
        panic!()
    };
    p.on_chunk(b"01234567".to_vec());
    let Step::Part(_) = p.poll(mem) else { panic!() };
    p.on_response(200, &id_header(), "");
    let Step::Part(req) = p.poll(mem) else {
        panic!()
    };
    req
}

/// Rendezvous (the consumer's hello `peer`), then a streaming upload the relay confirms.
fn streamed_to_success(p: &mut Producer<Vec<u8>>, mem: &mut OriginMemory, peer: Option<&str>) {
    let Step::Rendezvous(r) = p.poll(mem) else {
        panic!()
    };
    // `plain` from a producer that does not encrypt (§12.1)
    let hello = |v: &str| {
        r.headers
            .contains(&(crate::protocol::headers::HELLO, v.into()))
    };
    let base = "httpipe=1; transfer=TID; presence; receipt; attest";
    assert!(hello(base) || hello(&format!("{base}; plain")));
    let h: Vec<(&str, &str)> = peer.map(|v| vec![(PEER_HELLO, v)]).unwrap_or_default();
    p.on_response(200, &h, "http://h:1/p\n");
    let Step::Stream(_) = p.poll(mem) else {
        panic!()
    };
    p.on_stream_log(OK_LOG.as_bytes());
    p.on_stream_end(None, StopReason::None);
}

fn net() -> Failure {
    Failure::network(Cause {
        name: "TypeError".into(),
        message: "fetch failed".into(),
    })
}

fn id_header() -> Vec<(&'static str, &'static str)> {
    vec![("x-httpipe-upload", "UP")]
}

/// Drives a segmented upload of `data` (in chunks of 3) answering every part with 200;
/// returns the part URLs and bodies sent.
fn drive_segmented(
    p: &mut Producer<Vec<u8>>,
    mem: &mut OriginMemory,
    data: &[u8],
) -> (Vec<(String, Vec<u8>)>, Step) {
    let mut source = data.chunks(3).map(<[u8]>::to_vec);
    let mut sent = Vec::new();
    loop {
        match p.poll(mem) {
            Step::NeedSource => match source.next() {
                Some(c) => p.on_chunk(c),
                None => p.on_source_end(),
            },
            Step::Part(req) => {
                let body: Vec<u8> = p.part_body().concat();
                let last = req.url.contains("final=1");
                sent.push((req.url, body));
                let log = if last { OK_LOG } else { "" };
                p.on_response(200, &id_header(), log);
            }
            other => return (sent, other),
        }
    }
}
