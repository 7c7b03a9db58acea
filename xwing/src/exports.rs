//! The wasm module's interface (wasm32 only): four functions over one buffer in its memory,
//! called by the main module's `crate::wasm::xwing` (src/wasm/xwing.rs) after it instantiated
//! this one with no imports. The caller writes the inputs at [`httpipe_xwing_io`]'s address,
//! calls, reads the outputs from the same place, then calls [`httpipe_xwing_wipe`] (secrets
//! pass through the buffer). Each function returns 1, or 0 when there is no answer (an invalid
//! key, a low-order share): then the buffer holds no output.
//!
//! | function | input at the buffer | output at the buffer |
//! |---|---|---|
//! | `httpipe_xwing_check` | ek (1216) | — |
//! | `httpipe_xwing_public_key` | seed (32) | ek (1216) |
//! | `httpipe_xwing_encapsulate` | ek (1216) ‖ randomness (64) | ct (1120) ‖ ss (32) |
//! | `httpipe_xwing_decapsulate` | seed (32) ‖ ct (1120) | ss (32) |

use std::cell::UnsafeCell;

use crate::{CIPHERTEXT_LEN, ENCAPSULATION_KEY_LEN, ENCAPSULATION_RANDOM_LEN, SEED_LEN};

/// Bytes of the buffer: the largest input or output (an encapsulation's).
const IO_LEN: usize = ENCAPSULATION_KEY_LEN + ENCAPSULATION_RANDOM_LEN;

struct Io(UnsafeCell<[u8; IO_LEN]>);
// ok: wasm32 without threads: one caller at a time, and no function here re-enters another
unsafe impl Sync for Io {}
static IO: Io = Io(UnsafeCell::new([0; IO_LEN]));

/// The buffer, for one call (none is re-entered: wasm32 without threads).
fn io() -> &'static mut [u8; IO_LEN] {
    // ok: see `Io`'s Sync: the only reference while an export runs
    unsafe { &mut *IO.0.get() }
}

fn array<const N: usize>(bytes: &[u8]) -> &[u8; N] {
    // ok: every caller passes a sub-slice of exactly N bytes of the buffer
    bytes[..N].try_into().unwrap_or_else(|_| unreachable!())
}

/// The buffer's address (`IO_LEN` bytes).
#[no_mangle]
pub extern "C" fn httpipe_xwing_io() -> *mut u8 {
    io().as_mut_ptr()
}

/// Zeroes the buffer.
#[no_mangle]
pub extern "C" fn httpipe_xwing_wipe() {
    io().fill(0);
}

/// 1 if the buffer starts with a valid encapsulation key.
#[no_mangle]
pub extern "C" fn httpipe_xwing_check() -> u32 {
    u32::from(crate::encapsulation_key_is_valid(array(io())))
}

/// The seed's encapsulation key over the seed.
#[no_mangle]
pub extern "C" fn httpipe_xwing_public_key() -> u32 {
    let buf = io();
    let ek = crate::encapsulation_key_of(array::<SEED_LEN>(buf));
    buf.fill(0);
    buf[..ENCAPSULATION_KEY_LEN].copy_from_slice(&ek);
    1
}

/// ek ‖ randomness → ct ‖ ss.
#[no_mangle]
pub extern "C" fn httpipe_xwing_encapsulate() -> u32 {
    let buf = io();
    let (ek, rest) = buf.split_at(ENCAPSULATION_KEY_LEN);
    let answer = crate::encapsulate(array(ek), array(rest));
    buf.fill(0);
    let Some((ct, ss)) = answer else { return 0 };
    buf[..CIPHERTEXT_LEN].copy_from_slice(&ct);
    buf[CIPHERTEXT_LEN..CIPHERTEXT_LEN + 32].copy_from_slice(ss.as_ref());
    1
}

/// seed ‖ ct → ss.
#[no_mangle]
pub extern "C" fn httpipe_xwing_decapsulate() -> u32 {
    let buf = io();
    let (seed, rest) = buf.split_at(SEED_LEN);
    let answer = crate::decapsulate(array(seed), array(rest));
    buf.fill(0);
    let Some(ss) = answer else { return 0 };
    buf[..32].copy_from_slice(ss.as_ref());
    1
}
