//! Push-style encryption to age v1 or age-rt v0.2.

use super::header::{self, Stanza};
use super::keys::{payload_aead, receipt_key, FileKey, PAYLOAD_NONCE_LEN};
use super::recipients::scrypt;
use super::reseal::{self, Resealer, Sealed};
use super::rng::{draw, OsRandom, RandomSource};
use super::stream::{age_rt, age_v1, External, SealJob, Sealer};
use super::{armor, Error, Format, Recipient};
use zeroize::Zeroizing;

enum Payload {
    Age(age_v1::Writer),
    AgeRt(age_rt::Writer),
}

/// Encrypts a stream push-style: feed plaintext with [`update`](Self::update), call
/// [`flush`](Self::flush) where a reader should see data now (age-rt), and
/// [`finish`](Self::finish) exactly once at the end. Each call appends ciphertext to `out`.
///
/// - The header (and the 16-byte payload nonce) is emitted with the first output of any call.
///   A passphrase's scrypt runs then too, not when the encryptor is built; [`intro`](Self::intro)
///   emits the header's first lines before it (the salt: a reader can run its scrypt meanwhile).
/// - Memory is bounded: at most one 64 KiB chunk of plaintext is buffered, whatever the
///   stream length (plus whatever the caller lets accumulate in `out`).
/// - age v1 (PROTOCOL.md §7): output leaves in 64 KiB chunks; one chunk is held back until
///   more input or `finish` shows whether it is the last; `flush` only emits the header.
/// - age-rt (PROTOCOL.md §8): `flush` emits the buffered plaintext as one record at once
///   (nothing if none is buffered); 64 KiB of buffered input is emitted as a record without a
///   flush; `finish` ends with an empty final record (20 bytes).
/// - With [`armored`](Self::armored) the output is ASCII-armored; full 64-column lines are
///   emitted as soon as possible, so a flush may keep up to 47 bytes back until `finish`.
///
/// Not finishing means the reader reports [`Error::Truncated`]: that is the point.
/// After `finish` or any error, further calls fail with [`Error::Usage`] / the same error.
///
/// ```
/// use httpipe::crypto::{Encryptor, Decryptor, DecryptOptions, Format, Identity};
/// let mut enc = Encryptor::with_passphrase_work_factor(Format::AgeRt, "secret", 10)?;
/// let mut wire = Vec::new();
/// enc.update(b"hello ", &mut wire)?;
/// enc.flush(&mut wire)?;            // one record on the wire now
/// enc.update(b"world\n", &mut wire)?;
/// enc.finish(&mut wire)?;
/// let mut dec = Decryptor::new(&[Identity::passphrase("secret")], DecryptOptions::default())?;
/// let mut plain = Vec::new();
/// dec.update(&wire, &mut plain)?;
/// dec.finish(&mut plain)?;
/// assert_eq!(plain, b"hello world\n");
/// # Ok::<(), httpipe::crypto::Error>(())
/// ```
pub struct Encryptor {
    format: Format,
    header: Option<Vec<u8>>,
    payload: Payload,
    armor: Option<armor::Writer>,
    state: Result<bool, Error>,
    /// Kept for [`receipt_key`](Self::receipt_key) (wiped on drop).
    file_key: FileKey,
    /// Wire bytes before the payload: the header and the payload nonce.
    head_len: u64,
    /// [`seekable`](Self::seekable): chunks every 64 KiB of plaintext, tags kept.
    seekable: bool,
    /// A passphrase's stanza, wrapped at the first output: `header` has a placeholder body.
    pending: Option<PendingScrypt>,
    /// Bytes of `header` already emitted by [`intro`](Self::intro).
    intro_len: usize,
}

/// The scrypt stanza not wrapped yet (its salt drawn, PROTOCOL.md §7.1).
struct PendingScrypt {
    passphrase: Zeroizing<Vec<u8>>,
    log2_n: u8,
    salt: [u8; scrypt::SALT_LEN],
    nonce: [u8; PAYLOAD_NONCE_LEN],
}

impl Encryptor {
    /// Encrypts to `recipients` (one or more X25519, one or more hybrid post-quantum, or
    /// exactly one passphrase), with OS randomness. Fails with [`Error::Usage`] on an empty
    /// list, a passphrase mixed with other recipients, or post-quantum recipients mixed with
    /// X25519 ones (PROTOCOL.md §7.1). A passphrase recipient's scrypt (about 1 s at
    /// log2 N = 18) runs at the first output.
    pub fn new(format: Format, recipients: &[Recipient]) -> Result<Self, Error> {
        Self::with_rng(format, recipients, &mut OsRandom)
    }

    /// Encrypts with a passphrase at the default work factor (log2 N = 18, the only one
    /// the Python age-rt client reads).
    pub fn with_passphrase(format: Format, passphrase: &str) -> Result<Self, Error> {
        Self::new(format, &[Recipient::passphrase(passphrase)])
    }

