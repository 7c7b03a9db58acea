//! The payload cipher in WebCrypto (`crypto.subtle` ChaCha20-Poly1305: Chromium ≥ 150, Deno),
//! registered by the package entry after a known-answer test (`js/api.js`, `setWebCrypto`).
//! WebCrypto is asynchronous, so it can't sit behind the synchronous seam of
//! `src/crypto/runtime.rs`; it drives the core's split for an asynchronous cipher instead:
//!
//! - sealing: the encryptor hands its chunks out (`Encryptor::defer_seals`: plaintext, room
//!   for the tag, the nonce decided by the core); each write's chunks go to WebCrypto at once
//!   (one `Promise.all`), up to [`DEPTH`] writes in flight so the page frames the next write
//!   while WebCrypto seals; they are given back (`complete_seals`) in order before the output
//!   goes anywhere; a chunk WebCrypto fails on (or a small one, below [`MIN_LEN`]) is sealed by
//!   the core.
//! - opening: the decryptor says which chunks the next input will open (`plan_opens`); they
//!   are opened here ahead of time, [`BATCH`] per await, and the plaintext of those WebCrypto
//!   authenticated is handed back (`prefetched`) before the input is fed: the core releases it
//!   only for that very chunk. A wrong tag (WebCrypto's `OperationError`) hands nothing back:
//!   the core opens that chunk itself and decides the error, as without WebCrypto.
//!
//! The payload key is imported once per stream, non-extractable. Framing, nonces, order, the
//! last-chunk flag, the tag digest and every check stay in the core: the bytes are the same.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::pin::Pin;
use std::rc::Rc;

