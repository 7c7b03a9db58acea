//! scrypt where its memory can be given back (issue #13): age's passphrase stanza needs
//! 128·r·N bytes (256 MiB at log2 N = 18), and a wasm memory never shrinks, so a page that
//! opened one passphrase stream kept those 256 MiB until it closed. Without the runtime's own
//! scrypt (`node:crypto`, [`crate::crypto::RuntimeCrypto`]), the key is derived in a
//! throwaway instance of this same module: instantiated synchronously from the compiled
//! module (no download, no compile: ~1 ms), given the passphrase and salt, dropped after.
//! Its memory goes with it at the runtime's next collection. Same bytes (RustCrypto's scrypt
//! in both instances). Any failure here leaves the work to this instance (`None`).
//!
//! The throwaway instance runs no JavaScript glue and registers nothing, so it derives with
//! RustCrypto itself; its imports are stubs that throw (nothing on this path calls one).

use std::cell::RefCell;

use js_sys::{Function, Object, Reflect, Uint8Array, WebAssembly};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use zeroize::Zeroizing;

thread_local! {
    /// The throwaway instance's input (passphrase then salt) and then output (the key).
    static IO: RefCell<Zeroizing<Vec<u8>>> = RefCell::new(Zeroizing::new(Vec::new()));
}

/// In the throwaway instance: room for `len` input bytes; their address.
#[no_mangle]
pub extern "C" fn httpipe_scrypt_input(len: usize) -> *mut u8 {
    IO.with(|io| {
        let mut io = io.borrow_mut();
        io.clear();
        io.resize(len, 0);
        io.as_mut_ptr()
    })
}

/// In the throwaway instance: scrypt(input[..pass_len], input[pass_len..], N = 2^log2_n,
/// r = 8, p = 1) → the address of the 32-byte key, or 0 (bad parameters).
#[no_mangle]
pub extern "C" fn httpipe_scrypt_run(pass_len: usize, log2_n: u32) -> *const u8 {
    IO.with(|io| {
        let mut io = io.borrow_mut();
        if pass_len > io.len() {
            return std::ptr::null();
        }
        let Ok(log2_n) = u8::try_from(log2_n) else {
            return std::ptr::null();
        };
        let (pass, salt) = io.split_at(pass_len);
        let Ok(key) = crate::crypto::scrypt_here(pass, salt, log2_n) else {
            return std::ptr::null();
        };
        io.clear();
        io.extend_from_slice(key.as_ref());
        io.as_ptr()
    })
}

/// scrypt(passphrase, salt, N = 2^log2_n, r = 8, p = 1) → 32 bytes, derived in a throwaway
/// instance of this module; `None` if that could not be done.
pub fn in_throwaway_instance(
    passphrase: &[u8],
    salt: &[u8],
    log2_n: u8,
) -> Option<Zeroizing<[u8; 32]>> {
    let module: WebAssembly::Module = wasm_bindgen::module().dyn_into().ok()?;
    let stub = Closure::<dyn Fn() -> Result<(), JsValue>>::new(|| {
        Err(JsValue::from_str(
            "httpipe: not available in the scrypt instance",
        ))
    });
    let imports = Object::new();
    for import in WebAssembly::Module::imports(&module).iter() {
        let kind = Reflect::get(&import, &"kind".into()).ok()?;
        if kind.as_string().as_deref() != Some("function") {
            return None;
        }
        let space = Reflect::get(&import, &"module".into()).ok()?;
        let name = Reflect::get(&import, &"name".into()).ok()?;
        let mut ns = Reflect::get(&imports, &space).ok()?;
        if !ns.is_object() {
            ns = Object::new().into();
            Reflect::set(&imports, &space, &ns).ok()?;
        }
        Reflect::set(&ns, &name, stub.as_ref()).ok()?;
    }
    let instance = WebAssembly::Instance::new(&module, &imports).ok()?;
    let exports = instance.exports();
    let export = |name: &str| Reflect::get(&exports, &name.into()).ok();
    let input: Function = export("httpipe_scrypt_input")?.dyn_into().ok()?;
    let run: Function = export("httpipe_scrypt_run")?.dyn_into().ok()?;
    let memory: WebAssembly::Memory = export("memory")?.dyn_into().ok()?;
    // wasm32 addresses come back as i32: negative above 2 GiB
    let address = |v: JsValue| v.as_f64().map(|a| a as i64 as u32);

    let total = u32::try_from(passphrase.len() + salt.len()).ok()?;
    let at = address(input.call1(&JsValue::NULL, &total.into()).ok()?)?;
    let mem = Uint8Array::new(&memory.buffer());
    mem.subarray(at, at + passphrase.len() as u32)
        .copy_from(passphrase);
    mem.subarray(at + passphrase.len() as u32, at + total)
        .copy_from(salt);
    let out = run
        .call2(
            &JsValue::NULL,
            &(passphrase.len() as u32).into(),
            &u32::from(log2_n).into(),
        )
        .ok();
    // the memory grew (its old buffer is detached): a new view
    let mem = Uint8Array::new(&memory.buffer());
    let key = match out.and_then(address) {
        Some(out) if out != 0 && out + 32 <= mem.length() => {
            let mut key = Zeroizing::new([0u8; 32]);
            mem.subarray(out, out + 32).copy_to(key.as_mut());
            Some(key)
        }
        _ => None,
    };
    // the passphrase and key stay nowhere but in memory that is dropped now: wipe it anyway
    mem.fill(0, 0, mem.length());
    key
}
