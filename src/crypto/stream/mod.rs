//! Payload framing: age v1 STREAM chunks ([`age_v1`]) and age-rt records ([`age_rt`]).
//! Both seal with ChaCha20-Poly1305 under the payload key, nonce = 11-byte big-endian
//! counter || final flag (PROTOCOL.md §7–§8).

pub(crate) mod age_rt;
pub(crate) mod age_v1;

use super::aead::PayloadAead;
use super::{Error, RuntimeKey};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::ops::Range;

/// One write's plaintext, and where its ciphertext goes, outside this crate's memory (the
/// SDK's JavaScript buffers): [`Encryptor::update_external`](super::Encryptor::update_external)
/// still decides the framing, nonces and header and keeps every tag; this only moves bytes
/// and, given the runtime's key, seals a range of the input straight into the output (no
/// copies into and out of wasm memory).
pub trait External {
    /// Plaintext bytes of this write.
    fn len(&self) -> usize;
    /// Whether this write is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Appends input bytes `range` to `buf`.
    fn read(&self, range: Range<usize>, buf: &mut Vec<u8>);
    /// Appends bytes (framing, the header, a chunk sealed here) to the output.
    fn put(&mut self, bytes: &[u8]);
    /// Seals input bytes `range` with the runtime's `key` under `nonce`, appending the
    /// ciphertext and then the returned tag to the output. `None` if it can't (nothing
    /// appended): the chunk is then sealed from a copy, as `Sealer::seal` does.
    fn seal(
        &mut self,
        key: &dyn RuntimeKey,
        range: Range<usize>,
        nonce: &[u8; 12],
    ) -> Option<[u8; 16]>;
    /// [`seal`](Self::seal) of `plaintext` held here (a chunk held back from an earlier
    /// write). Default: `None` (it is then sealed here and [`put`](Self::put)).
    fn seal_held(
        &mut self,
        key: &dyn RuntimeKey,
        plaintext: &[u8],
        nonce: &[u8; 12],
    ) -> Option<[u8; 16]> {
        let _ = (key, plaintext, nonce);
        None
    }
}

/// Plaintext bytes per full chunk / maximum per record.
pub const CHUNK_SIZE: usize = 64 * 1024;
/// Poly1305 tag length.
pub(crate) const TAG_LEN: usize = 16;
/// Ciphertext bytes of a full chunk.
pub(crate) const CHUNK_CT: usize = CHUNK_SIZE + TAG_LEN;

fn nonce(counter: u64, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[3..11].copy_from_slice(&counter.to_be_bytes());
    n[11] = u8::from(last);
    n
}

/// A chunk handed out to be sealed by an asynchronous cipher ([`Sealer::defer`]): its
/// plaintext is `out[start..start + len]` of the call that handed it out, followed by 16 bytes
/// for the tag; `nonce` is the chunk's (counter || final flag), decided here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SealJob {
    pub(crate) nonce: [u8; 12],
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// A chunk an asynchronous cipher may open ahead of time, as a non-final chunk (the reader's
/// `plan`): chunk `counter`, `chunk` = ciphertext || tag.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) struct OpenJob {
    pub(crate) counter: u64,
    pub(crate) nonce: [u8; 12],
    pub(crate) chunk: Vec<u8>,
}

/// Bytes `from..to` of `held` followed by `input`.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn span(held: &[u8], input: &[u8], from: usize, to: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(to - from);
    if from < held.len() {
        v.extend_from_slice(&held[from..to.min(held.len())]);
    }
    if to > held.len() {
        v.extend_from_slice(&input[from.max(held.len()) - held.len()..to - held.len()]);
    }
    v
}

/// Input bytes that cover the planned chunks: where the next plan starts (all of `input`
/// unless the plan stopped at `max` chunks, its end `end` counted from the held bytes).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn planned_upto(full: bool, end: usize, held: usize, input: usize) -> usize {
    if full {
        end.saturating_sub(held).min(input)
    } else {
        input
    }
}

/// The plaintext of a chunk opened ahead of time ([`Sealer::prefetch`]).
struct Prefetched {
    counter: u64,
    chunk: Vec<u8>,
    plain: Vec<u8>,
}

