//! wasm-bindgen-test unit tests of the SDK bindings that need a JavaScript runtime (Node, via
//! `wasm-bindgen-test-runner`):
//! `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner cargo test -p httpipe --target wasm32-unknown-unknown --test wasm_bindings`
#![cfg(target_arch = "wasm32")]

use httpipe::client::ErrorCode;
use httpipe::client::PartCutter;
use std::cell::Cell;
use std::rc::Rc;

use futures::StreamExt;
use httpipe::wasm::chunks::{concat, to_js, View};
use httpipe::wasm::crypto::{JsDecryptor, JsEncryptor};
use httpipe::wasm::error::{code_of, has_code, js_error, message_of};
use httpipe::wasm::http::streaming_uploads_supported;
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn errors_carry_codes_and_causes() {
    let cause = js_sys::Error::new("socket hang up");
    let e = js_error(ErrorCode::Truncated, "cut", Some(&cause.clone().into()));
    assert!(has_code(&e));
    assert_eq!(code_of(&e).as_deref(), Some("TRUNCATED"));
    assert_eq!(message_of(&e), "cut: socket hang up");
    assert!(!has_code(&cause.into()));
    assert!(!has_code(&JsValue::from_str("x")));
}

#[wasm_bindgen_test]
fn node_streams_request_bodies() {
    // Node (undici) reads `duplex` and adds no Content-Type: streaming uploads are supported.
    assert!(streaming_uploads_supported());
}

#[wasm_bindgen_test]
fn parts_of_js_views_concatenate_back() {
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut cutter = PartCutter::new(70_000);
    for piece in data.chunks(30_001) {
        cutter.push(View(Uint8Array::from(piece)));
    }
    let mut parts = Vec::new();
    while let Some(p) = cutter.pop_full() {
        parts.push(p);
    }
    parts.extend(cutter.finish());
    let sizes: Vec<u32> = parts.iter().map(|p| concat(p).length()).collect();
    assert_eq!(sizes, vec![65_536, 70_000, 64_464]);
    let joined: Vec<u8> = parts.iter().flat_map(|p| concat(p).to_vec()).collect();
    assert_eq!(joined, data);
}

fn options(pairs: &[(&str, &str)]) -> JsValue {
    let o = Object::new();
    for (k, v) in pairs {
        Reflect::set(&o, &(*k).into(), &(*v).into()).unwrap();
    }
    o.into()
}

/// `b` as a `Uint8Array` (what `JsEncryptor::update` takes).
fn bytes(b: &[u8]) -> js_sys::Uint8Array {
    js_sys::Uint8Array::from(b)
}

#[wasm_bindgen_test]
fn encryptor_and_decryptor_round_trip_and_wrong_key() {
    let id = httpipe::wasm::crypto::generate_identity().unwrap();
    let rcpt = httpipe::wasm::crypto::identity_to_recipient(&id).unwrap();
    let o = Object::new();
    Reflect::set(
        &o,
        &"recipients".into(),
        &js_sys::Array::of1(&rcpt.clone().into()),
    )
    .unwrap();
    let mut enc = JsEncryptor::new(o.into()).unwrap();
    let mut wire = enc.update(&bytes(b"hello ")).unwrap().to_vec();
    wire.extend(enc.update(&bytes(b"world")).unwrap().to_vec());
    wire.extend(enc.finish().unwrap());

    let ids = Object::new();
    Reflect::set(&ids, &"identities".into(), &js_sys::Array::of1(&id.into())).unwrap();
    let mut dec = JsDecryptor::new(ids.into()).unwrap();
    let mut plain = dec.update(&wire).unwrap().to_vec();
    plain.extend(dec.finish().unwrap().to_vec());
    assert_eq!(plain, b"hello world");

    let mut wrong = JsDecryptor::new(options(&[("passphrase", "nope")])).unwrap();
    let err = wrong.update(&wire).unwrap_err();
    // X25519 file, passphrase given: no identity matches.
    assert_eq!(code_of(&err).as_deref(), Some("WRONG_KEY"));
}

