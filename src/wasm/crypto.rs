//! Encryption in the SDK (`PROTOCOL.md` §7–§8) over the crypto core's push API
//! (`crate::crypto::Encryptor` / `Decryptor`): stream stages for `send`/`receive`, and the
//! classes behind `encryptStream`/`decryptStream` (`TransformStream`s built in `js/index.js`).
//!
//! Errors: `WRONG_KEY` (no identity/passphrase opens the header — raised before any plaintext),
//! `DECRYPT_FAILED` (tampered or malformed ciphertext), `TRUNCATED` (no final record/chunk),
//! `UNSUPPORTED` (bad keys or options).

use std::cell::RefCell;
use std::rc::Rc;
use std::str::FromStr;

use futures::stream::{self, StreamExt};
use js_sys::{Array, Function, Object, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::chunks::ByteStream;
use super::error::into_js;
use super::options::Options;
use super::runtime_crypto::JsKey;
use crate::client::error::Error;
use crate::client::keys;
use crate::crypto::{
    generate_hybrid_secret, generate_x25519, Decryptor, Encryptor, Identity, Resealer,
};

fn to_js(e: crate::crypto::Error) -> JsValue {
    into_js(Error::from(e))
}

/// The encryptor for `send`/`encryptStream` options: a passphrase, or `age1...` / `age1pq1...`
/// recipients (one key or a key file's text per entry; not both kinds at once, §7.1);
/// `format` 'age-rt' (default) or 'age'. The rules are the core's (`crate::client::keys`).
pub fn encryptor_for(o: &Options) -> Result<Encryptor, Error> {
    let format = keys::format_of(o.format.as_deref())?;
    keys::encryptor(o.passphrase.as_deref(), o.recipients.as_deref(), format)?
        .ok_or_else(|| Error::usage("encryption needs `passphrase` or `recipients`"))
}

/// The decryptor for `receive`/`decryptStream` options: a passphrase and/or identities (one
/// key or a key file's text per entry).
pub fn decryptor_for(o: &Options) -> Result<Decryptor, Error> {
    let identities = o.identities.as_deref().unwrap_or_default();
    keys::decryptor(o.passphrase.as_deref(), identities)?
        .ok_or_else(|| Error::usage("decryption needs `passphrase` or `identities`"))
}

fn bytes(out: &[u8]) -> Option<Result<Uint8Array, Error>> {
    (!out.is_empty()).then(|| Ok(Uint8Array::from(out)))
}

/// Authenticated plaintext as JavaScript arrays (`crate::crypto::PlainSink`): a chunk the
/// runtime's cipher opened (`openDetached`, which returns its plaintext only once the tag
/// verified) is passed on as the array it made, not copied into wasm memory and out again.
#[derive(Default)]
pub struct JsPlain {
    parts: Vec<Uint8Array>,
    staging: Vec<u8>,
}

impl JsPlain {
    fn stage(&mut self) {
        if !self.staging.is_empty() {
            self.parts.push(Uint8Array::from(&self.staging[..]));
            self.staging.clear();
        }
    }

    /// The plaintext as one `Uint8Array`, `None` if there is none (an empty chunk opened
    /// adds nothing).
    pub fn output(mut self) -> Option<Uint8Array> {
        self.stage();
        match self.parts.len() {
            0 => None,
            1 => self.parts.pop(),
            _ => Some(concat_arrays(&self.parts)),
        }
    }
}

fn concat_arrays(parts: &[Uint8Array]) -> Uint8Array {
    let total: u32 = parts.iter().map(Uint8Array::length).sum();
    let out = Uint8Array::new_with_length(total);
    let mut at = 0;
    for p in parts {
        out.set(p, at);
        at += p.length();
    }
    out
}

impl crate::crypto::PlainSink for JsPlain {
    fn put(&mut self, plaintext: &[u8]) {
        self.staging.extend_from_slice(plaintext);
    }

    fn open(
        &mut self,
        key: &dyn crate::crypto::RuntimeKey,
        nonce: &[u8; 12],
        ct: &[u8],
        tag: &[u8; 16],
    ) -> Option<()> {
        let key = key.as_any().downcast_ref::<JsKey>()?;
        let open = key.open_detached.as_ref()?;
        let nonce = Uint8Array::from(&nonce[..]);
        let tag = Uint8Array::from(&tag[..]);
        // SAFETY: the view is used only during this call, which allocates nothing in this
        // module's memory (so the memory can't grow and detach it); it is only read.
        let view = unsafe { Uint8Array::view(ct) };
        let args = Array::of4(&key.handle, &nonce, &view, &tag);
        let pt = open
            .apply(&key.this, &args)
            .ok()?
            .dyn_into::<Uint8Array>()
            .ok()?;
        if pt.length() as usize != ct.len() {
            return None;
        }
        if pt.length() > 0 {
            self.stage();
            self.parts.push(pt);
        }
        Some(())
    }
}

/// A JavaScript chunk of plaintext and the ciphertext made of it (`crate::crypto::External`):
/// the runtime's cipher (`sealDetached`) reads the chunk where it is and its output goes to
/// the result as it is; the bytes leave in one `Uint8Array` (one copy), never through wasm
/// memory.
pub struct JsChunk<'a> {
    input: &'a Uint8Array,
    /// Output so far, in order; `staging` (framing, tags, chunks sealed in wasm) follows it.
    parts: Vec<Uint8Array>,
    staging: Vec<u8>,
    tag: Option<Uint8Array>,
    /// The runtime's `alloc(n)` (an array not zero-filled first), once a chunk was sealed.
    alloc: Option<(Object, Function)>,
}

