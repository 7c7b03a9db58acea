//! Encryption in the native driver (`PROTOCOL.md` §7–§8, the mirror of `wasm/crypto.rs`):
//! the producer's encoder over the crypto core's push API — plaintext in, wire chunks out
//! (plain bytes pass through, coalesced), and what the receipt check needs of it (§12.2).

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use super::body::{send_all, Item};
use super::{blocking, lock};
use crate::client::error::Error;
use crate::client::ledger::Ledger;
use crate::crypto::{Encryptor, Format};

/// Plain writes smaller than this are coalesced (until a flush or this many bytes).
const COALESCE: usize = 64 * 1024;

/// What the producer's receipt check needs of the encoder once it finished (§12.2): the
/// plaintext it counted, and the encryptor (its tag digest and receipt key).
#[derive(Default)]
pub(crate) struct Sealed {
    pub(crate) plain: Ledger,
    pub(crate) enc: Option<Encryptor>,
}

/// Plaintext in, wire chunks out: passes plain bytes through (coalescing small writes), or
/// encrypts. Output goes to `out` as whole chunks.
pub(crate) struct Encoder {
    enc: Option<Encryptor>,
    /// The plaintext counted (§12.2).
    counted: Ledger,
    /// Filled at the end.
    sealed: Arc<Mutex<Sealed>>,
    /// Plain: small writes waiting for a flush.
    plain: BytesMut,
    /// Encrypted: ciphertext not yet handed out.
    wire: Vec<u8>,
    /// Plaintext written since the last flush.
    unflushed: bool,
}

impl Encoder {
    pub(crate) fn new(enc: Option<Encryptor>, sealed: Arc<Mutex<Sealed>>) -> Self {
        Encoder {
            enc,
            counted: Ledger::default(),
            sealed,
            plain: BytesMut::new(),
            wire: Vec::new(),
            unflushed: false,
        }
    }

    fn take_wire(&mut self, out: &mut Vec<Bytes>) {
        if !self.wire.is_empty() {
            out.push(Bytes::from(std::mem::take(&mut self.wire)));
        }
    }

    /// The start: an encrypted stream's header goes out at once (the consumer learns a wrong
    /// key before any plaintext, and the relay sees the producer). A passphrase's header goes
    /// in two parts: its first lines (with the salt) into `tx` at once, the rest after this
    /// side's scrypt, which runs on the blocking pool meanwhile, so that the consumer's scrypt
    /// runs at the same time instead of after it (`Encryptor::intro`; the same bytes).
    pub(crate) async fn start(
        &mut self,
        tx: &mpsc::Sender<Item>,
        out: &mut Vec<Bytes>,
    ) -> Result<(), Error> {
        let Some(enc) = &mut self.enc else {
            return Ok(());
        };
        enc.intro(&mut self.wire)?;
        if self.wire.len() as u64 >= enc.header_len() {
            // no scrypt to wait for: the whole header is out
            enc.flush(&mut self.wire)?;
            self.take_wire(out);
            return Ok(());
        }
        self.take_wire(out);
        if send_all(tx, out).await.is_err() {
            return Ok(()); // nobody reads the upload any more: the pump notices
        }
        let Some(mut enc) = self.enc.take() else {
            return Ok(());
        };
        let (enc, wire, r) = blocking(move || {
            let mut wire = Vec::new();
            let r = enc.flush(&mut wire);
            (enc, wire, r)
        })
        .await?;
        self.enc = Some(enc);
        r?;
        self.wire = wire;
        self.take_wire(out);
        Ok(())
    }

    /// Plaintext `data`; with `flush`, everything written so far goes out (as
    /// [`flush`](Self::flush)), without copying plain bytes.
    pub(crate) fn data(
        &mut self,
        data: Bytes,
        flush: bool,
        out: &mut Vec<Bytes>,
    ) -> Result<(), Error> {
        if !data.is_empty() {
            self.unflushed = true;
            self.counted.add(&data);
        }
        match &mut self.enc {
            None => {
                if flush || data.len() >= COALESCE {
                    if !self.plain.is_empty() {
                        out.push(self.plain.split().freeze());
                    }
                    if !data.is_empty() {
                        out.push(data);
                    }
                    self.unflushed = false;
                } else {
                    self.plain.extend_from_slice(&data);
                    if self.plain.len() >= COALESCE {
                        out.push(self.plain.split().freeze());
                    }
                }
                Ok(())
            }
            Some(enc) => {
                if !data.is_empty() {
                    if self.wire.capacity() - self.wire.len() < data.len() {
                        self.wire.reserve(data.len() + data.len() / 64 + 64);
                    }
                    enc.update(&data, &mut self.wire)?;
                }
                if flush {
                    return self.flush(out);
                }
                if self.wire.len() >= COALESCE {
                    self.take_wire(out);
                }
                Ok(())
            }
        }
    }

    /// True if written plaintext may still wait in here.
    pub(crate) fn pending(&self) -> bool {
        self.unflushed
    }

    /// What was written goes out now (age-rt: one record; age v1 can't emit a partial chunk).
    pub(crate) fn flush(&mut self, out: &mut Vec<Bytes>) -> Result<(), Error> {
        self.unflushed = false;
        match &mut self.enc {
            None => {
                if !self.plain.is_empty() {
                    out.push(self.plain.split().freeze());
                }
            }
            Some(enc) => {
                if enc.format() == Format::AgeRt {
                    enc.flush(&mut self.wire)?;
                }
                self.take_wire(out);
            }
        }
        Ok(())
    }

    /// The end: the rest and (encrypted) the final chunk / record. The encryptor then goes
    /// to the receipt check ([`Sealed`]).
    pub(crate) fn finish(&mut self, out: &mut Vec<Bytes>) -> Result<(), Error> {
        self.flush(out)?;
        if let Some(enc) = &mut self.enc {
            enc.finish(&mut self.wire)?;
            self.take_wire(out);
        }
        let mut sealed = lock(&self.sealed);
        sealed.plain = std::mem::take(&mut self.counted);
        sealed.enc = self.enc.take();
        Ok(())
    }
}
