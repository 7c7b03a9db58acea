//! Push-style decryption of age v1 and age-rt v0.2, armored or binary, auto-detected.

use super::header::{self, Header, Scan, AGE_RT_MAX_HEADER};
use super::keys::{payload_aead, FileKey, PAYLOAD_NONCE_LEN};
use super::recipients::{mlkem768x25519, scrypt, x25519};
use super::stream::{age_rt, age_v1, OpenJob, PlainSink, Sealer};
use super::{armor, Error, Format, Identity};
use zeroize::Zeroizing;

/// Reader limits and leniencies. `DecryptOptions::default()` is strict C2SP age.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecryptOptions {
    /// Largest accepted scrypt work factor, as log2 N (default 22, like the `age` CLI; one
    /// derivation at 22 takes about 16 s natively and needs 1 GiB of memory). Larger ones fail
    /// with [`Error::WorkFactorTooHigh`] before any work is done.
    pub max_scrypt_log2_n: u8,
    /// Accept an empty final chunk after a full one in age v1 (default false). zebrastream-io's
    /// "age" mode writes that for plaintexts that are a non-zero multiple of 64 KiB; strict age
    /// readers (`age`, `rage`) reject it. Authentication and truncation detection are not
    /// weakened by this: only the "final chunk must not be empty" rule is relaxed.
    pub lenient_empty_final_chunk: bool,
    /// Largest accepted age v1 header in bytes (default 64 KiB). age-rt headers are capped
    /// at 4 KiB (PROTOCOL.md §8) regardless.
    pub max_header_bytes: usize,
}

impl Default for DecryptOptions {
    fn default() -> Self {
        DecryptOptions {
            max_scrypt_log2_n: 22,
            lenient_empty_final_chunk: false,
            max_header_bytes: 64 * 1024,
        }
    }
}

/// How binary (non-armored) input starts.
const BINARY_STARTS: [&[u8]; 2] = [b"age-", b"github.com/"];

enum Stage {
    Header(Vec<u8>),
    Nonce {
        format: Format,
        file_key: FileKey,
        buf: Vec<u8>,
    },
    Age(age_v1::Reader),
    AgeRt(age_rt::Reader),
}

/// Decrypts a stream push-style: feed ciphertext with [`update`](Self::update) in pieces of
/// any size and call [`finish`](Self::finish) at the end of input. Each call appends
/// **only authenticated plaintext** to `out`.
///
/// - Detects armor (`-----BEGIN AGE ENCRYPTED FILE-----`, possibly after whitespace) from the
///   first bytes (binary input starts with `age-` or `github.com/`; anything else is parsed
///   as armor) and the format from the first header line (`age-encryption.org/v1` or
///   `github.com/parsimonit/age-rt-encryption/v0.2`), see [`format`](Self::format).
/// - age v1: a 64 KiB chunk is released once the next byte arrives (it is then known to be
///   non-final); the final chunk at `finish`. age-rt: each record as soon as it is complete.
/// - Memory is bounded by one chunk/record plus the header (≤ `max_header_bytes`).
/// - `finish` fails with [`Error::Truncated`] if the final chunk/record never came: never
///   treat a stream as complete before `finish` returned `Ok`.
///
/// Errors (see [`Error`]): `NoMatchingIdentity` / `WrongPassphrase`, `HeaderMalformed`,
/// `HeaderMac`, `WorkFactorTooHigh`, `UnsupportedLegacyFormat`, `Armor`, `ChunkAuth { index }`,
/// `PayloadMalformed`, `Truncated`, `TrailingData`. After an error every call returns it again.
pub struct Decryptor {
    identities: Vec<Identity>,
    options: DecryptOptions,
    armor: Option<Option<armor::Reader>>,
    detect: Vec<u8>,
    stage: Stage,
    format: Option<Format>,
    state: Result<bool, Error>,
    /// Kept once the header verified, for [`receipt_key`](Self::receipt_key).
    file_key: Option<FileKey>,
    /// Bytes fed to [`update`](Self::update) (for [`resume_point`](Self::resume_point)).
    fed: u64,
    /// The passphrases' scrypt, run as soon as the stanza line arrived (the producer may send
    /// it before running its own: [`Encryptor::intro`](super::Encryptor::intro)); tried once.
    early: Option<Option<scrypt::Early>>,
}