impl<'a> JsChunk<'a> {
    pub fn new(input: &'a Uint8Array) -> Self {
        JsChunk {
            input,
            parts: Vec::new(),
            staging: Vec::new(),
            tag: None,
            alloc: None,
        }
    }

    fn stage(&mut self) {
        if !self.staging.is_empty() {
            self.parts.push(Uint8Array::from(&self.staging[..]));
            self.staging.clear();
        }
    }

    /// The output as one `Uint8Array` (empty if none).
    pub fn output(mut self) -> Uint8Array {
        self.stage();
        if self.parts.len() == 1 {
            return self.parts.swap_remove(0);
        }
        let total: u32 = self.parts.iter().map(Uint8Array::length).sum();
        let out = self
            .alloc
            .as_ref()
            .and_then(|(this, f)| f.call1(this, &total.into()).ok())
            .and_then(|a| a.dyn_into::<Uint8Array>().ok())
            .filter(|a| a.length() == total)
            .unwrap_or_else(|| Uint8Array::new_with_length(total));
        let mut at = 0;
        for p in &self.parts {
            out.set(p, at);
            at += p.length();
        }
        out
    }
}

impl JsChunk<'_> {
    /// Seals `input` with the runtime's `sealDetached` into the output; its tag.
    fn seal_js(
        &mut self,
        key: &dyn crate::crypto::RuntimeKey,
        input: &Uint8Array,
        nonce: &[u8; 12],
    ) -> Option<[u8; 16]> {
        let key = key.as_any().downcast_ref::<JsKey>()?;
        let seal = key.seal_detached.as_ref()?;
        let tag = self
            .tag
            .get_or_insert_with(|| Uint8Array::new_with_length(16))
            .clone();
        let args = Array::of4(&key.handle, &Uint8Array::from(&nonce[..]), input, &tag);
        let ct = seal
            .apply(&key.this, &args)
            .ok()?
            .dyn_into::<Uint8Array>()
            .ok()?;
        if ct.length() != input.length() {
            return None;
        }
        let mut t = [0u8; 16];
        tag.copy_to(&mut t);
        if self.alloc.is_none() {
            self.alloc = key.alloc.clone().map(|f| (key.this.clone(), f));
        }
        self.stage();
        self.parts.push(ct);
        self.staging.extend_from_slice(&t);
        Some(t)
    }
}

impl crate::crypto::External for JsChunk<'_> {
    fn len(&self) -> usize {
        self.input.length() as usize
    }

    fn read(&self, range: std::ops::Range<usize>, buf: &mut Vec<u8>) {
        let start = buf.len();
        buf.resize(start + range.len(), 0);
        self.input
            .subarray(range.start as u32, range.end as u32)
            .copy_to(&mut buf[start..]);
    }

    fn put(&mut self, bytes: &[u8]) {
        self.staging.extend_from_slice(bytes);
    }

    fn seal(
        &mut self,
        key: &dyn crate::crypto::RuntimeKey,
        range: std::ops::Range<usize>,
        nonce: &[u8; 12],
    ) -> Option<[u8; 16]> {
        let input = self.input.subarray(range.start as u32, range.end as u32);
        self.seal_js(key, &input, nonce)
    }

    fn seal_held(
        &mut self,
        key: &dyn crate::crypto::RuntimeKey,
        plaintext: &[u8],
        nonce: &[u8; 12],
    ) -> Option<[u8; 16]> {
        // SAFETY: the view is read only during `seal_js`'s call into the runtime, before
        // which nothing is allocated in this module's memory (so it can't grow and detach
        // the view); `seal_js` allocates there (staging) only after that call.
        let view = unsafe { Uint8Array::view(plaintext) };
        self.seal_js(key, &view, nonce)
    }
}

