//! The X-Wing KEM of the post-quantum recipient (PROTOCOL.md §7.1) from its own wasm module,
//! `httpipe_xwing_bg.wasm` (the `httpipe-xwing` crate; issue #27: ML-KEM-768 and SHA-3 are
//! ~15 KB gzip that a page without post-quantum keys never loads). The JavaScript entry
//! compiles it when a post-quantum key is used and hands it over ([`set_xwing_module_js`]);
//! this instantiates it (no imports, no glue) and registers it with the crypto core
//! ([`crate::crypto::set_xwing_module`]), which calls it for every `mlkem768x25519` key and
//! stanza. Inputs and outputs pass through one buffer of the instance's memory, wiped after
//! each call (`xwing/src/exports.rs` has the layout).

use std::rc::Rc;

use httpipe_xwing::{
    SharedSecret, CIPHERTEXT_LEN, ENCAPSULATION_KEY_LEN, ENCAPSULATION_RANDOM_LEN, SEED_LEN,
};
use js_sys::{Function, Object, Reflect, Uint8Array, WebAssembly};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use zeroize::Zeroizing;

use crate::crypto::XWingModule;

/// Bytes of the buffer every call goes through: the largest input (an encapsulation's key and
/// randomness; `xwing/src/exports.rs`).
const IO_LEN: usize = ENCAPSULATION_KEY_LEN + ENCAPSULATION_RANDOM_LEN;

/// An instance of `httpipe_xwing_bg.wasm`: its memory, the buffer's address and its exports.
struct XWingInstance {
    memory: WebAssembly::Memory,
    io: u32,
    check: Function,
    public_key: Function,
    encapsulate: Function,
    decapsulate: Function,
    wipe: Function,
}

impl XWingInstance {
    fn new(module: &WebAssembly::Module) -> Result<Self, String> {
        let instance = WebAssembly::Instance::new(module, &Object::new())
            .map_err(|e| format!("could not instantiate it: {}", super::error::message_of(&e)))?;
        let exports = instance.exports();
        let export = |name: &str| {
            Reflect::get(&exports, &name.into())
                .ok()
                .filter(|f| !f.is_undefined())
                .ok_or_else(|| format!("it has no export {name}: not httpipe_xwing_bg.wasm"))
        };
        let function = |name: &str| -> Result<Function, String> {
            export(name)?
                .dyn_into()
                .map_err(|_| format!("its {name} is not a function"))
        };
        let memory: WebAssembly::Memory = export("memory")?
            .dyn_into()
            .map_err(|_| "its memory is not a memory".to_string())?;
        let io = function("httpipe_xwing_io")?
            .call0(&JsValue::NULL)
            .ok()
            .and_then(|v| v.as_f64())
            // wasm32 addresses come back as i32: negative above 2 GiB
            .map(|a| a as i64 as u32)
            .ok_or_else(|| "its buffer has no address".to_string())?;
        // the views of a module that is not ours would be short, and copying into one panics
        let memory_len = u64::from(Uint8Array::new(&memory.buffer()).length());
        if u64::from(io) + IO_LEN as u64 > memory_len {
            return Err("its buffer is not inside its memory: not httpipe_xwing_bg.wasm".into());
        }
        Ok(XWingInstance {
            memory,
            io,
            check: function("httpipe_xwing_check")?,
            public_key: function("httpipe_xwing_public_key")?,
            encapsulate: function("httpipe_xwing_encapsulate")?,
            decapsulate: function("httpipe_xwing_decapsulate")?,
            wipe: function("httpipe_xwing_wipe")?,
        })
    }

    /// Writes `inputs` one after another into the buffer, calls `f`, and, when it answered 1,
    /// reads `output` from the buffer; wipes the buffer either way. Both fit in [`IO_LEN`]
    /// bytes, which [`XWingInstance::new`] found room for.
    fn call(&self, f: &Function, inputs: &[&[u8]], output: &mut [u8]) -> bool {
        let mem = Uint8Array::new(&self.memory.buffer());
        let mut at = self.io;
        for part in inputs {
            let end = at + part.len() as u32;
            mem.subarray(at, end).copy_from(part);
            at = end;
        }
        let answered = f.call0(&JsValue::NULL).ok().and_then(|v| v.as_f64()) == Some(1.0);
        // a new view: the old one is detached if the memory grew
        let mem = Uint8Array::new(&self.memory.buffer());
        if answered {
            mem.subarray(self.io, self.io + output.len() as u32)
                .copy_to(output);
        }
        let _ = self.wipe.call0(&JsValue::NULL);
        answered
    }
}

impl XWingModule for XWingInstance {
    fn encapsulation_key_is_valid(&self, ek: &[u8; ENCAPSULATION_KEY_LEN]) -> bool {
        self.call(&self.check, &[ek], &mut [])
    }

    fn encapsulation_key_of(&self, seed: &[u8; SEED_LEN]) -> Option<[u8; ENCAPSULATION_KEY_LEN]> {
        let mut ek = [0u8; ENCAPSULATION_KEY_LEN];
        self.call(&self.public_key, &[seed], &mut ek).then_some(ek)
    }

    fn encapsulate(
        &self,
        ek: &[u8; ENCAPSULATION_KEY_LEN],
        randomness: &[u8; ENCAPSULATION_RANDOM_LEN],
    ) -> Option<([u8; CIPHERTEXT_LEN], SharedSecret)> {
        let mut out = Zeroizing::new([0u8; CIPHERTEXT_LEN + 32]);
        if !self.call(&self.encapsulate, &[ek, randomness], out.as_mut()) {
            return None;
        }
        let mut ct = [0u8; CIPHERTEXT_LEN];
        ct.copy_from_slice(&out[..CIPHERTEXT_LEN]);
        let mut ss = SharedSecret::default();
        ss.copy_from_slice(&out[CIPHERTEXT_LEN..]);
        Some((ct, ss))
    }

    fn decapsulate(
        &self,
        seed: &[u8; SEED_LEN],
        ct: &[u8; CIPHERTEXT_LEN],
    ) -> Option<SharedSecret> {
        let mut ss = SharedSecret::default();
        self.call(&self.decapsulate, &[seed, ct], ss.as_mut())
            .then_some(ss)
    }
}

/// Registers `module` (the compiled `httpipe_xwing_bg.wasm`) as the X-Wing KEM of every
/// post-quantum key and stanza from now on; an error message when it is not that module.
#[wasm_bindgen(js_name = setXWingModule)]
pub fn set_xwing_module_js(module: WebAssembly::Module) -> Result<(), JsValue> {
    let instance = XWingInstance::new(&module).map_err(|e| JsValue::from_str(&e))?;
    crate::crypto::set_xwing_module(Some(Rc::new(instance)));
    Ok(())
}