impl Decryptor {
    /// A decryptor trying each of `identities` (X25519 / post-quantum keys and/or
    /// passphrases). Fails with
    /// [`Error::Usage`] if the list is empty.
    pub fn new(identities: &[Identity], options: DecryptOptions) -> Result<Self, Error> {
        if identities.is_empty() {
            return Err(Error::Usage(
                "at least one identity or passphrase is required".into(),
            ));
        }
        Ok(Decryptor {
            identities: identities.to_vec(),
            options,
            armor: None,
            detect: Vec::new(),
            stage: Stage::Header(Vec::new()),
            format: None,
            state: Ok(false),
            file_key: None,
            fed: 0,
            early: None,
        })
    }

    /// The delivery-receipt key of transfer `transfer_id` (PROTOCOL.md §12.2), once the
    /// header has been verified.
    pub fn receipt_key(&self, transfer_id: &str) -> Option<Zeroizing<[u8; 32]>> {
        self.file_key
            .as_ref()
            .map(|k| super::keys::receipt_key(k, transfer_id))
    }

    /// SHA-256 over the tag of every chunk opened so far, in order: the receipt digest of an
    /// encrypted transfer (PROTOCOL.md §12.2). `None` before the payload started.
    pub fn tag_digest(&self) -> Option<[u8; 32]> {
        match &self.stage {
            Stage::Age(r) => Some(r.sealer().tag_digest()),
            Stage::AgeRt(r) => Some(r.sealer().tag_digest()),
            _ => None,
        }
    }

    /// Where a resumed stream must continue (PROTOCOL.md §12.3): the input offset just after
    /// the last chunk (age v1) or record (age-rt) opened, or of the header when no chunk was
    /// opened yet. Input held back beyond it (a partial chunk, or a full age v1 chunk not yet
    /// known to be non-final) is dropped, so feeding the input again from that offset goes on
    /// where it stopped, with the same counter, file key and tag digest: truncation,
    /// reordering and tampering still fail. `None` for armored input (it doesn't resume) and
    /// after an error or the end.
    pub fn resume_point(&mut self) -> Option<u64> {
        let at = self.resume_offset()?;
        let held = self.detect.len()
            + match &mut self.stage {
                Stage::Header(buf) | Stage::Nonce { buf, .. } => std::mem::take(buf).len(),
                Stage::Age(r) => r.drop_held(),
                Stage::AgeRt(r) => r.drop_held(),
            };
        self.detect.clear();
        self.fed -= held as u64;
        debug_assert_eq!(self.fed, at);
        Some(self.fed)
    }

    /// The offset [`Decryptor::resume_point`] would return, without dropping anything: what a
    /// consumer asks for before it knows that it resumes (a stall, PROTOCOL.md §12.4).
    pub fn resume_offset(&self) -> Option<u64> {
        if self.state != Ok(false) || self.is_armored() == Some(true) {
            return None;
        }
        let held = self.detect.len()
            + match &self.stage {
                Stage::Header(buf) | Stage::Nonce { buf, .. } => buf.len(),
                Stage::Age(r) => r.held(),
                Stage::AgeRt(r) => r.held(),
            };
        Some(self.fed - held as u64)
    }

    /// The detected format, once the first header line has been parsed.
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// Whether the input is ASCII-armored, once the first byte has been seen.
    pub fn is_armored(&self) -> Option<bool> {
        self.armor.as_ref().map(Option::is_some)
    }

    fn guard(&self) -> Result<(), Error> {
        match &self.state {
            Ok(false) => Ok(()),
            Ok(true) => Err(Error::Usage("decryptor already finished".into())),
            Err(e) => Err(e.clone()),
        }
    }

    fn record<T>(&mut self, r: Result<T, Error>) -> Result<T, Error> {
        if let Err(e) = &r {
            self.state = Err(e.clone());
        }
        r
    }

    /// Decrypts `input`, appending newly authenticated plaintext to `out`.
    pub fn update(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        self.update_to(input, out)
    }

    /// [`update`](Self::update) into a [`PlainSink`] (the SDK's: chunks opened by the
    /// runtime's cipher straight into JavaScript arrays).
    pub fn update_to(&mut self, input: &[u8], out: &mut dyn PlainSink) -> Result<(), Error> {
        self.guard()?;
        self.fed += input.len() as u64;
        let r = self.update_inner(input, out);
        self.record(r)
    }

