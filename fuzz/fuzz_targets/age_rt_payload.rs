//! age-rt record reader: raw records after a valid header, and encrypt-mutate-decrypt.
#![no_main]

use httpipe::crypto::Format;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::payload(Format::AgeRt, data));