    /// Encrypts with a passphrase at scrypt N = 2^`log2_n` (1..=63).
    pub fn with_passphrase_work_factor(
        format: Format,
        passphrase: &str,
        log2_n: u8,
    ) -> Result<Self, Error> {
        Self::new(
            format,
            &[Recipient::passphrase_with_work_factor(passphrase, log2_n)],
        )
    }

    /// Like [`new`](Self::new) with explicit randomness (see [`RandomSource`] for the draw
    /// order). All randomness is drawn here.
    pub fn with_rng(
        format: Format,
        recipients: &[Recipient],
        rng: &mut dyn RandomSource,
    ) -> Result<Self, Error> {
        if recipients.is_empty() {
            return Err(Error::Usage("at least one recipient is required".into()));
        }
        if recipients.len() > 1 && recipients.iter().any(Recipient::is_passphrase) {
            return Err(Error::Usage(
                "a passphrase must be the only recipient of a file".into(),
            ));
        }
        let post_quantum = recipients.iter().filter(|r| r.is_post_quantum()).count();
        if post_quantum > 0 && post_quantum < recipients.len() {
            return Err(Error::Usage(
                "post-quantum (age1pq1...) recipients can't be mixed with X25519 (age1...) \
                 ones: the X25519 stanza would give up the post-quantum protection"
                    .into(),
            ));
        }
        let file_key = FileKey::new(draw(rng)?);
        // A passphrase (the only recipient then): its salt is drawn here, its scrypt runs at
        // the first output; the header has a placeholder body of the same length until then.
        let mut pending = None;
        let stanzas = match recipients.iter().find_map(Recipient::scrypt_params) {
            Some((passphrase, log2_n)) => {
                scrypt::check_work_factor(log2_n)?;
                let salt = draw::<{ scrypt::SALT_LEN }>(rng)?;
                pending = Some((Zeroizing::new(passphrase.to_vec()), log2_n, salt));
                vec![scrypt::placeholder(log2_n, &salt)]
            }
            None => recipients
                .iter()
                .map(|r| r.wrap(&file_key, rng))
                .collect::<Result<Vec<Stanza>, Error>>()?,
        };
        let nonce: [u8; PAYLOAD_NONCE_LEN] = draw(rng)?;
        let pending = pending.map(|(passphrase, log2_n, salt)| PendingScrypt {
            passphrase,
            log2_n,
            salt,
            nonce,
        });
        let mut head = header::write(format, &stanzas, &file_key);
        if format == Format::AgeRt && head.len() > header::AGE_RT_MAX_HEADER {
            return Err(Error::Usage(format!(
                "{} recipients make a {}-byte header, more than age-rt's {} (a post-quantum \
                 recipient takes 1557): use fewer recipients or format age",
                recipients.len(),
                head.len(),
                header::AGE_RT_MAX_HEADER
            )));
        }
        head.extend_from_slice(&nonce);
        let head_len = head.len() as u64;
        let sealer = Sealer::new(payload_aead(&file_key, &nonce));
        let payload = match format {
            Format::Age => Payload::Age(age_v1::Writer::new(sealer)),
            Format::AgeRt => Payload::AgeRt(age_rt::Writer::new(sealer)),
        };
        Ok(Encryptor {
            format,
            header: Some(head),
            payload,
            armor: None,
            state: Ok(false),
            file_key,
            head_len,
            seekable: false,
            pending,
            intro_len: 0,
        })
    }

    /// Whether any output left already.
    fn started(&self) -> bool {
        self.header.is_none() || self.intro_len > 0
    }

    /// Emits the header bytes that need no more work: all of it, or, for a passphrase whose
    /// scrypt has not run yet, its first two lines (the version and the stanza line with the
    /// salt). A reader given them runs its scrypt while this encryptor runs its own (at the
    /// next call): the two derivations overlap instead of taking turns. Nothing after the
    /// first output.
    pub fn intro(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        if self.pending.is_none() {
            return self.run(out, |_, _| Ok(false));
        }
        if let Err(e) = &self.state {
            return Err(e.clone());
        }
        let Some(h) = self.header.as_ref().filter(|_| self.intro_len == 0) else {
            return Ok(());
        };
        // the version line and the stanza line
        let n = h
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .nth(1)
            .map_or(0, |(i, _)| i + 1);
        let intro = &h[..n];
        match &mut self.armor {
            Some(a) => a.push(intro, out),
            None => out.extend_from_slice(intro),
        }
        self.intro_len = n;
        Ok(())
    }