/// Where opened (authenticated) plaintext goes: a `Vec`, or the SDK's JavaScript arrays,
/// into which the runtime's cipher opens a chunk without copies through wasm memory.
pub trait PlainSink {
    /// Appends authenticated plaintext.
    fn put(&mut self, plaintext: &[u8]);
    /// Opens `ct` with the runtime's `key` under `nonce` and, **only if `tag` verified**,
    /// appends its plaintext; `Some(())` then. `None` (nothing appended) if the tag is wrong
    /// or the runtime can't: the chunk is then opened here, which gives the verdict.
    fn open(
        &mut self,
        key: &dyn RuntimeKey,
        nonce: &[u8; 12],
        ct: &[u8],
        tag: &[u8; TAG_LEN],
    ) -> Option<()>;
    /// Decrypts a copy of `ct` with `open_in_place` and appends it if that returned true;
    /// returns what it returned.
    fn open_here(&mut self, ct: &[u8], open_in_place: &mut dyn FnMut(&mut [u8]) -> bool) -> bool {
        let mut buf = ct.to_vec();
        let ok = open_in_place(&mut buf);
        if ok {
            self.put(&buf);
        }
        ok
    }
}

impl PlainSink for Vec<u8> {
    fn put(&mut self, plaintext: &[u8]) {
        self.extend_from_slice(plaintext);
    }
    fn open(
        &mut self,
        _: &dyn RuntimeKey,
        _: &[u8; 12],
        _: &[u8],
        _: &[u8; TAG_LEN],
    ) -> Option<()> {
        None
    }
    fn open_here(&mut self, ct: &[u8], open_in_place: &mut dyn FnMut(&mut [u8]) -> bool) -> bool {
        let start = self.len();
        self.extend_from_slice(ct);
        let ok = open_in_place(&mut self[start..]);
        if !ok {
            self.truncate(start);
        }
        ok
    }
}

/// The running chunk counter and AEAD, and the SHA-256 of every tag sealed or opened so far
/// (a delivery receipt's digest of an encrypted transfer, PROTOCOL.md §12.2).
pub(crate) struct Sealer {
    aead: PayloadAead,
    counter: u64,
    tags: Sha256,
    /// Every tag sealed, in chunk order, once [`keep_tags`](Self::keep_tags) was called (a
    /// seekable source, PROTOCOL.md §12.3): 16 bytes per chunk, 256 KiB per GiB.
    kept: Option<Vec<[u8; TAG_LEN]>>,
    /// Plaintext bytes sealed.
    sealed: u64,
    /// With [`defer`](Self::defer): the chunks handed out and not completed yet, in order.
    deferred: Option<VecDeque<SealJob>>,
    /// Chunks opened ahead of time by an asynchronous cipher, in order.
    prefetched: VecDeque<Prefetched>,
}

impl Sealer {
    pub(crate) fn new(aead: PayloadAead) -> Self {
        Self::at(aead, 0)
    }

    /// A sealer whose next chunk is number `counter`.
    pub(crate) fn at(aead: PayloadAead, counter: u64) -> Self {
        Sealer {
            aead,
            counter,
            tags: Sha256::new(),
            kept: None,
            sealed: 0,
            deferred: None,
            prefetched: VecDeque::new(),
        }
    }

    /// The prefetched plaintext of `chunk` as the next non-final chunk, if any.
    fn take_prefetched(&mut self, chunk: &[u8]) -> Option<Vec<u8>> {
        self.prefetched.retain(|p| p.counter >= self.counter);
        let at = self
            .prefetched
            .iter()
            .position(|p| p.counter == self.counter)?;
        let p = self.prefetched.remove(at)?;
        (p.chunk == chunk && p.plain.len() + TAG_LEN == chunk.len()).then_some(p.plain)
    }

    /// The same key, its next chunk number `counter` (sealing again, §12.3).
    pub(crate) fn again_at(&self, counter: u64) -> Self {
        Self::at(self.aead.clone(), counter)
    }

