//! JavaScript bindings (wasm32 only), shipped as the npm package built by
//! `scripts/build-sdk.sh`: a thin `fetch` adapter over the sans-IO client core
//! (`crate::client`), which makes every protocol decision. The hand-written ESM entry
//! `js/index.js` wraps these exports (source normalisation, `HttpipeError`, lazy init); the
//! contract is `docs/js-api.md`. SDK errors (`crate::client::Error`) become `HttpipeError`s
//! once, at the `#[wasm_bindgen]` boundary ([`error::to_js`]).
//!
//! - [`bindings`]: the global `fetch` / timers through own bindings (no `window`, §10).
//! - [`error`]: `HttpipeError` construction and mapping of JavaScript failures to codes.
//! - [`stop`]: one `AbortController` per operation, linked to the caller's signal and timeout.
//! - [`stall`]: the stall watch's timer and call (§12.4, decided by the core).
//! - [`options`]: the options object.
//! - [`http`]: requests (streaming bodies with `duplex: 'half'`), feature detection (§10).
//! - [`js_streams`]: JavaScript `ReadableStream`s read from Rust, Rust streams exposed as
//!   them (the released stream, an upload's body), with no promise per chunk.
//! - [`body`]: a streaming upload's body and how it is stopped (cut, never ended).
//! - [`chunks`]: byte streams of `Uint8Array`s: validation, progress, replay for fallback.
//! - [`connect`], [`send`], [`receive`]: the operations, each a loop driving the core.
//! - [`code`]: `sendWithCode` / `receiveWithCode` (short codes, §14): the exchange's pipes,
//!   then `send` / `receive` with the derived path and key.
//! - [`receipt`]: delivery receipts (§12): commitments as bytes pass, the consumer's call.
//! - [`crypto`]: age / age-rt encryptors and decryptors for `TransformStream`s.
//! - [`scrypt`]: a passphrase's scrypt in a throwaway instance, its 256 MiB given back.
//! - [`webcrypto`]: the payload cipher in WebCrypto (async), where the page has it.
//! - [`xwing`]: the post-quantum KEM from its own module, loaded when a post-quantum key is used.
//! - [`csv`]: CSV splitting on `csv-core` for `csv.decode` (`js/pipeline/csv.js`; measured against
//!   a JS decoder in `bench/csv.mjs`).

pub mod bindings;
pub mod body;
pub mod chunks;
pub mod code;
pub mod connect;
pub mod crypto;
pub mod csv;
pub mod error;
pub mod http;
pub mod js_streams;
pub mod options;
pub mod pagehide;
pub mod presence;
pub mod receipt;
pub mod receive;
pub mod runtime_crypto;
pub mod scrypt;
pub mod send;
pub mod stall;
pub mod stop;
pub mod webcrypto;
pub mod xwing;

/// The module's allocator: talc, not the wasm target's default dlmalloc (issue #27: smaller
/// in the module; the module is single-threaded, built without `atomics`).
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
