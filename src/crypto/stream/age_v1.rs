//! age v1 STREAM (C2SP age §"Payload"): 64 KiB chunks, the last one flagged and never empty
//! unless the whole plaintext is empty.

use super::{
    nonce, planned_upto, span, External, OpenJob, PlainSink, Sealer, CHUNK_CT, CHUNK_SIZE, TAG_LEN,
};
use crate::crypto::Error;

/// Encrypting side. Holds back up to one full chunk: a chunk is sealed as non-final only once
/// a byte after it is known to exist, so an exact multiple of 64 KiB ends with a full final
/// chunk.
pub(crate) struct Writer {
    sealer: Sealer,
    pending: Vec<u8>,
}

impl Writer {
    pub(crate) fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    pub(crate) fn sealer_mut(&mut self) -> &mut Sealer {
        &mut self.sealer
    }

    pub(crate) fn new(sealer: Sealer) -> Self {
        Writer {
            sealer,
            pending: Vec::with_capacity(CHUNK_SIZE),
        }
    }

    pub(crate) fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        while !input.is_empty() {
            if self.pending.len() == CHUNK_SIZE {
                self.sealer.seal(&self.pending, false, out)?;
                self.pending.clear();
            }
            // Whole chunks straight from the input, as long as more input follows them.
            while self.pending.is_empty() && input.len() > CHUNK_SIZE {
                let (chunk, rest) = input.split_at(CHUNK_SIZE);
                self.sealer.seal(chunk, false, out)?;
                input = rest;
            }
            let take = input.len().min(CHUNK_SIZE - self.pending.len());
            self.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
        }
        Ok(())
    }

    /// [`push`](Self::push) of `ext`'s input with the output in `ext`: whole chunks straight
    /// from the input; only the chunk held back is copied here.
    pub(crate) fn push_external(&mut self, ext: &mut dyn External) -> Result<(), Error> {
        let len = ext.len();
        let mut at = 0;
        while at < len {
            if self.pending.len() == CHUNK_SIZE {
                self.sealer.seal_held(ext, &self.pending, false)?;
                self.pending.clear();
            }
            while self.pending.is_empty() && len - at > CHUNK_SIZE {
                self.sealer.seal_external(ext, at..at + CHUNK_SIZE, false)?;
                at += CHUNK_SIZE;
            }
            let take = (len - at).min(CHUNK_SIZE - self.pending.len());
            ext.read(at..at + take, &mut self.pending);
            at += take;
        }
        Ok(())
    }

    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.sealer.seal(&self.pending, true, out)?;
        self.pending.clear();
        Ok(())
    }
}

/// Decrypting side. Buffers at most one chunk plus one byte: a full chunk is known to be
/// non-final only when a byte follows it.
pub(crate) struct Reader {
    sealer: Sealer,
    buf: Vec<u8>,
    done: bool,
    lenient_empty_final: bool,
}

impl Reader {
    pub(crate) fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    pub(crate) fn new(sealer: Sealer, lenient_empty_final: bool) -> Self {
        Reader {
            sealer,
            buf: Vec::with_capacity(CHUNK_CT + 1),
            done: false,
            lenient_empty_final,
        }
    }

    /// Drops the input held for a chunk not opened yet; returns its length (resume, §12.3).
    /// Input bytes held back (a partial record or chunk).
    pub(crate) fn held(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn drop_held(&mut self) -> usize {
        std::mem::take(&mut self.buf).len()
    }

    pub(crate) fn push(&mut self, mut input: &[u8], out: &mut dyn PlainSink) -> Result<(), Error> {
        while !input.is_empty() {
            if self.done {
                return Err(Error::TrailingData);
            }
            if self.buf.is_empty() && input.len() > CHUNK_CT {
                // Fast path: a whole chunk and a byte after it are in the input already.
                open_full_with_more(&mut self.sealer, &mut self.done, &input[..CHUNK_CT], out)?;
                input = &input[CHUNK_CT..];
                continue;
            }
            let take = input.len().min(CHUNK_CT + 1 - self.buf.len());
            self.buf.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.buf.len() == CHUNK_CT + 1 {
                open_full_with_more(&mut self.sealer, &mut self.done, &self.buf[..CHUNK_CT], out)?;
                self.buf.drain(..CHUNK_CT);
            }
        }
        Ok(())
    }

    pub(crate) fn finish(&mut self, out: &mut dyn PlainSink) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        let index = self.sealer.counter();
        if self.buf.len() < TAG_LEN {
            // Includes "no chunk at all after the nonce": the stream was cut.
            return Err(Error::Truncated);
        }
        let mut plain = Vec::new();
        if self.sealer.open(&self.buf, true, &mut plain)? {
            if plain.is_empty() && index > 0 && !self.lenient_empty_final {
                return Err(Error::PayloadMalformed(
                    "final chunk is empty after a full chunk (written by zebrastream-io's age \
                     mode; enable lenient_empty_final_chunk to accept it)"
                        .into(),
                ));
            }
            out.put(&plain);
            self.buf.clear();
            self.done = true;
            return Ok(());
        }
        if self.buf.len() == CHUNK_CT && self.sealer.open(&self.buf, false, out)? {
            // An authentic non-final chunk is released (as `age` does); the end is missing.
            return Err(Error::Truncated);
        }
        Err(Error::ChunkAuth { index })
    }
}

/// Opens a full-size chunk known to be followed by at least one more byte.
fn open_full_with_more(
    sealer: &mut Sealer,
    done: &mut bool,
    chunk: &[u8],
    out: &mut dyn PlainSink,
) -> Result<(), Error> {
    let index = sealer.counter();
    if sealer.open(chunk, false, out)? {
        return Ok(());
    }
    if sealer.open(chunk, true, out)? {
        // An authentic final chunk is released; what follows it is the error.
        *done = true;
        return Err(Error::TrailingData);
    }
    Err(Error::ChunkAuth { index })
}

/// The split for an asynchronous cipher (used by the wasm adapter only).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl Reader {
    pub(crate) fn sealer_mut(&mut self) -> &mut Sealer {
        &mut self.sealer
    }

    /// The full chunks in the held bytes and `input` (at most `max`, not prefetched yet), to
    /// open ahead of time as non-final; and how much of `input` they cover.
    pub(crate) fn plan(&self, input: &[u8], max: usize) -> (Vec<OpenJob>, usize) {
        let mut jobs = Vec::new();
        if self.done {
            return (jobs, input.len());
        }
        let total = self.buf.len() + input.len();
        let mut end = 0;
        let mut counter = self.sealer.counter();
        while end + CHUNK_CT <= total && jobs.len() < max {
            if !self.sealer.is_prefetched(counter) {
                jobs.push(OpenJob {
                    counter,
                    nonce: nonce(counter, false),
                    chunk: span(&self.buf, input, end, end + CHUNK_CT),
                });
            }
            end += CHUNK_CT;
            let Some(next) = counter.checked_add(1) else {
                break;
            };
            counter = next;
        }
        let upto = planned_upto(jobs.len() >= max, end, self.buf.len(), input.len());
        (jobs, upto)
    }
}
