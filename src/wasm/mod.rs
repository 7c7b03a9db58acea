//! JavaScript bindings (wasm32 only).
