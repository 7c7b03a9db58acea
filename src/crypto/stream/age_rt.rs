//! age-rt v0.2 records (PROTOCOL.md §8): `u32 BE length L` || L bytes of sealed chunk,
//! 16 <= L <= 65552. Every flush emits one record; the writer ends with an empty final record.

use super::{
    nonce, planned_upto, span, External, OpenJob, PlainSink, Sealer, CHUNK_CT, CHUNK_SIZE, TAG_LEN,
};
use crate::crypto::Error;

/// Bytes of a record's length prefix.
pub(crate) const LEN_PREFIX: usize = 4;

/// Encrypting side: buffers up to 64 KiB of plaintext until a flush.
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
            pending: Vec::new(),
        }
    }

    fn record(&mut self, plaintext: &[u8], last: bool, out: &mut Vec<u8>) -> Result<(), Error> {
        seal_record(&mut self.sealer, plaintext, last, out)
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

    /// [`push`](Self::push) of `ext`'s input, then [`flush`](Self::flush) if `flush`, with
    /// the output in `ext`: records straight from the input when nothing is buffered.
    pub(crate) fn push_external(
        &mut self,
        ext: &mut dyn External,
        flush: bool,
    ) -> Result<(), Error> {
        let len = ext.len();
        if !self.pending.is_empty() {
            let mut input = Vec::new();
            ext.read(0..len, &mut input);
            let mut out = Vec::new();
            self.push(&input, &mut out)?;
            if flush {
                self.flush(&mut out)?;
            }
            ext.put(&out);
            return Ok(());
        }
        let mut at = 0;
        while len - at >= CHUNK_SIZE || (flush && at < len) {
            let end = len.min(at + CHUNK_SIZE);
            ext.put(&((end - at + TAG_LEN) as u32).to_be_bytes());
            self.sealer.seal_external(ext, at..end, false)?;
            at = end;
        }
        ext.read(at..len, &mut self.pending);
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

/// Appends `plaintext` sealed as the next record (length prefix || ciphertext || tag) to `out`.
pub(crate) fn seal_record(
    sealer: &mut Sealer,
    plaintext: &[u8],
    last: bool,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let len = (plaintext.len() + TAG_LEN) as u32;
    out.extend_from_slice(&len.to_be_bytes());
    sealer.seal(plaintext, last, out)
}

/// Decrypting side: buffers at most one record.
pub(crate) struct Reader {
    sealer: Sealer,
    buf: Vec<u8>,
    done: bool,
}

impl Reader {
    pub(crate) fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    pub(crate) fn new(sealer: Sealer) -> Self {
        Reader {
            sealer,
            buf: Vec::new(),
            done: false,
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
            if self.buf.is_empty() && input.len() >= LEN_PREFIX {
                // Fast path: the whole record is in the input already.
                let len = record_len(&input[..LEN_PREFIX], self.sealer.counter())?;
                if let Some(record) = input.get(LEN_PREFIX..LEN_PREFIX + len) {
                    open_record(&mut self.sealer, &mut self.done, record, out)?;
                    input = &input[LEN_PREFIX + len..];
                    continue;
                }
            }
            let want = match self.buf.get(..LEN_PREFIX) {
                None => LEN_PREFIX,
                Some(prefix) => LEN_PREFIX + record_len(prefix, self.sealer.counter())?,
            };
            let take = input.len().min(want - self.buf.len());
            self.buf.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.buf.len() == LEN_PREFIX {
                // reject a bad length as soon as it is known
                record_len(&self.buf, self.sealer.counter())?;
            } else if self.buf.len() == want {
                open_record(
                    &mut self.sealer,
                    &mut self.done,
                    &self.buf[LEN_PREFIX..],
                    out,
                )?;
                self.buf.clear();
            }
        }
        Ok(())
    }

    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        if self.done {
            Ok(())
        } else {
            Err(Error::Truncated)
        }
    }
}

/// Validates a record's length prefix: 16..=65552 bytes (0..=64 KiB of plaintext + tag).
fn record_len(prefix: &[u8], index: u64) -> Result<usize, Error> {
    let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
    if !(TAG_LEN..=CHUNK_CT).contains(&len) {
        return Err(Error::PayloadMalformed(format!(
            "record {index} has length {len}, outside {TAG_LEN}..={CHUNK_CT}"
        )));
    }
    Ok(len)
}

/// Opens one record: non-final, else final (then `done`), else a tag failure. An empty record
/// is tried as final first (PROTOCOL.md §8): writers end with one, so the stream's last record
/// takes one open, not a failed one before it (which a runtime's cipher may log: BoringSSL's
/// `BAD_DECRYPT` in workerd). Either order accepts the same records.
fn open_record(
    sealer: &mut Sealer,
    done: &mut bool,
    record: &[u8],
    out: &mut dyn PlainSink,
) -> Result<(), Error> {
    let index = sealer.counter();
    let empty = record.len() == TAG_LEN;
    if sealer.open(record, empty, out)? {
        *done = empty;
        return Ok(());
    }
    if sealer.open(record, !empty, out)? {
        *done = !empty;
        return Ok(());
    }
    Err(Error::ChunkAuth { index })
}

/// The split for an asynchronous cipher (used by the wasm adapter only).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl Reader {
    pub(crate) fn sealer_mut(&mut self) -> &mut Sealer {
        &mut self.sealer
    }

    /// The whole records in the held bytes and `input` with at least `min_len` bytes of
    /// plaintext (at most `max`, not prefetched yet), to open ahead of time as non-final; and
    /// how much of `input` they cover. Stops at a bad length: `push` reports it.
    pub(crate) fn plan(&self, input: &[u8], max: usize, min_len: usize) -> (Vec<OpenJob>, usize) {
        let mut jobs = Vec::new();
        if self.done {
            return (jobs, input.len());
        }
        let total = self.buf.len() + input.len();
        let mut at = 0;
        let mut counter = self.sealer.counter();
        while at + LEN_PREFIX <= total && jobs.len() < max {
            let prefix = span(&self.buf, input, at, at + LEN_PREFIX);
            let Ok(len) = record_len(&prefix, counter) else {
                break;
            };
            let end = at + LEN_PREFIX + len;
            if end > total {
                break;
            }
            if len >= min_len.max(1) + TAG_LEN && !self.sealer.is_prefetched(counter) {
                jobs.push(OpenJob {
                    counter,
                    nonce: nonce(counter, false),
                    chunk: span(&self.buf, input, at + LEN_PREFIX, end),
                });
            }
            at = end;
            let Some(next) = counter.checked_add(1) else {
                break;
            };
            counter = next;
        }
        let upto = planned_upto(jobs.len() >= max, at, self.buf.len(), input.len());
        (jobs, upto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::aead::PayloadAead;
    use zeroize::Zeroizing;

    fn sealer() -> Sealer {
        Sealer::new(PayloadAead::new(Zeroizing::new([7; 32])))
    }

    /// Records sealed as `(plaintext, last)`, read back in one push.
    fn read(records: &[(&[u8], bool)]) -> Result<Vec<u8>, Error> {
        let mut w = sealer();
        let mut wire = Vec::new();
        for (pt, last) in records {
            seal_record(&mut w, pt, *last, &mut wire)?;
        }
        let mut r = Reader::new(sealer());
        let mut out = Vec::new();
        r.push(&wire, &mut out)?;
        r.finish()?;
        Ok(out)
    }

    #[test]
    fn empty_records_either_kind_and_a_non_empty_final_one_are_read() {
        // an empty final record is opened as final first; an empty non-final one then as
        // non-final (§8 allows both), and a non-empty final record as final second
        assert_eq!(
            read(&[(b"ab", false), (b"", false), (b"", true)]).unwrap(),
            b"ab"
        );
        assert_eq!(read(&[(b"", false), (b"cd", true)]).unwrap(), b"cd");
        assert_eq!(read(&[(b"", true)]).unwrap(), b"");
        // what follows the final record is refused, as before
        assert!(matches!(
            read(&[(b"", true), (b"", false)]),
            Err(Error::TrailingData)
        ));
        assert!(matches!(read(&[(b"ab", false)]), Err(Error::Truncated)));
    }
}
