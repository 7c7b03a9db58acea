//! Arbitrary bytes into the decryptor: format/armor detection, header and stanza parsing,
//! recipient unwrapping. First byte: feeding step.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&step, rest)) = data.split_first() else { return };
    let _ = common::decrypt(rest, 1 + step as usize * 7);
});