    /// Keeps the tag of every chunk sealed from now on ([`kept`](Self::kept)).
    pub(crate) fn keep_tags(&mut self) {
        self.kept.get_or_insert_with(Vec::new);
    }

    /// The tags kept by [`keep_tags`](Self::keep_tags), in chunk order.
    pub(crate) fn kept(&self) -> Option<&[[u8; TAG_LEN]]> {
        self.kept.as_deref()
    }

    /// Plaintext bytes sealed so far.
    pub(crate) fn sealed(&self) -> u64 {
        self.sealed
    }

    /// SHA-256 over the tags of the chunks sealed or opened so far, in order (§12.2).
    pub(crate) fn tag_digest(&self) -> [u8; 32] {
        self.tags.clone().finalize().into()
    }

    /// Index of the next chunk.
    pub(crate) fn counter(&self) -> u64 {
        self.counter
    }

    /// Appends `plaintext` sealed as the next chunk (ciphertext || tag) to `out`.
    pub(crate) fn seal(
        &mut self,
        plaintext: &[u8],
        last: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let start = out.len();
        out.extend_from_slice(plaintext);
        if let Some(jobs) = &mut self.deferred {
            out.extend_from_slice(&[0; TAG_LEN]);
            jobs.push_back(SealJob {
                nonce: nonce(self.counter, last),
                start,
                len: plaintext.len(),
            });
            return self.advance();
        }
        let tag = self
            .aead
            .seal(&nonce(self.counter, last), &mut out[start..]);
        out.extend_from_slice(&tag);
        self.tags.update(tag);
        if let Some(kept) = &mut self.kept {
            kept.push(tag);
        }
        self.sealed += plaintext.len() as u64;
        self.advance()
    }

    /// [`seal`](Self::seal) for input bytes `range` of `ext`, appended to its output.
    pub(crate) fn seal_external(
        &mut self,
        ext: &mut dyn External,
        range: Range<usize>,
        last: bool,
    ) -> Result<(), Error> {
        let n = nonce(self.counter, last);
        let len = range.len();
        let sealed = self
            .aead
            .runtime_key()
            .and_then(|k| ext.seal(k, range.clone(), &n));
        let tag = match sealed {
            Some(tag) => tag,
            None => {
                let mut buf = Vec::with_capacity(len + TAG_LEN);
                ext.read(range, &mut buf);
                let tag = self.aead.seal(&n, &mut buf);
                buf.extend_from_slice(&tag);
                ext.put(&buf);
                tag
            }
        };
        self.tags.update(tag);
        if let Some(kept) = &mut self.kept {
            kept.push(tag);
        }
        self.sealed += len as u64;
        self.advance()
    }

    /// [`seal`](Self::seal) of `plaintext` held here, appended to `ext`'s output.
    pub(crate) fn seal_held(
        &mut self,
        ext: &mut dyn External,
        plaintext: &[u8],
        last: bool,
    ) -> Result<(), Error> {
        let n = nonce(self.counter, last);
        let sealed = self
            .aead
            .runtime_key()
            .and_then(|k| ext.seal_held(k, plaintext, &n));
        let Some(tag) = sealed else {
            let mut out = Vec::with_capacity(plaintext.len() + TAG_LEN);
            self.seal(plaintext, last, &mut out)?;
            ext.put(&out);
            return Ok(());
        };
        self.tags.update(tag);
        if let Some(kept) = &mut self.kept {
            kept.push(tag);
        }
        self.sealed += plaintext.len() as u64;
        self.advance()
    }