    /// Runs a pending scrypt and puts the real stanza into the header.
    fn complete_header(&mut self) -> Result<(), Error> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        let stanza = scrypt::wrap(&p.passphrase, p.log2_n, p.salt, &self.file_key)?;
        let mut head = header::write(self.format, &[stanza], &self.file_key);
        head.extend_from_slice(&p.nonce);
        let placeholder = self.header.as_deref().unwrap_or_default();
        if head.len() != placeholder.len()
            || head[..self.intro_len] != placeholder[..self.intro_len]
        {
            return Err(Error::Usage(
                "internal error: the scrypt stanza differs from its placeholder".into(),
            ));
        }
        self.header = Some(head);
        Ok(())
    }

    /// For a source that can be read again from any offset (a file, PROTOCOL.md §12.3): a
    /// chunk / record is cut every 64 KiB of plaintext, never at a [`flush`](Self::flush)
    /// (which then emits only the header), and the tag of every chunk is kept (16 bytes per
    /// 64 KiB), so that [`reseal`](Self::reseal) can seal from a chunk again after a break.
    /// Call it before any output and without armor; otherwise it poisons the encryptor
    /// ([`Error::Usage`]).
    pub fn seekable(mut self) -> Self {
        if self.started() || self.armor.is_some() {
            self.state = Err(Error::Usage(
                "seekable() must be called before any output, without armor".into(),
            ));
        }
        self.seekable = true;
        match &mut self.payload {
            Payload::Age(w) => w.sealer_mut().keep_tags(),
            Payload::AgeRt(w) => w.sealer_mut().keep_tags(),
        }
        self
    }

    /// Wire bytes before the payload (the header and the 16-byte payload nonce): what a
    /// resume sends again as it was sent (§12.3).
    pub fn header_len(&self) -> u64 {
        self.head_len
    }

    /// Seals again, after a break (§12.3), the chunks that hold wire bytes `from..to` of the
    /// payload (`from` at or after [`header_len`](Self::header_len), `to` everything sealed so
    /// far): the [`Resealer`] says which plaintext to read again, and gives each chunk only
    /// after its tag matched the one sent. [`Error::Usage`] unless [`seekable`](Self::seekable)
    /// and the offsets fit.
    pub fn reseal(&self, from: u64, to: u64) -> Result<Resealer, Error> {
        let sealer = match &self.payload {
            Payload::Age(w) => w.sealer(),
            Payload::AgeRt(w) => w.sealer(),
        };
        let Some(tags) = sealer.kept().filter(|_| self.seekable) else {
            return Err(Error::Usage(
                "only a seekable() encryptor can seal again".into(),
            ));
        };
        // Chunks handed out and not completed yet (`defer_seals`) are not sent yet either.
        let sealed = Sealed {
            format: self.format,
            head: self.head_len,
            tags,
            plain: sealer.sealed(),
            finished: self.state == Ok(true) && !sealer.outstanding(),
        };
        reseal::plan(&sealed, sealer, from, to)
    }

    /// The delivery-receipt key of transfer `transfer_id` (PROTOCOL.md §12.2):
    /// HKDF-SHA-256(ikm = file key, salt = empty, info = "httpipe receipt v1" || id).
    pub fn receipt_key(&self, transfer_id: &str) -> Zeroizing<[u8; 32]> {
        receipt_key(&self.file_key, transfer_id)
    }

    /// SHA-256 over the tag of every chunk sealed so far, in order: the receipt digest of an
    /// encrypted transfer (PROTOCOL.md §12.2). Complete after [`finish`](Self::finish).
    pub fn tag_digest(&self) -> [u8; 32] {
        match &self.payload {
            Payload::Age(w) => w.sealer().tag_digest(),
            Payload::AgeRt(w) => w.sealer().tag_digest(),
        }
    }

    /// Switches ASCII armor on. Call it before the first `update`/`flush`/`finish`; called
    /// later it poisons the encryptor ([`Error::Usage`]) rather than emit a half-armored file.
    pub fn armored(mut self) -> Self {
        if self.started() && self.armor.is_none() {
            self.state = Err(Error::Usage(
                "armored() must be called before any output".into(),
            ));
        }
        self.armor = Some(armor::Writer::new());
        self
    }

    /// The output format.
    pub fn format(&self) -> Format {
        self.format
    }

    fn run(
        &mut self,
        out: &mut Vec<u8>,
        step: impl FnOnce(&mut Payload, &mut Vec<u8>) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        match &self.state {
            Ok(false) => {}
            Ok(true) => return Err(Error::Usage("encryptor already finished".into())),
            Err(e) => return Err(e.clone()),
        }
        if let Err(e) = self.complete_header() {
            self.state = Err(e.clone());
            return Err(e);
        }
        let mut raw = Vec::new();
        let target = if self.armor.is_some() {
            &mut raw
        } else {
            &mut *out
        };
        if let Some(h) = self.header.take() {
            target.extend_from_slice(&h[self.intro_len..]);
        }
        let result = step(&mut self.payload, target);
        let finished = match result {
            Ok(f) => f,
            Err(e) => {
                self.state = Err(e.clone());
                return Err(e);
            }
        };
        if let Some(a) = &mut self.armor {
            a.push(&raw, out);
            if finished {
                a.finish(out);
            }
        }
        self.state = Ok(finished);
        Ok(())
    }

    /// [`update`](Self::update) (then [`flush`](Self::flush) if `flush`) of plaintext that
    /// lives outside this crate's memory, the ciphertext appended to `ext`'s output: the same
    /// bytes, with chunks sealed by the runtime's cipher straight from the input where one is
    /// registered ([`External`]).
    pub fn update_external(&mut self, ext: &mut dyn External, flush: bool) -> Result<(), Error> {
        if self.armor.is_some() || self.seekable {
            let mut input = Vec::new();
            ext.read(0..ext.len(), &mut input);
            let mut out = Vec::new();
            self.update(&input, &mut out)?;
            if flush {
                self.flush(&mut out)?;
            }
            ext.put(&out);
            return Ok(());
        }
        let mut head = Vec::new();
        self.run(&mut head, |_, _| Ok(false))?;
        ext.put(&head);
        let r = match &mut self.payload {
            Payload::Age(w) => w.push_external(ext),
            Payload::AgeRt(w) => w.push_external(ext, flush),
        };
        if let Err(e) = &r {
            self.state = Err(e.clone());
        }
        r
    }

    /// Encrypts `input`, appending whatever ciphertext is ready to `out`.
    pub fn update(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        self.run(out, |p, o| {
            match p {
                Payload::Age(w) => w.push(input, o)?,
                Payload::AgeRt(w) => w.push(input, o)?,
            }
            Ok(false)
        })
    }

    /// age-rt: emits buffered plaintext as one record now. age v1, and a
    /// [`seekable`](Self::seekable) encryptor: emits only the header (a chunk can't be emitted
    /// before it is full or final).
    pub fn flush(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        let seekable = self.seekable;
        self.run(out, |p, o| {
            if let Payload::AgeRt(w) = p {
                if !seekable {
                    w.flush(o)?;
                }
            }
            Ok(false)
        })
    }

    /// Emits the rest and the final chunk / record. Call exactly once.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        self.run(out, |p, o| {
            match p {
                Payload::Age(w) => w.finish(o)?,
                Payload::AgeRt(w) => w.finish(o)?,
            }
            Ok(true)
        })
    }
}

