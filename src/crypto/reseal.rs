//! Sealing a seekable source again after a break (PROTOCOL.md §12.3): the chunks (age v1) or
//! records (age-rt) from one at or before the consumer's offset, under the same file key and
//! counter, each sent only once its tag equals the tag it was sent with the first time. A
//! source that changed fails with [`Error::SourceChanged`] before any ciphertext of the
//! changed chunk leaves: no other plaintext is ever sent under a used nonce.
//!
//! The map from chunk to plaintext is arithmetic: a seekable [`Encryptor`] cuts a chunk every
//! 64 KiB of plaintext (never at a flush), so chunk `i` holds plaintext `i × 64 KiB` on, and
//! every chunk before the last data chunk is full.
//!
//! [`Encryptor`]: super::Encryptor

use super::stream::{age_rt, Sealer, CHUNK_SIZE, TAG_LEN};
use super::{Error, Format};

/// Wire bytes a chunk adds to its plaintext: the tag, and age-rt's length prefix.
pub(crate) fn overhead(format: Format) -> u64 {
    (TAG_LEN
        + match format {
            Format::Age => 0,
            Format::AgeRt => age_rt::LEN_PREFIX,
        }) as u64
}

/// What a seekable encryptor has sealed, as [`plan`] needs it.
pub(crate) struct Sealed<'a> {
    pub format: Format,
    /// Wire bytes before the payload (the header and the payload nonce).
    pub head: u64,
    /// The tag of every chunk sealed, in order.
    pub tags: &'a [[u8; TAG_LEN]],
    /// Plaintext bytes sealed.
    pub plain: u64,
    /// The final chunk is among them.
    pub finished: bool,
}

/// The resealer that gives wire bytes `from..to` again, `to` being everything sealed so far.
pub(crate) fn plan(s: &Sealed<'_>, sealer: &Sealer, from: u64, to: u64) -> Result<Resealer, Error> {
    let n = s.tags.len() as u64;
    let sealed_to = s.head + s.plain + n * overhead(s.format);
    if from < s.head || from > to || to != sealed_to {
        return Err(Error::Usage(format!(
            "cannot seal wire bytes {from}..{to} again: the header ends at {}, the sealed chunks at {sealed_to}",
            s.head
        )));
    }
    let stride = CHUNK_SIZE as u64 + overhead(s.format);
    // Every chunk before the `full`-th is full, so chunk k starts at head + k × stride.
    let full = (s.plain / CHUNK_SIZE as u64).min(n);
    let first = ((from - s.head) / stride).min(full);
    Ok(Resealer {
        format: s.format,
        sealer: sealer.again_at(first),
        tags: s.tags[first as usize..].to_vec(),
        checked: 0,
        first,
        plain_end: s.plain,
        last_is_final: s.finished,
        pending: Vec::new(),
        skip: from - (s.head + first * stride),
        failed: None,
    })
}

/// Seals plaintext `plaintext()` again, push-style like the encryptor: [`push`](Self::push)
/// the reopened source's bytes, then [`finish`](Self::finish); each call appends the wire
/// bytes ready (from the consumer's offset on) to `out`.
pub struct Resealer {
    format: Format,
    sealer: Sealer,
    /// The tags of chunks `first..`, as sent the first time.
    tags: Vec<[u8; TAG_LEN]>,
    /// Chunks sealed again and checked so far.
    checked: usize,
    first: u64,
    plain_end: u64,
    /// The last tag is the final chunk's.
    last_is_final: bool,
    pending: Vec<u8>,
    /// Wire bytes still to drop (the consumer holds them).
    skip: u64,
    failed: Option<Error>,
}

impl Resealer {
    /// The plaintext to reopen the source at: `start..end`.
    pub fn plaintext(&self) -> (u64, u64) {
        (self.first * CHUNK_SIZE as u64, self.plain_end)
    }

    /// Plaintext bytes of chunk `checked` (0 for age-rt's final record).
    fn chunk_len(&self) -> usize {
        let at = (self.first + self.checked as u64) * CHUNK_SIZE as u64;
        self.plain_end.saturating_sub(at).min(CHUNK_SIZE as u64) as usize
    }