    /// Tries to open `chunk` (ciphertext || tag) as the next chunk with the given final flag.
    /// On success appends the plaintext to `out`, advances and returns true; on failure
    /// leaves `out` unchanged and returns false.
    pub(crate) fn open(
        &mut self,
        chunk: &[u8],
        last: bool,
        out: &mut dyn PlainSink,
    ) -> Result<bool, Error> {
        let Some(split) = chunk.len().checked_sub(TAG_LEN) else {
            return Ok(false);
        };
        let (ct, tag) = chunk.split_at(split);
        let mut t = [0u8; TAG_LEN];
        t.copy_from_slice(tag);
        if !self.prefetched.is_empty() && !last {
            if let Some(plain) = self.take_prefetched(chunk) {
                out.put(&plain);
                self.tags.update(t);
                self.advance()?;
                return Ok(true);
            }
        }
        let n = nonce(self.counter, last);
        let opened = self
            .aead
            .runtime_key()
            .and_then(|k| out.open(k, &n, ct, &t))
            .is_some();
        if !opened && !out.open_here(ct, &mut |buf| self.aead.open(&n, buf, &t)) {
            return Ok(false);
        }
        self.tags.update(t);
        self.advance()?;
        Ok(true)
    }

    fn advance(&mut self) -> Result<(), Error> {
        self.counter = self
            .counter
            .checked_add(1)
            .ok_or_else(|| Error::PayloadMalformed("chunk counter overflow".into()))?;
        Ok(())
    }
}

/// The split for an asynchronous cipher (used by the wasm adapter only).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl Sealer {
    /// From now on [`seal`](Self::seal) only hands chunks out ([`jobs`](Self::jobs)), for
    /// [`complete`](Self::complete) to take them back sealed: the nonce, the order, the tag
    /// digest and the kept tags stay here.
    pub(crate) fn defer(&mut self) {
        self.deferred.get_or_insert_with(VecDeque::new);
    }

    /// The chunks handed out and not completed yet, oldest first.
    pub(crate) fn jobs(&self) -> Vec<SealJob> {
        self.deferred
            .as_ref()
            .map(|j| j.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether chunks are handed out and not completed.
    pub(crate) fn outstanding(&self) -> bool {
        self.deferred.as_ref().is_some_and(|j| !j.is_empty())
    }

    /// Takes back the oldest `sealed.len()` chunks handed out, all of them in `out` (the
    /// buffer of the call that handed them out): `sealed[i]` says the caller sealed chunk i in
    /// place (ciphertext || tag); the others are sealed here. Then their tags count.
    pub(crate) fn complete(&mut self, out: &mut [u8], sealed: &[bool]) -> Result<(), Error> {
        let Some(jobs) = self.deferred.as_mut().filter(|j| sealed.len() <= j.len()) else {
            return Err(Error::Usage(
                "completing more chunks than were handed out".into(),
            ));
        };
        for &done in sealed {
            let Some(job) = jobs.pop_front() else {
                break;
            };
            let Some(buf) = job
                .len
                .checked_add(job.start + TAG_LEN)
                .and_then(|end| out.get_mut(job.start..end))
            else {
                return Err(Error::Usage(
                    "a chunk handed out is not in the buffer given back".into(),
                ));
            };
            let (plain, tag) = buf.split_at_mut(job.len);
            if !done {
                tag.copy_from_slice(&self.aead.seal(&job.nonce, plain));
            }
            let mut t = [0u8; TAG_LEN];
            t.copy_from_slice(tag);
            self.tags.update(t);
            if let Some(kept) = &mut self.kept {
                kept.push(t);
            }
            self.sealed += job.len as u64;
        }
        Ok(())
    }

    /// The payload key (for an asynchronous cipher to import).
    pub(crate) fn key(&self) -> &[u8; 32] {
        self.aead.key()
    }

    /// Whether chunk `counter` was opened ahead of time.
    pub(crate) fn is_prefetched(&self, counter: u64) -> bool {
        self.prefetched.iter().any(|p| p.counter == counter)
    }

    /// Keeps `plain`, what an asynchronous cipher authenticated and decrypted from `job` as a
    /// non-final chunk, for [`open`](Self::open) to release when that very chunk comes (the
    /// same bytes) at that counter with the non-final flag; otherwise it is dropped unused.
    pub(crate) fn prefetch(&mut self, job: OpenJob, plain: Vec<u8>) {
        if job.counter >= self.counter && job.nonce == nonce(job.counter, false) {
            self.prefetched.push_back(Prefetched {
                counter: job.counter,
                chunk: job.chunk,
                plain,
            });
        }
    }
}