use futures::future::{maybe_done, select, Either, MaybeDone};
use futures::stream::{self, StreamExt};
use js_sys::{Array, ArrayBuffer, Function, Object, Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use zeroize::Zeroizing;

use super::chunks::ByteStream;
use super::crypto::{decryptor_for, encryptor_for};
use super::error::into_js;
use crate::client::error::Error;
use crate::crypto::{Decryptor, Encryptor, SealJob};

/// Chunks opened per await: enough that the Promise round trip is shared, few enough to bound
/// the memory held (64 KiB each, twice).
pub(crate) const BATCH: usize = 16;
/// Smaller chunks (age-rt records of a few log lines) are sealed / opened in wasm: a Promise
/// round trip costs more than the cipher.
pub(crate) const MIN_LEN: usize = 2048;
/// Input fed at a time until the payload starts (the header is read in the core).
const HEADER_STEP: usize = 1024;

/// The provider from `js/api.js`: `{ name: 'webcrypto', importKey(bytes) → Promise<CryptoKey>,
/// seal(key, nonce, data) → Promise<ArrayBuffer | null> (ciphertext || tag),
/// open(key, nonce, data) → Promise<ArrayBuffer | null> (plaintext) }`. `seal` and `open` take
/// a copy of `data` before they return (WebCrypto does) and resolve `null` on any failure.
pub(crate) struct Provider {
    this: Object,
    import_key: Function,
    seal: Function,
    open: Function,
}

thread_local! {
    static PROVIDER: RefCell<Option<Rc<Provider>>> = const { RefCell::new(None) };
}

/// The registered provider, if any: streams opened now use WebCrypto.
pub(crate) fn active() -> Option<Rc<Provider>> {
    PROVIDER.with(|p| p.borrow().clone())
}

/// `setWebCrypto(provider | null)`: registers WebCrypto's cipher (see [`Provider`]) for the
/// streams opened from now on, or removes it; called by the package entry. `UNSUPPORTED` if
/// `provider` lacks a member.
#[wasm_bindgen(js_name = setWebCrypto)]
pub fn set_web_crypto(provider: JsValue) -> Result<(), JsValue> {
    if provider.is_null() || provider.is_undefined() {
        PROVIDER.with(|p| *p.borrow_mut() = None);
        return Ok(());
    }
    let member = |name: &str| super::bindings::provider_member(&provider, "setWebCrypto", name);
    let p = Provider {
        import_key: member("importKey")?,
        seal: member("seal")?,
        open: member("open")?,
        this: provider.unchecked_into(),
    };
    PROVIDER.with(|slot| *slot.borrow_mut() = Some(Rc::new(p)));
    Ok(())
}

/// A payload key in WebCrypto, imported once (lazily, at the first chunk); `None` inside when
/// the import failed (the core then does all the work).
pub(crate) struct Key {
    provider: Rc<Provider>,
    key: Option<Option<JsValue>>,
}

impl Key {
    pub(crate) fn new(provider: Rc<Provider>) -> Self {
        Key {
            provider,
            key: None,
        }
    }

    async fn get(
        &mut self,
        bytes: impl FnOnce() -> Option<Zeroizing<[u8; 32]>>,
    ) -> Option<JsValue> {
        if self.key.is_none() {
            let raw = bytes()?;
            self.key = Some(import(&self.provider, &raw).await);
        }
        self.key.clone().flatten()
    }
}

async fn import(p: &Provider, key: &[u8; 32]) -> Option<JsValue> {
    let bytes = Uint8Array::from(&key[..]);
    let promise = p.import_key.call1(&p.this, &bytes);
    // importKey took its copy: wipe ours
    bytes.fill(0, 0, 32);
    let promise = promise.ok()?.dyn_into::<Promise>().ok()?;
    JsFuture::from(promise).await.ok().filter(|k| k.is_object())
}

/// Awaits `promises` together: each result, `None` where it failed.
async fn settle(promises: Array) -> Vec<Option<Uint8Array>> {
    let n = promises.length() as usize;
    let Ok(all) = JsFuture::from(Promise::all(&promises)).await else {
        return vec![None; n];
    };
    let all = Array::from(&all);
    (0..n)
        .map(|i| {
            all.get(i as u32)
                .dyn_into::<ArrayBuffer>()
                .ok()
                .map(|b| Uint8Array::new(&b))
        })
        .collect()
}

/// The sealing side: the encryptor (handing its chunks out), WebCrypto's key, imported once.
/// Each call's chunks go to WebCrypto at once ([`submit`](Self::submit)); their results are
/// taken back in call order ([`complete`](Self::complete)), so several calls can be in flight
/// (the page works on the next one while WebCrypto seals).
pub(crate) struct Sealing {
    enc: Rc<RefCell<Encryptor>>,
    provider: Rc<Provider>,
    key: RefCell<Option<Option<JsValue>>>,
}

/// One call's output and its chunks' seals in flight.
pub(crate) struct InFlight {
    out: Vec<u8>,
    jobs: Vec<SealJob>,
    all: MaybeDone<JsFuture>,
}

impl Sealing {
    pub(crate) fn new(enc: Rc<RefCell<Encryptor>>, provider: Rc<Provider>) -> Self {
        Sealing {
            enc,
            provider,
            key: RefCell::new(None),
        }
    }

    /// Imports the payload key (once; a failed import leaves every chunk to the core).
    pub(crate) async fn ready(&self) {
        if self.key.borrow().is_some() {
            return;
        }
        let raw = self.enc.borrow().payload_key();
        let key = import(&self.provider, &raw).await;
        *self.key.borrow_mut() = Some(key);
    }

    /// Runs `step` on the encryptor (update / flush / finish into a new buffer) and hands the
    /// chunks it made (at least [`MIN_LEN`] bytes) to WebCrypto at once.
    /// `input` is the plaintext length `step` takes (for the output's capacity).
    pub(crate) fn submit(
        &self,
        input: usize,
        step: impl FnOnce(&mut Encryptor, &mut Vec<u8>) -> Result<(), crate::crypto::Error>,
    ) -> Result<InFlight, crate::crypto::Error> {
        let before = self.enc.borrow().seal_jobs().len();
        // one allocation: the chunk(s) held back (age: up to 64 KiB), 20 bytes per chunk
        let mut out = Vec::with_capacity(input + input / 3200 + 65536 + 256);
        step(&mut self.enc.borrow_mut(), &mut out)?;
        let jobs = self.enc.borrow().seal_jobs().split_off(before);
        let promises = Array::new();
        let key = self.key.borrow();
        let p = &self.provider;
        for j in &jobs {
            let promise = key.as_ref().and_then(Option::as_ref).and_then(|k| {
                if j.len < MIN_LEN {
                    return None;
                }
                let nonce = Uint8Array::from(&j.nonce[..]);
                // SAFETY: the view lives only for this call, which allocates nothing in this
                // module's memory (so it can't grow and detach the view); WebCrypto copies the
                // bytes before `seal` returns. `get` checks that the chunk is inside `out`.
                out.get(j.start..j.start + j.len).and_then(|plain| {
                    let view = unsafe { Uint8Array::view(plain) };
                    p.seal.call3(&p.this, k, &nonce, &view).ok()
                })
            });
            promises.push(&promise.unwrap_or(JsValue::NULL));
        }
        Ok(InFlight {
            out,
            jobs,
            all: maybe_done(JsFuture::from(Promise::all(&promises))),
        })
    }

    /// The output of `f` once its seals are back: WebCrypto's ciphertext copied in place, the
    /// chunks it did not seal sealed by the core, all given back to the encryptor. Call it in
    /// the order of [`submit`](Self::submit).
    pub(crate) async fn complete(&self, mut f: InFlight) -> Result<Vec<u8>, crate::crypto::Error> {
        (&mut f.all).await;
        let results = match Pin::new(&mut f.all).take_output() {
            Some(Ok(v)) => Array::from(&v),
            _ => Array::new(),
        };
        let mut sealed = vec![false; f.jobs.len()];
        for (i, (j, done)) in f.jobs.iter().zip(&mut sealed).enumerate() {
            let Ok(r) = results.get(i as u32).dyn_into::<ArrayBuffer>() else {
                continue;
            };
            let r = Uint8Array::new(&r);
            if let Some(dst) = f.out.get_mut(j.start..j.start + j.len + 16) {
                if r.length() as usize == dst.len() {
                    r.copy_to(dst);
                    *done = true;
                }
            }
        }
        self.enc.borrow_mut().complete_seals(&mut f.out, &sealed)?;
        Ok(f.out)
    }
}

/// Feeds `input` to `dec`, the chunks it opens opened ahead of time by WebCrypto, [`BATCH`]
/// per await.
pub(crate) async fn open(
    dec: &RefCell<Decryptor>,
    key: &mut Key,
    mut input: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), crate::crypto::Error> {
    while !input.is_empty() {
        let (in_payload, armored) = {
            let d = dec.borrow();
            (d.in_payload(), d.is_armored() == Some(true))
        };
        if !in_payload {
            // The header, read in small steps so that the payload after it is opened here;
            // armored input (and a finished or failed decryptor) goes to the core at once.
            let take = if armored {
                input.len()
            } else {
                input.len().min(HEADER_STEP)
            };
            dec.borrow_mut().update(&input[..take], out)?;
            input = &input[take..];
            if armored || !dec.borrow().in_payload() {
                continue;
            }
        }
        if input.is_empty() {
            break;
        }
        let (jobs, upto) = dec.borrow().plan_opens(input, BATCH, MIN_LEN);
        if !jobs.is_empty() {
            if let Some(k) = key.get(|| dec.borrow().payload_key()).await {
                let p = &key.provider;
                let promises = Array::new();
                for j in &jobs {
                    let nonce = Uint8Array::from(&j.nonce[..]);
                    // SAFETY: as in `Sealing::submit` (the job's own buffer, not touched meanwhile).
                    let view = unsafe { Uint8Array::view(&j.chunk) };
                    let promise = p.open.call3(&p.this, &k, &nonce, &view).ok();
                    promises.push(&promise.unwrap_or(JsValue::NULL));
                }
                let results = settle(promises).await;
                let mut d = dec.borrow_mut();
                for (j, r) in jobs.into_iter().zip(results) {
                    // WebCrypto authenticated it: the plaintext; otherwise (a wrong tag, a
                    // failure) nothing, and the core opens the chunk itself.
                    if let Some(r) = r.filter(|r| r.length() as usize + 16 == j.chunk.len()) {
                        d.prefetched(j, r.to_vec());
                    }
                }
            }
        }
        dec.borrow_mut().update(&input[..upto], out)?;
        input = &input[upto..];
    }
    Ok(())
}

fn bytes(out: &[u8]) -> Option<Result<Uint8Array, Error>> {
    (!out.is_empty()).then(|| Ok(Uint8Array::from(out)))
}

/// Source chunks in flight at most (their seals overlap the next chunk's framing).
const DEPTH: usize = 4;

struct Encrypting {
    input: ByteStream,
    sealing: Sealing,
    queue: VecDeque<InFlight>,
    ended: bool,
    ready: bool,
}

/// `crypto::encrypt_stream` with WebCrypto: `enc` must hand its chunks out
/// (`Encryptor::defer_seals`). Up to [`DEPTH`] source chunks are in flight; each one's output
/// leaves, in order, as soon as it is sealed (age-rt: a record per write, at once).
pub(crate) fn encrypt_stream(
    input: ByteStream,
    enc: Rc<RefCell<Encryptor>>,
    provider: Rc<Provider>,
) -> Result<ByteStream, Error> {
    let mut header = Vec::new();
    enc.borrow_mut().flush(&mut header)?;
    let head = stream::iter(bytes(&header));
    let state = Encrypting {
        input,
        sealing: Sealing::new(enc, provider),
        queue: VecDeque::new(),
        ended: false,
        ready: false,
    };
    let fail = |e: crate::crypto::Error| Some((Err(e.into()), None));
    Ok(head
        .chain(stream::unfold(Some(state), move |st| async move {
            let mut st = st?;
            if !st.ready {
                st.sealing.ready().await;
                st.ready = true;
            }
            loop {
                // The oldest chunk's output: when all is read, DEPTH are in flight, or its
                // seals came back before the next source chunk.
                let full = st.ended || st.queue.len() >= DEPTH;
                let oldest_done = match st.queue.front_mut() {
                    None if st.ended => return None,
                    None => None,
                    Some(_) if full => Some(None),
                    Some(f) => match select(st.input.next(), &mut f.all).await {
                        // a source chunk first: submitted below
                        Either::Left((item, _)) => Some(Some(item)),
                        Either::Right(_) => Some(None),
                    },
                };
                let item = match oldest_done {
                    Some(None) => {
                        let Some(f) = st.queue.pop_front() else {
                            continue;
                        };
                        match st.sealing.complete(f).await {
                            Err(e) => return fail(e),
                            Ok(out) if out.is_empty() => continue,
                            Ok(out) => return Some((Ok(Uint8Array::from(&out[..])), Some(st))),
                        }
                    }
                    Some(Some(item)) => item,
                    None => st.input.next().await,
                };
                let submitted = match item {
                    Some(Ok(chunk)) => {
                        let data = chunk.to_vec();
                        st.sealing.submit(data.len(), |e, o| {
                            e.update(&data, o)?;
                            e.flush(o)
                        })
                    }
                    Some(Err(e)) => return Some((Err(e), None)),
                    None => {
                        st.ended = true;
                        st.sealing.submit(0, |e, o| e.finish(o))
                    }
                };
                match submitted {
                    Ok(f) => st.queue.push_back(f),
                    Err(e) => return fail(e),
                }
            }
        }))
        .boxed_local())
}

/// `crypto::decrypt_stream` with WebCrypto.
pub(crate) fn decrypt_stream(
    input: ByteStream,
    dec: Rc<RefCell<Decryptor>>,
    provider: Rc<Provider>,
) -> ByteStream {
    let state = (input, Some((dec, Key::new(provider))));
    stream::unfold(state, |(mut input, st)| async move {
        let (d, mut key) = st?;
        let mut out = Vec::new();
        loop {
            match input.next().await {
                Some(Ok(chunk)) => {
                    if let Err(err) = open(&d, &mut key, &chunk.to_vec(), &mut out).await {
                        return Some((Err(err.into()), (input, None)));
                    }
                    if let Some(item) = bytes(&out) {
                        return Some((item, (input, Some((d, key)))));
                    }
                }
                Some(Err(err)) => return Some((Err(err), (input, None))),
                None => {
                    let r = d.borrow_mut().finish(&mut out);
                    return match r {
                        Err(err) => Some((Err(err.into()), (input, None))),
                        Ok(()) => bytes(&out).map(|item| (item, (input, None))),
                    };
                }
            }
        }
    })
    .boxed_local()
}

/// A second call while one awaits.
fn busy() -> JsValue {
    into_js(Error::usage(
        "one update() / finish() at a time: await the previous one",
    ))
}

fn to_js(e: crate::crypto::Error) -> JsValue {
    into_js(Error::from(e))
}

/// Reads `{ passphrase?, recipients?, identities?, format? }`; `UNSUPPORTED` if malformed.
fn parse_options(options: JsValue) -> Result<super::options::Options, JsValue> {
    super::options::Options::from_js(&options).map_err(into_js)
}

/// The encryptor behind `encryptStream` when WebCrypto is registered: like `Encryptor`, but
/// `update` / `finish` return Promises, several of which may be in flight (each call's chunks
/// go to WebCrypto at once; the Promises settle in call order). Await `ready()` first.
#[wasm_bindgen(js_name = WebEncryptor)]
pub struct JsWebEncryptor {
    enc: Rc<RefCell<Encryptor>>,
    sealing: Option<Rc<Sealing>>,
    /// The previous call's Promise: the next one takes its seals back only after it.
    last: RefCell<Option<Promise>>,
}

#[wasm_bindgen(js_class = WebEncryptor)]
impl JsWebEncryptor {
    /// `{ passphrase?, recipients?, format? }`; runs scrypt now for a passphrase. Without a
    /// registered WebCrypto it works as `Encryptor` does.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsWebEncryptor, JsValue> {
        let o = parse_options(options)?;
        let e = encryptor_for(&o).map_err(into_js)?;
        let provider = active();
        let e = if provider.is_some() {
            e.defer_seals()
        } else {
            e
        };
        let enc = Rc::new(RefCell::new(e));
        Ok(JsWebEncryptor {
            sealing: provider.map(|p| Rc::new(Sealing::new(enc.clone(), p))),
            enc,
            last: RefCell::new(None),
        })
    }

    /// Imports the payload key into WebCrypto (before it, chunks are sealed in wasm).
    pub fn ready(&self) -> Promise {
        let sealing = self.sealing.clone();
        future_to_promise(async move {
            if let Some(s) = sealing {
                s.ready().await;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    fn run(
        &self,
        input: usize,
        step: impl FnOnce(&mut Encryptor, &mut Vec<u8>) -> Result<(), crate::crypto::Error>,
    ) -> Result<Promise, JsValue> {
        let Some(sealing) = self.sealing.clone() else {
            let mut out = Vec::new();
            step(&mut self.enc.borrow_mut(), &mut out).map_err(to_js)?;
            let out: JsValue = Uint8Array::from(&out[..]).into();
            return Ok(Promise::resolve(&out));
        };
        let f = sealing.submit(input, step).map_err(to_js)?;
        let prev = self.last.borrow_mut().take();
        let p = future_to_promise(async move {
            if let Some(prev) = prev {
                JsFuture::from(prev).await?;
            }
            let out = sealing.complete(f).await.map_err(to_js)?;
            Ok(Uint8Array::from(&out[..]).into())
        });
        *self.last.borrow_mut() = Some(p.clone());
        Ok(p)
    }

    /// Encrypts `chunk` and flushes (age-rt: one record): a Promise of the ciphertext.
    pub fn update(&self, chunk: &[u8]) -> Result<Promise, JsValue> {
        self.run(chunk.len(), |e, o| {
            e.update(chunk, o)?;
            e.flush(o)
        })
    }

    /// The rest and the final record / chunk: a Promise.
    pub fn finish(&self) -> Result<Promise, JsValue> {
        self.run(0, |e, o| e.finish(o))
    }
}

/// The decryptor behind `decryptStream` when WebCrypto is registered: like `Decryptor`, but
/// `update` returns a Promise (one call at a time).
#[wasm_bindgen(js_name = WebDecryptor)]
pub struct JsWebDecryptor {
    dec: Rc<RefCell<Decryptor>>,
    /// As `JsWebEncryptor`'s.
    key: Option<Rc<RefCell<Option<Key>>>>,
}

#[wasm_bindgen(js_class = WebDecryptor)]
impl JsWebDecryptor {
    /// `{ passphrase?, identities? }`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsWebDecryptor, JsValue> {
        let o = parse_options(options)?;
        let d = decryptor_for(&o).map_err(into_js)?;
        Ok(JsWebDecryptor {
            dec: Rc::new(RefCell::new(d)),
            key: active().map(|p| Rc::new(RefCell::new(Some(Key::new(p))))),
        })
    }

    /// A Promise of the authenticated plaintext ready after `chunk`.
    pub fn update(&self, chunk: Vec<u8>) -> Promise {
        let dec = self.dec.clone();
        let key = self.key.clone();
        future_to_promise(async move {
            let mut out = Vec::new();
            match key {
                Some(slot) => {
                    let taken = slot.borrow_mut().take();
                    let mut k = taken.ok_or_else(busy)?;
                    let r = open(&dec, &mut k, &chunk, &mut out).await;
                    *slot.borrow_mut() = Some(k);
                    r.map_err(to_js)?;
                }
                None => dec.borrow_mut().update(&chunk, &mut out).map_err(to_js)?,
            }
            Ok(Uint8Array::from(&out[..]).into())
        })
    }

    /// The end of input: the last plaintext, or `TRUNCATED` / `DECRYPT_FAILED` (synchronous:
    /// the final chunk is opened in the core).
    pub fn finish(&self) -> Result<Vec<u8>, JsValue> {
        if self.key.as_ref().is_some_and(|k| k.borrow().is_none()) {
            return Err(busy());
        }
        let mut out = Vec::new();
        self.dec.borrow_mut().finish(&mut out).map_err(to_js)?;
        Ok(out)
    }
}

/// `cryptoBackendName()`: whose primitives the streams opened now use: WebCrypto's
/// (`"webcrypto"`, this module), the runtime's (`"node:crypto"`) or this module's
/// (`"wasm"`).
#[wasm_bindgen(js_name = cryptoBackendName)]
pub fn crypto_backend_name() -> String {
    if active().is_some() {
        return "webcrypto".into();
    }
    crate::crypto::crypto_backend().to_string()
}