/// Encrypts a byte stream: the header leaves at once (so the request starts before the first
/// write: undici sends nothing until the body has bytes), then each source chunk is flushed as
/// it comes (age-rt: one record per write, so log lines leave at once), the final record at
/// the end. A passphrase's header leaves in two parts: its first lines (with the salt) at once,
/// the rest after this side's scrypt, which runs once they had a moment to reach the consumer,
/// so that its scrypt runs at the same time (`Encryptor::intro`).
pub fn encrypt_stream(input: ByteStream, enc: Rc<RefCell<Encryptor>>) -> Result<ByteStream, Error> {
    let mut header = Vec::new();
    enc.borrow_mut().intro(&mut header)?;
    let partial = (header.len() as u64) < enc.borrow().header_len();
    let head = stream::iter(bytes(&header)).chain(
        stream::once(async move {
            if partial {
                // a macrotask: the HTTP client writes the intro out first
                super::bindings::sleep(0.0).await;
            }
            None
        })
        .filter_map(futures::future::ready),
    );
    let state = (input, Some(enc));
    Ok(head
        .chain(stream::unfold(state, |(mut input, enc)| async move {
            let e = enc?;
            let mut out = Vec::new();
            loop {
                match input.next().await {
                    Some(Ok(chunk)) => {
                        let mut ext = JsChunk::new(&chunk);
                        let r = e.borrow_mut().update_external(&mut ext, true);
                        if let Err(err) = r {
                            return Some((Err(err.into()), (input, None)));
                        }
                        let out = ext.output();
                        if out.length() > 0 {
                            return Some((Ok(out), (input, Some(e))));
                        }
                    }
                    Some(Err(err)) => return Some((Err(err), (input, None))),
                    None => {
                        let r = e
                            .borrow_mut()
                            .finish(&mut out)
                            .map_err(Error::from)
                            .map(|_| Uint8Array::from(&out[..]));
                        return Some((r, (input, None)));
                    }
                }
            }
        }))
        .boxed_local())
}

/// The chunks sealed again from a reopened source after a break (§12.3): `input` is the
/// plaintext [`Resealer::plaintext`] names; a chunk leaves only once its tag matched the one
/// sent before.
pub fn reseal_stream(input: ByteStream, resealer: Resealer) -> ByteStream {
    stream::unfold((input, Some(resealer)), |(mut input, r)| async move {
        let mut r = r?;
        let mut out = Vec::new();
        loop {
            match input.next().await {
                Some(Ok(chunk)) => {
                    if let Err(err) = r.push(&chunk.to_vec(), &mut out) {
                        return Some((Err(err.into()), (input, None)));
                    }
                    if let Some(item) = bytes(&out) {
                        return Some((item, (input, Some(r))));
                    }
                }
                Some(Err(err)) => return Some((Err(err), (input, None))),
                None => {
                    return match r.finish(&mut out) {
                        Err(err) => Some((Err(err.into()), (input, None))),
                        Ok(()) => bytes(&out).map(|item| (item, (input, None))),
                    };
                }
            }
        }
    })
    .boxed_local()
}

/// Decrypts `input`; `dec` stays shared so the receipt can read its tag digest and receipt
/// key (§12.2).
pub fn decrypt_stream(input: ByteStream, dec: Rc<RefCell<Decryptor>>) -> ByteStream {
    stream::unfold((input, Some(dec)), |(mut input, dec)| async move {
        let d = dec?;
        loop {
            match input.next().await {
                Some(Ok(chunk)) => {
                    let mut out = JsPlain::default();
                    let r = d.borrow_mut().update_to(&chunk.to_vec(), &mut out);
                    if let Err(err) = r {
                        return Some((Err(err.into()), (input, None)));
                    }
                    if let Some(item) = out.output() {
                        return Some((Ok(item), (input, Some(d))));
                    }
                }
                Some(Err(err)) => return Some((Err(err), (input, None))),
                None => {
                    let mut out = JsPlain::default();
                    let r = d.borrow_mut().finish_to(&mut out);
                    return match r {
                        Err(err) => Some((Err(err.into()), (input, None))),
                        Ok(()) => out.output().map(|item| (Ok(item), (input, None))),
                    };
                }
            }
        }
    })
    .boxed_local()
}