    fn update_inner(&mut self, input: &[u8], out: &mut dyn PlainSink) -> Result<(), Error> {
        if self.armor.is_none() {
            // Binary files start with a version line ("age-..." or "github.com/..."); anything
            // else is read as (possibly malformed) armor. Undecided bytes wait in `detect`.
            self.detect.extend_from_slice(input);
            let d = &self.detect;
            let binary = BINARY_STARTS.iter().any(|p| d.starts_with(p));
            if !binary && BINARY_STARTS.iter().any(|p| p.starts_with(d)) {
                return Ok(());
            }
            self.armor = Some((!binary).then(armor::Reader::new));
            let pending = std::mem::take(&mut self.detect);
            return self.update_inner(&pending, out);
        }
        match &mut self.armor {
            Some(Some(a)) => {
                let mut raw = Vec::new();
                a.push(input, &mut raw)?;
                self.feed(&raw, out)
            }
            _ => self.feed(input, out),
        }
    }

    /// Ends the input: releases the final chunk or fails (`Truncated`, `ChunkAuth`, ...).
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.finish_to(out)
    }

    /// [`finish`](Self::finish) into a [`PlainSink`].
    pub fn finish_to(&mut self, out: &mut dyn PlainSink) -> Result<(), Error> {
        self.guard()?;
        let r = self.finish_inner(out);
        let r = self.record(r);
        if r.is_ok() {
            self.state = Ok(true);
        }
        r
    }

    fn finish_inner(&mut self, out: &mut dyn PlainSink) -> Result<(), Error> {
        if self.armor.is_none() {
            self.armor = Some(None);
            let pending = std::mem::take(&mut self.detect);
            self.feed(&pending, out)?;
        }
        if let Some(Some(a)) = &mut self.armor {
            let mut raw = Vec::new();
            a.finish(&mut raw)?;
            self.feed(&raw, out)?;
        }
        match &mut self.stage {
            Stage::Header(buf) if buf.is_empty() => Err(Error::header("empty input")),
            Stage::Header(_) => Err(Error::header("input ended inside the header (truncated?)")),
            Stage::Nonce { .. } => Err(Error::header(
                "input ended before the 16-byte payload nonce",
            )),
            Stage::Age(r) => r.finish(out),
            Stage::AgeRt(r) => r.finish(),
        }
    }

    fn feed(&mut self, mut input: &[u8], out: &mut dyn PlainSink) -> Result<(), Error> {
        while !input.is_empty() {
            match &mut self.stage {
                Stage::Header(buf) => {
                    let cap = self.options.max_header_bytes.max(AGE_RT_MAX_HEADER);
                    let take = input.len().min(cap + 1 - buf.len().min(cap + 1));
                    buf.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    let scan = header::scan(buf, self.options.max_header_bytes)?;
                    if matches!(scan, Scan::Incomplete) && self.early.is_none() {
                        // the first stanza's line: a passphrase's scrypt can run now
                        let mut lines = buf.split(|&b| b == b'\n');
                        if let (Some(_), Some(line), Some(_)) =
                            (lines.next(), lines.next(), lines.next())
                        {
                            let passphrases: Vec<&[u8]> = self
                                .identities
                                .iter()
                                .filter_map(Identity::as_passphrase)
                                .collect();
                            let max = self.options.max_scrypt_log2_n;
                            self.early = Some(scrypt::early(line, &passphrases, max));
                        }
                    }
                    if let Scan::Complete(len) = scan {
                        let mut buf = std::mem::take(buf);
                        let rest = buf.split_off(len);
                        let header = header::parse(&buf)?;
                        self.format = Some(header.format);
                        let file_key = self.unwrap_file_key(&header);
                        self.early = Some(None);
                        let file_key = file_key?;
                        header::verify_mac(&header, &buf, &file_key)?;
                        self.file_key = Some(file_key.clone());
                        self.stage = Stage::Nonce {
                            format: header.format,
                            file_key,
                            buf: Vec::new(),
                        };
                        self.feed(&rest, out)?;
                    }
                }
                Stage::Nonce {
                    format,
                    file_key,
                    buf,
                } => {
                    let take = input.len().min(PAYLOAD_NONCE_LEN - buf.len());
                    buf.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if let Ok(nonce) = <[u8; PAYLOAD_NONCE_LEN]>::try_from(buf.as_slice()) {
                        let sealer = Sealer::new(payload_aead(file_key, &nonce));
                        self.stage = match format {
                            Format::Age => Stage::Age(age_v1::Reader::new(
                                sealer,
                                self.options.lenient_empty_final_chunk,
                            )),
                            Format::AgeRt => Stage::AgeRt(age_rt::Reader::new(sealer)),
                        };
                    }
                }
                Stage::Age(r) => return r.push(input, out),
                Stage::AgeRt(r) => return r.push(input, out),
            }
        }
        Ok(())
    }

    /// Finds the file key: scrypt stanzas with the passphrases, X25519 and mlkem768x25519
    /// stanzas with the keys of their type; other stanza types are skipped (C2SP age).
    fn unwrap_file_key(&self, header: &Header) -> Result<FileKey, Error> {
        let has_scrypt = header.stanzas.iter().any(|s| s.tag == scrypt::TAG);
        if has_scrypt && header.stanzas.len() > 1 {
            return Err(Error::header(
                "an scrypt stanza must be the only stanza in the header",
            ));
        }
        let passphrases: Vec<&[u8]> = self
            .identities
            .iter()
            .filter_map(Identity::as_passphrase)
            .collect();
        for stanza in &header.stanzas {
            if stanza.tag == scrypt::TAG && !passphrases.is_empty() {
                if let Some(k) = scrypt::unwrap(
                    stanza,
                    &passphrases,
                    self.options.max_scrypt_log2_n,
                    self.early.as_ref().and_then(Option::as_ref),
                )? {
                    return Ok(k);
                }
            } else if stanza.tag == x25519::TAG {
                for id in self.identities.iter().filter_map(Identity::as_x25519) {
                    if let Some(k) = x25519::unwrap(stanza, id)? {
                        return Ok(k);
                    }
                }
            } else if stanza.tag == mlkem768x25519::TAG {
                for id in self.identities.iter().filter_map(Identity::as_hybrid) {
                    if let Some(k) = mlkem768x25519::unwrap(stanza, id)? {
                        return Ok(k);
                    }
                }
            }
        }
        if has_scrypt && !passphrases.is_empty() {
            Err(Error::WrongPassphrase)
        } else {
            Err(Error::NoMatchingIdentity)
        }
    }
}