/// The post-quantum KEM is a second module (src/wasm/xwing.rs) that the JavaScript entry hands
/// over when a post-quantum key is used; the round trips with it are the JS tests' (Node, Deno,
/// workerd, Chromium, Firefox: tests/js/). Without it: a new identity (32 random bytes), and a
/// clear UNSUPPORTED naming the module for everything that needs the KEM.
#[wasm_bindgen_test]
fn hybrid_keys_without_the_post_quantum_module() {
    let id = httpipe::wasm::crypto::generate_hybrid_identity().unwrap();
    assert!(
        id.starts_with("AGE-SECRET-KEY-PQ-1") && id.len() == 77,
        "{id}"
    );
    let not_loaded = |err: &wasm_bindgen::JsValue| {
        assert_eq!(code_of(err).as_deref(), Some("UNSUPPORTED"));
        let message = message_of(err);
        assert!(
            message.contains("httpipe_xwing_bg.wasm) is not loaded"),
            "{message}"
        );
    };
    not_loaded(&httpipe::wasm::crypto::identity_to_recipient(&id).unwrap_err());
    let spec = include_str!("vectors/age-keys/hybrid_spec_example.txt");
    let recipient = spec.lines().find(|l| l.starts_with("age1pq1")).unwrap();
    let o = Object::new();
    Reflect::set(
        &o,
        &"recipients".into(),
        &js_sys::Array::of1(&recipient.into()),
    )
    .unwrap();
    not_loaded(&JsEncryptor::new(o.into()).err().unwrap());
    let o = Object::new();
    Reflect::set(&o, &"identities".into(), &js_sys::Array::of1(&id.into())).unwrap();
    not_loaded(&JsDecryptor::new(o.into()).err().unwrap());
}

/// `reader.method()` on a JavaScript object, awaited when it returns a promise.
async fn call(reader: &JsValue, method: &str) -> Result<JsValue, JsValue> {
    let f: js_sys::Function = Reflect::get(reader, &method.into()).unwrap().into();
    let out = f.call0(reader)?;
    match out.dyn_into::<js_sys::Promise>() {
        Ok(p) => wasm_bindgen_futures::JsFuture::from(p).await,
        Err(v) => Ok(v),
    }
}

/// A few turns of the microtask queue (the pump runs in them).
async fn settle() {
    for _ in 0..5 {
        let _ =
            wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL)).await;
    }
}

/// Sets its flag when dropped.
struct DropFlag(Rc<Cell<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// The released stream (`chunks::to_js`, issue #27's pump): nothing is taken from the Rust
/// stream before a reader asks, chunks come in order, then the end.
#[wasm_bindgen_test]
async fn released_stream_takes_chunks_only_as_read() {
    let taken = Rc::new(Cell::new(0));
    let t = taken.clone();
    let chunks = futures::stream::iter([b"ab".as_slice(), b"cde".as_slice()])
        .map(move |c| {
            t.set(t.get() + 1);
            Ok(Uint8Array::from(c))
        })
        .boxed_local();
    let stream = to_js(chunks).unwrap();
    let reader = call(&stream, "getReader").await.unwrap();
    settle().await;
    assert_eq!(taken.get(), 0, "nothing taken before a read");
    let (mut got, mut reads) = (Vec::new(), 0);
    loop {
        let r = call(&reader, "read").await.unwrap();
        if Reflect::get(&r, &"done".into()).unwrap().is_truthy() {
            break;
        }
        reads += 1;
        got.extend(Uint8Array::from(Reflect::get(&r, &"value".into()).unwrap()).to_vec());
        settle().await;
        assert_eq!(taken.get(), reads, "one chunk taken per read");
    }
    assert_eq!(got, b"abcde");
}

/// A failed Rust stream errors the JavaScript stream with the error's code; a cancel drops a
/// Rust stream that is still waiting for its next chunk at once (the consumer's `cancelled`
/// receipt goes out with that drop, not with a next chunk that may never come).
#[wasm_bindgen_test]
async fn released_stream_fails_with_codes_and_cancel_drops_a_waiting_stream() {
    let failing = futures::stream::iter([
        Ok(Uint8Array::from(b"x".as_slice())),
        Err(httpipe::client::Error::new(ErrorCode::Truncated, "cut")),
    ])
    .boxed_local();
    let reader = call(&to_js(failing).unwrap(), "getReader").await.unwrap();
    assert!(call(&reader, "read").await.is_ok());
    let e = call(&reader, "read").await.unwrap_err();
    assert_eq!(code_of(&e).as_deref(), Some("TRUNCATED"));

    let dropped = Rc::new(Cell::new(false));
    let guard = DropFlag(dropped.clone());
    let waiting = futures::stream::pending::<Result<Uint8Array, httpipe::client::Error>>()
        .map(move |c| {
            let _ = &guard;
            c
        })
        .boxed_local();
    let reader = call(&to_js(waiting).unwrap(), "getReader").await.unwrap();
    let read: js_sys::Function = Reflect::get(&reader, &"read".into()).unwrap().into();
    let pending = read.call0(&reader).unwrap(); // a read the stream can't answer
    settle().await;
    assert!(!dropped.get());
    let cancel: js_sys::Function = Reflect::get(&reader, &"cancel".into()).unwrap().into();
    cancel.call0(&reader).unwrap();
    assert!(dropped.get(), "the cancel dropped the waiting Rust stream");
    let done = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(pending)).await;
    assert!(Reflect::get(&done.unwrap(), &"done".into())
        .unwrap()
        .is_truthy());
}