#[wasm_bindgen(js_name = Encryptor)]
pub struct JsEncryptor(Encryptor);

/// Reads `{ passphrase?, recipients?, identities?, format? }`; `UNSUPPORTED` if malformed.
fn parse_options(options: JsValue) -> Result<Options, JsValue> {
    Options::from_js(&options).map_err(into_js)
}

#[wasm_bindgen(js_class = Encryptor)]
impl JsEncryptor {
    /// `{ passphrase?, recipients?, format? }`; a passphrase's scrypt (~1 s) runs at the first
    /// `update`/`finish`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsEncryptor, JsValue> {
        let o = parse_options(options)?;
        encryptor_for(&o).map(JsEncryptor).map_err(into_js)
    }

    /// Encrypts `chunk` and flushes (age-rt: one record); returns the ciphertext ready now.
    pub fn update(&mut self, chunk: &Uint8Array) -> Result<Uint8Array, JsValue> {
        let mut ext = JsChunk::new(chunk);
        self.0.update_external(&mut ext, true).map_err(to_js)?;
        Ok(ext.output())
    }

    /// The rest and the final record/chunk.
    pub fn finish(&mut self) -> Result<Vec<u8>, JsValue> {
        let mut out = Vec::new();
        self.0.finish(&mut out).map_err(to_js)?;
        Ok(out)
    }
}

/// A decryptor for `decryptStream`: auto-detects age / age-rt (and armor).
#[wasm_bindgen(js_name = Decryptor)]
pub struct JsDecryptor(Decryptor);

#[wasm_bindgen(js_class = Decryptor)]
impl JsDecryptor {
    /// `{ passphrase?, identities? }`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsDecryptor, JsValue> {
        let o = parse_options(options)?;
        decryptor_for(&o).map(JsDecryptor).map_err(into_js)
    }

    /// Authenticated plaintext ready after `chunk`.
    pub fn update(&mut self, chunk: &[u8]) -> Result<Uint8Array, JsValue> {
        let mut out = JsPlain::default();
        self.0.update_to(chunk, &mut out).map_err(to_js)?;
        Ok(out
            .output()
            .unwrap_or_else(|| Uint8Array::new_with_length(0)))
    }

    /// The end of input: the last plaintext, or `TRUNCATED` / `DECRYPT_FAILED`.
    pub fn finish(&mut self) -> Result<Uint8Array, JsValue> {
        let mut out = JsPlain::default();
        self.0.finish_to(&mut out).map_err(to_js)?;
        Ok(out
            .output()
            .unwrap_or_else(|| Uint8Array::new_with_length(0)))
    }
}

/// A new X25519 identity, `AGE-SECRET-KEY-1...` (like `age-keygen`).
#[wasm_bindgen(js_name = generateIdentity)]
pub fn generate_identity() -> Result<String, JsValue> {
    let (secret, _recipient) = generate_x25519().map_err(to_js)?;
    Ok(secret.to_string())
}

/// A new hybrid post-quantum identity, `AGE-SECRET-KEY-PQ-1...` (ML-KEM-768 + X25519, like
/// `age-keygen -pq`; PROTOCOL.md §7.1).
#[wasm_bindgen(js_name = generateHybridIdentity)]
pub fn generate_hybrid_identity() -> Result<String, JsValue> {
    Ok(generate_hybrid_secret().map_err(to_js)?.to_string())
}

/// The recipient of an identity: `age1...` for `AGE-SECRET-KEY-1...`, `age1pq1...` for
/// `AGE-SECRET-KEY-PQ-1...`.
#[wasm_bindgen(js_name = identityToRecipient)]
pub fn identity_to_recipient(identity: &str) -> Result<String, JsValue> {
    let id = Identity::from_str(identity).map_err(to_js)?;
    id.to_recipient().map(|r| r.to_string()).ok_or_else(|| {
        into_js(Error::usage(
            "not a key identity (AGE-SECRET-KEY-1... or AGE-SECRET-KEY-PQ-1...)",
        ))
    })
}