/// The split for an asynchronous cipher (used by the wasm adapter only).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl Decryptor {
    /// Whether the payload has started, in binary input that an asynchronous cipher may open
    /// ahead of time ([`plan_opens`](Self::plan_opens)).
    pub(crate) fn in_payload(&self) -> bool {
        self.state == Ok(false)
            && matches!(self.armor, Some(None))
            && matches!(self.stage, Stage::Age(_) | Stage::AgeRt(_))
    }

    /// The payload key once the payload started (for an asynchronous cipher to import).
    pub(crate) fn payload_key(&self) -> Option<Zeroizing<[u8; 32]>> {
        let key = match &self.stage {
            Stage::Age(r) => r.sealer().key(),
            Stage::AgeRt(r) => r.sealer().key(),
            _ => return None,
        };
        Some(Zeroizing::new(*key))
    }

    /// For an asynchronous cipher (the SDK's WebCrypto path, `src/wasm/webcrypto.rs`): the
    /// chunks that [`update`](Self::update) with `input` will open, as far as they are known
    /// without opening any (at most `max`; age-rt records with at least `min_len` bytes of
    /// plaintext), each as a non-final chunk; and how many bytes of `input` they cover (feed
    /// those, then plan again). The caller opens them and hands back each one that
    /// authenticated ([`prefetched`](Self::prefetched)) before it feeds `input`; every other
    /// chunk (a wrong tag, the final one, a failure) is opened here, which decides the error.
    pub(crate) fn plan_opens(
        &self,
        input: &[u8],
        max: usize,
        min_len: usize,
    ) -> (Vec<OpenJob>, usize) {
        if !self.in_payload() {
            return (Vec::new(), input.len());
        }
        match &self.stage {
            Stage::Age(r) => r.plan(input, max.max(1)),
            Stage::AgeRt(r) => r.plan(input, max.max(1), min_len),
            _ => (Vec::new(), input.len()),
        }
    }

    /// The plaintext of `job` ([`plan_opens`](Self::plan_opens)), authenticated and decrypted
    /// by the caller's cipher: released by [`update`](Self::update) only when that very chunk
    /// comes next, as a non-final chunk.
    pub(crate) fn prefetched(&mut self, job: OpenJob, plain: Vec<u8>) {
        match &mut self.stage {
            Stage::Age(r) => r.sealer_mut().prefetch(job, plain),
            Stage::AgeRt(r) => r.sealer_mut().prefetch(job, plain),
            _ => {}
        }
    }
}