/// The split for an asynchronous cipher (used by the wasm adapter only).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl Encryptor {
    fn sealer(&self) -> &Sealer {
        match &self.payload {
            Payload::Age(w) => w.sealer(),
            Payload::AgeRt(w) => w.sealer(),
        }
    }

    fn sealer_mut(&mut self) -> &mut Sealer {
        match &mut self.payload {
            Payload::Age(w) => w.sealer_mut(),
            Payload::AgeRt(w) => w.sealer_mut(),
        }
    }

    /// For an asynchronous cipher (the SDK's WebCrypto path, `src/wasm/webcrypto.rs`): from now
    /// on every chunk is only handed out, in the output, as its plaintext followed by 16 bytes
    /// for the tag ([`seal_jobs`](Self::seal_jobs)); the caller seals it in place (ciphertext
    /// || tag, the same bytes as here) and gives it back with
    /// [`complete_seals`](Self::complete_seals) before the output goes anywhere. The framing,
    /// nonces, order and the tag digest stay here. Call it before any output and without
    /// armor; otherwise it poisons the encryptor ([`Error::Usage`]).
    pub(crate) fn defer_seals(mut self) -> Self {
        if self.header.is_none() || self.armor.is_some() {
            self.state = Err(Error::Usage(
                "defer_seals() must be called before any output, without armor".into(),
            ));
        }
        self.sealer_mut().defer();
        self
    }

    /// The chunks handed out and not completed yet, oldest first (offsets into the `out` of
    /// the call that handed each out).
    pub(crate) fn seal_jobs(&self) -> Vec<SealJob> {
        self.sealer().jobs()
    }

    /// Takes back the oldest `sealed.len()` chunks handed out, all in `out` (the buffer of the
    /// call that handed them out): `sealed[i]` says the caller sealed chunk i in place; the
    /// others (the caller's cipher failed) are sealed here.
    pub(crate) fn complete_seals(&mut self, out: &mut [u8], sealed: &[bool]) -> Result<(), Error> {
        let r = self.sealer_mut().complete(out, sealed);
        if let Err(e) = &r {
            self.state = Err(e.clone());
        }
        r
    }

    /// The payload key, for an asynchronous cipher to import ([`defer_seals`](Self::defer_seals)).
    pub(crate) fn payload_key(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(*self.sealer().key())
    }
}
