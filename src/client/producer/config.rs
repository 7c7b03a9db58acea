//! What a producer is given (`SendConfig`: the options in the core's terms, its metadata and
//! its side of §12) and what a successful send reports.

use super::*;

/// What the producer tells the consumer about the payload (§3.3, §11.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    pub content_type: Option<String>,
    pub filename: Option<String>,
    /// Plaintext bytes, when known.
    pub size: Option<u64>,
}

/// Everything a send needs to know up front.
#[derive(Debug, Clone)]
pub struct SendConfig {
    pub relay: RelayBase,
    pub path: String,
    pub token: Option<String>,
    /// Wait on the Connect API first (§5).
    pub rendezvous: bool,
    /// Seconds to wait for the consumer.
    pub timeout_s: Option<f64>,
    pub upload: UploadMode,
    /// Segmented part size in bytes (see [`super::parts::part_size`]).
    pub part_size: usize,
    pub meta: Metadata,
    /// The payload is encrypted: no metadata in clear (§11.1).
    pub encrypted: bool,
    /// Whether the runtime can send a streaming request body (feature detection, §10).
    pub runtime_streams: RuntimeStreams,
    /// What cuts a streaming upload in this runtime (§10, §11.2 step 5).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // read by the wasm driver's
    pub upload_cut: UploadCut,
    /// Delivery receipts (§12): the transfer's id and whether to wait for a receipt. `None`:
    /// no hello at all (the rendezvous is plain §5).
    pub receipt: Option<ReceiptConfig>,
    /// Resume after a break (§12.3): seconds to keep trying; `None`: no resume. Needs a
    /// transfer id ([`SendConfig::receipt`]).
    pub resume_s: Option<f64>,
}

/// The producer's side of §12.
#[derive(Debug, Clone)]
pub struct ReceiptConfig {
    /// The transfer id ([`receipt::transfer_id`]).
    pub transfer: String,
    /// Wait for a receipt (when the consumer sends them).
    pub wait: bool,
    /// Seconds to wait for it after the relay's success.
    pub timeout_s: f64,
    /// Accept a consumer's receipt for the ciphertext of an encrypted transfer (a consumer
    /// without keys: unauthenticated, §12.2); otherwise only an authenticated one delivers.
    pub ciphertext: bool,
}

/// Headers of the producer's request: token, `Content-Type`, `Content-Disposition` (§3.3) and
/// the declared plaintext size as `X-Piping: httpipe-size=N` (a streaming upload has no
/// `Content-Length`; the relay forwards `X-Piping`). When encrypting, the relay sees no
/// metadata: `Content-Type: application/octet-stream`, and neither the filename nor the size
/// (they would travel in clear text, §11.1).
pub fn producer_headers(
    token: Option<&str>,
    meta: &Metadata,
    encrypted: bool,
) -> Vec<(&'static str, String)> {
    let mut h = auth_headers(token);
    if encrypted {
        h.push((CONTENT_TYPE, OCTET_STREAM.into()));
        return h;
    }
    if let Some(ct) = &meta.content_type {
        h.push((CONTENT_TYPE, ct.clone()));
    }
    if let Some(name) = &meta.filename {
        h.push((CONTENT_DISPOSITION, disposition::encode(name)));
    }
    if let Some(size) = meta.size {
        h.push((X_PIPING, size_value(size)));
    }
    h
}

/// What a successful send reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendReport {
    pub transport: Transport,
    /// The relay's final status line, `[STATE:TRANSFER_SUCCESSFUL]`.
    pub relay_state: String,
    /// The consumer's verified receipt (§12); `None` when the consumer doesn't send them.
    pub receipt: Option<ReceiptReport>,
    /// Breaks the transfer resumed after (§12.3).
    pub resumes: u32,
}