    fn fail(&mut self, e: Error) -> Result<(), Error> {
        self.failed = Some(e.clone());
        Err(e)
    }

    /// Seals `plaintext` as the next chunk and checks its tag; appends what the consumer
    /// lacks of it.
    fn seal_next(&mut self, plaintext: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        let last = self.last_is_final && self.checked + 1 == self.tags.len();
        let index = self.first + self.checked as u64;
        let start = out.len();
        let sealed = match self.format {
            Format::Age => self.sealer.seal(plaintext, last, out),
            Format::AgeRt => age_rt::seal_record(&mut self.sealer, plaintext, last, out),
        };
        if let Err(e) = sealed {
            out.truncate(start);
            return self.fail(e);
        }
        if out[out.len() - TAG_LEN..] != self.tags[self.checked] {
            out.truncate(start);
            return self.fail(Error::SourceChanged { index });
        }
        self.checked += 1;
        let drop = self.skip.min((out.len() - start) as u64);
        out.drain(start..start + drop as usize);
        self.skip -= drop;
        Ok(())
    }

    /// Takes more of the reopened plaintext; appends the chunks it completes.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        while self.checked < self.tags.len() && !input.is_empty() {
            let len = self.chunk_len();
            if len == 0 {
                break;
            }
            if self.pending.is_empty() && input.len() >= len {
                // a whole chunk in the input: no copy
                let (chunk, rest) = input.split_at(len);
                self.seal_next(chunk, out)?;
                input = rest;
                continue;
            }
            let take = input.len().min(len - self.pending.len());
            self.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.pending.len() == len {
                let chunk = std::mem::take(&mut self.pending);
                self.seal_next(&chunk, out)?;
                self.pending = chunk;
                self.pending.clear();
            }
        }
        if !input.is_empty() {
            // more plaintext than was sealed
            let index = self.first + self.checked as u64;
            return self.fail(Error::SourceChanged { index });
        }
        Ok(())
    }

    /// The reopened plaintext ended: seals what is left (age-rt's empty final record); fails
    /// if it was not all that was sealed before.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        while self.checked < self.tags.len() {
            // only an empty chunk can be left (age-rt's final record), and nothing pending
            if self.chunk_len() > 0 || !self.pending.is_empty() {
                let index = self.first + self.checked as u64;
                return self.fail(Error::SourceChanged { index });
            }
            self.seal_next(&[], out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DecryptOptions, Decryptor, Encryptor, Identity};
    use super::*;

    const K: usize = CHUNK_SIZE;

    fn plaintext(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// A seekable encryption of `plain` fed in uneven writes, each flushed (as `send` does);
    /// `stop` plaintext bytes fed, or all and finished.
    fn sealed(format: Format, plain: &[u8], stop: Option<usize>) -> (Encryptor, Vec<u8>) {
        let mut enc = Encryptor::with_passphrase_work_factor(format, "p", 2)
            .unwrap()
            .seekable();
        let mut wire = Vec::new();
        enc.flush(&mut wire).unwrap();
        let fed = &plain[..stop.unwrap_or(plain.len())];
        for piece in fed.chunks(5000) {
            enc.update(piece, &mut wire).unwrap();
            enc.flush(&mut wire).unwrap();
        }
        if stop.is_none() {
            enc.finish(&mut wire).unwrap();
        }
        (enc, wire)
    }

    /// Seals `from..` again from `source` (the plaintext it reopens), fed in uneven pieces.
    fn again(enc: &Encryptor, source: &[u8], from: u64, to: u64) -> Result<Vec<u8>, Error> {
        let mut r = enc.reseal(from, to)?;
        let (start, end) = r.plaintext();
        let mut out = Vec::new();
        let end = (end as usize).min(source.len());
        for piece in source[start as usize..end].chunks(3001) {
            r.push(piece, &mut out)?;
        }
        r.finish(&mut out)?;
        Ok(out)
    }

    #[test]
    fn sealing_again_gives_the_same_wire_bytes_from_any_offset() {
        for format in [Format::Age, Format::AgeRt] {
            for size in [0, 1, K, 3 * K + 5, 4 * K] {
                let plain = plaintext(size);
                for stop in [None, Some(size / 2), Some(size)] {
                    let (enc, wire) = sealed(format, &plain, stop);
                    let head = enc.header_len();
                    let to = wire.len() as u64;
                    let stride = K as u64 + overhead(format);
                    let mut offsets = vec![head, head + 1, to.saturating_sub(1).max(head), to];
                    for k in 1..=4u64 {
                        let b = head + k * stride;
                        offsets.extend([b - 1, b, b + 1]);
                    }
                    offsets.retain(|&o| o <= to);
                    for from in offsets {
                        let out = again(&enc, &plain, from, to)
                            .unwrap_or_else(|e| panic!("{format:?} {size} {stop:?} {from}: {e}"));
                        assert_eq!(
                            out,
                            wire[from as usize..],
                            "{format:?} {size} {stop:?} {from}"
                        );
                    }
                }
                // what a seekable encryptor writes is ordinary age / age-rt
                let (_, wire) = sealed(format, &plain, None);
                let mut dec =
                    Decryptor::new(&[Identity::passphrase("p")], DecryptOptions::default())
                        .unwrap();
                let mut back = Vec::new();
                dec.update(&wire, &mut back).unwrap();
                dec.finish(&mut back).unwrap();
                assert_eq!(back, plain);
            }
        }
    }

    #[test]
    fn a_changed_source_fails_before_its_chunk_leaves() {
        for format in [Format::Age, Format::AgeRt] {
            let plain = plaintext(5 * K + 100);
            let (enc, wire) = sealed(format, &plain, None);
            let (head, to) = (enc.header_len(), wire.len() as u64);
            let stride = K as u64 + overhead(format);
            // one byte of chunk 3 changed: chunks 1 and 2 leave, nothing of chunk 3
            let mut changed = plain.clone();
            changed[3 * K + 10] ^= 1;
            let mut r = enc.reseal(head + stride + 7, to).unwrap();
            let mut out = Vec::new();
            let (start, end) = r.plaintext();
            assert_eq!((start, end), (K as u64, plain.len() as u64));
            let e = r
                .push(&changed[start as usize..end as usize], &mut out)
                .unwrap_err();
            assert_eq!(e, Error::SourceChanged { index: 3 });
            assert_eq!(
                out,
                wire[(head + stride + 7) as usize..(head + 3 * stride) as usize]
            );
            assert_eq!(r.finish(&mut out).unwrap_err(), e, "poisoned");
            // shorter, longer: the last chunk differs, or is missing
            let short = again(&enc, &plain[..plain.len() - 1], head, to).unwrap_err();
            assert!(
                matches!(short, Error::SourceChanged { index: 5 }),
                "{short:?}"
            );
            let mut long = plain.clone();
            long.push(0);
            let mut r = enc.reseal(head, to).unwrap();
            let mut out = Vec::new();
            let e = r.push(&long, &mut out).unwrap_err();
            assert!(matches!(e, Error::SourceChanged { .. }), "{e:?}");
        }
    }

    #[test]
    fn only_a_seekable_encryptor_seals_again_and_only_what_it_sealed() {
        let mut enc = Encryptor::with_passphrase_work_factor(Format::AgeRt, "p", 2).unwrap();
        let mut wire = Vec::new();
        enc.update(b"abc", &mut wire).unwrap();
        enc.flush(&mut wire).unwrap();
        assert!(matches!(
            enc.reseal(wire.len() as u64, wire.len() as u64),
            Err(Error::Usage(_))
        ));
        let (enc, wire) = sealed(Format::AgeRt, &plaintext(K + 1), None);
        let (head, to) = (enc.header_len(), wire.len() as u64);
        for (from, to) in [(head - 1, to), (head, to - 1), (head, to + 1), (to + 1, to)] {
            assert!(
                matches!(enc.reseal(from, to), Err(Error::Usage(_))),
                "{from}..{to}"
            );
        }
        // seekable() after output, or with armor, poisons
        let mut late = Encryptor::with_passphrase_work_factor(Format::Age, "p", 2).unwrap();
        late.flush(&mut Vec::new()).unwrap();
        let mut late = late.seekable();
        assert!(matches!(
            late.update(b"x", &mut Vec::new()),
            Err(Error::Usage(_))
        ));
    }
}
