//! age-rt v0.2 records (PROTOCOL.md §8): `u32 BE length L` || L bytes of sealed chunk,
//! 16 <= L <= 65552. Every flush emits one record; the writer ends with an empty final record.

use super::{Sealer, CHUNK_CT, CHUNK_SIZE, TAG_LEN};
use crate::crypto::Error;

const LEN_PREFIX: usize = 4;

/// Encrypting side: buffers up to 64 KiB of plaintext until a flush.
pub(crate) struct Writer {
    sealer: Sealer,
    pending: Vec<u8>,
}

impl Writer {
    pub(crate) fn new(sealer: Sealer) -> Self {
        Writer {
            sealer,
            pending: Vec::new(),
        }
    }

    fn record(&mut self, plaintext: &[u8], last: bool, out: &mut Vec<u8>) -> Result<(), Error> {
        let len = (plaintext.len() + TAG_LEN) as u32;
        out.extend_from_slice(&len.to_be_bytes());
        self.sealer.seal(plaintext, last, out)
    }

    pub(crate) fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        while !input.is_empty() {
            if self.pending.is_empty() && input.len() >= CHUNK_SIZE {
                let (chunk, rest) = input.split_at(CHUNK_SIZE);
                self.record(chunk, false, out)?;
                input = rest;
                continue;
            }
            let take = input.len().min(CHUNK_SIZE - self.pending.len());
            self.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.pending.len() == CHUNK_SIZE {
                let chunk = std::mem::take(&mut self.pending);
                self.record(&chunk, false, out)?;
                self.pending = chunk;
                self.pending.clear();
            }
        }
        Ok(())
    }

    /// Emits buffered plaintext as one record now (nothing if nothing is buffered).
    pub(crate) fn flush(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        if !self.pending.is_empty() {
            let chunk = std::mem::take(&mut self.pending);
            self.record(&chunk, false, out)?;
            self.pending = chunk;
            self.pending.clear();
        }
        Ok(())
    }

    /// Flushes, then writes the empty final record.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.flush(out)?;
        self.record(&[], true, out)
    }
}

/// Decrypting side: buffers at most one record.
pub(crate) struct Reader {
    sealer: Sealer,
    buf: Vec<u8>,
    done: bool,
}

impl Reader {
    pub(crate) fn new(sealer: Sealer) -> Self {
        Reader {
            sealer,
            buf: Vec::new(),
            done: false,
        }
    }

    pub(crate) fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        while !input.is_empty() {
            if self.done {
                return Err(Error::TrailingData);
            }
            let want = match self.record_len()? {
                None => LEN_PREFIX,
                Some(len) => LEN_PREFIX + len,
            };
            let take = input.len().min(want - self.buf.len());
            self.buf.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.buf.len() == LEN_PREFIX {
                self.record_len()?; // reject a bad length as soon as it is known
            } else if self.buf.len() == want {
                self.open_record(out)?;
            }
        }
        Ok(())
    }

    /// The length of the buffered record once its prefix is complete, validated.
    fn record_len(&self) -> Result<Option<usize>, Error> {
        let Some(prefix) = self.buf.get(..LEN_PREFIX) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
        if !(TAG_LEN..=CHUNK_CT).contains(&len) {
            return Err(Error::PayloadMalformed(format!(
                "record {} has length {len}, outside {TAG_LEN}..={CHUNK_CT}",
                self.sealer.counter()
            )));
        }
        Ok(Some(len))
    }

    fn open_record(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        let index = self.sealer.counter();
        let record = &self.buf[LEN_PREFIX..];
        if self.sealer.open(record, false, out)? {
            self.buf.clear();
            return Ok(());
        }
        if self.sealer.open(record, true, out)? {
            self.buf.clear();
            self.done = true;
            return Ok(());
        }
        Err(Error::ChunkAuth { index })
    }

    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        if self.done {
            Ok(())
        } else {
            Err(Error::Truncated)
        }
    }
}
