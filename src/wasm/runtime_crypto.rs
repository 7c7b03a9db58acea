//! The runtime's own ChaCha20-Poly1305 and scrypt (`node:crypto` in Node, Deno and Workers),
//! as the package entry registers them (`setRuntimeCrypto`, `js/api.js`): the crypto core's
//! `RuntimeCrypto` / `RuntimeKey` over JavaScript functions. Where one of them throws, that
//! piece of work is done in wasm (`src/crypto/runtime.rs` decides); a JavaScript-only edge,
//! as `webcrypto.rs` (the browser's asynchronous cipher) is.

use std::rc::Rc;

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use zeroize::Zeroizing;

/// The runtime's own primitives as the package entry found them (`js/api.js`,
/// `cryptoBackend`): `{ name, key(Uint8Array) → handle, seal(handle, nonce, buf) → tag,
/// open(handle, nonce, buf, tag), scrypt(passphrase, salt, log2N) → Uint8Array(32),
/// sealDetached?(handle, nonce, input, tag) → ciphertext, openDetached?(handle, nonce, ct, tag)
/// → plaintext, alloc?(n) → Uint8Array }`. `seal`
/// encrypts `buf` (a view of this module's memory) in place and returns the 16-byte tag;
/// `sealDetached` encrypts a JavaScript chunk into a new array and writes the tag into `tag`
/// (`JsChunk`: no copies through wasm memory), into an array from `alloc` (one not zero-filled
/// first: every byte of it is written); `openDetached` returns a chunk's plaintext in a new
/// array once its tag verified (throws otherwise) (`JsPlain`);
/// `open` decrypts it in place once the tag verified, and throws otherwise (the chunk is then
/// opened here, which gives the verdict). Any of them may throw: that piece of work is then
/// done here (`src/crypto/runtime.rs`).
struct JsRuntime {
    name: &'static str,
    this: Object,
    key: Function,
    seal: Function,
    open: Function,
    scrypt: Function,
    seal_detached: Option<Function>,
    open_detached: Option<Function>,
    alloc: Option<Function>,
}

/// A key the runtime imported, with the primitives that use it (the seams of `super::crypto`
/// read its detached ones).
pub(super) struct JsKey {
    pub(super) this: Object,
    pub(super) handle: JsValue,
    seal: Function,
    open: Function,
    pub(super) seal_detached: Option<Function>,
    pub(super) open_detached: Option<Function>,
    pub(super) alloc: Option<Function>,
}

impl crate::crypto::RuntimeCrypto for JsRuntime {
    fn aead_key(&self, key: &[u8; 32]) -> Option<Rc<dyn crate::crypto::RuntimeKey>> {
        let bytes = Uint8Array::from(&key[..]);
        let handle = self.key.call1(&self.this, &bytes).ok();
        bytes.fill(0, 0, 32);
        Some(Rc::new(JsKey {
            this: self.this.clone(),
            handle: handle?,
            seal: self.seal.clone(),
            open: self.open.clone(),
            seal_detached: self.seal_detached.clone(),
            open_detached: self.open_detached.clone(),
            alloc: self.alloc.clone(),
        }))
    }

    fn scrypt(&self, passphrase: &[u8], salt: &[u8], log2_n: u8) -> Option<Zeroizing<[u8; 32]>> {
        let pass = Uint8Array::from(passphrase);
        let salt = Uint8Array::from(salt);
        let out = self
            .scrypt
            .call3(&self.this, &pass, &salt, &JsValue::from(log2_n))
            .ok();
        pass.fill(0, 0, pass.length());
        let out = out?.dyn_into::<Uint8Array>().ok()?;
        if out.length() != 32 {
            return None;
        }
        let mut key = Zeroizing::new([0u8; 32]);
        out.copy_to(key.as_mut());
        out.fill(0, 0, 32);
        Some(key)
    }

    fn name(&self) -> &'static str {
        self.name
    }
}

impl crate::crypto::RuntimeKey for JsKey {
    fn seal(&self, nonce: &[u8; 12], buf: &mut [u8]) -> Option<[u8; 16]> {
        let nonce = Uint8Array::from(&nonce[..]);
        // SAFETY: the view is used only during this call, which allocates nothing in this
        // module's memory (so the memory can't grow and detach it).
        let view = unsafe { Uint8Array::view_mut_raw(buf.as_mut_ptr(), buf.len()) };
        let tag = self
            .seal
            .call3(&self.this, &self.handle, &nonce, &view)
            .ok()?
            .dyn_into::<Uint8Array>()
            .ok()?;
        let mut out = [0u8; 16];
        if tag.length() != 16 {
            return None;
        }
        tag.copy_to(&mut out);
        Some(out)
    }

    fn open(&self, nonce: &[u8; 12], buf: &mut [u8], tag: &[u8; 16]) -> Option<bool> {
        let nonce = Uint8Array::from(&nonce[..]);
        let tag = Uint8Array::from(&tag[..]);
        // SAFETY: as in `seal`.
        let view = unsafe { Uint8Array::view_mut_raw(buf.as_mut_ptr(), buf.len()) };
        let args = Array::of4(&self.handle, &nonce, &view, &tag);
        self.open.apply(&self.this, &args).ok().map(|_| true)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `setRuntimeCrypto(provider | null)`: registers the runtime's primitives (see `JsRuntime`)
/// for the streams opened from now on, or removes them; called by the package entry.
/// `UNSUPPORTED` if `provider` lacks a member.
#[wasm_bindgen(js_name = setRuntimeCrypto)]
pub fn set_runtime_crypto(provider: JsValue) -> Result<(), JsValue> {
    // A passphrase's scrypt without the runtime's: in a throwaway instance (its memory given
    // back), never in this one's. Registered here, by the package entry's first call, so the
    // throwaway instance (which runs no entry) derives by itself.
    crate::crypto::set_scrypt_elsewhere(Some(super::scrypt::in_throwaway_instance));
    if provider.is_null() || provider.is_undefined() {
        crate::crypto::set_runtime_crypto(None);
        return Ok(());
    }
    let member = |name: &str| super::bindings::provider_member(&provider, "setRuntimeCrypto", name);
    let name = match Reflect::get(&provider, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .as_deref()
    {
        Some("node:crypto") => "node:crypto",
        _ => "runtime",
    };
    let runtime = JsRuntime {
        name,
        key: member("key")?,
        seal: member("seal")?,
        open: member("open")?,
        scrypt: member("scrypt")?,
        seal_detached: member("sealDetached").ok(),
        open_detached: member("openDetached").ok(),
        alloc: member("alloc").ok(),
        this: provider.unchecked_into(),
    };
    crate::crypto::set_runtime_crypto(Some(Rc::new(runtime)));
    Ok(())
}
