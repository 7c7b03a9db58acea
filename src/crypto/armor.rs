//! ASCII armor (C2SP age §"ASCII armor"): strict PEM-like framing with padded standard base64
//! in 64-column lines, `\n` or `\r\n` line endings, optional whitespace around the block.

use super::Error;
use crate::protocol::base64::STANDARD;
use crate::text::quoted;

pub(crate) const BEGIN: &str = "-----BEGIN AGE ENCRYPTED FILE-----";
pub(crate) const END: &str = "-----END AGE ENCRYPTED FILE-----";
const COLUMNS: usize = 64;
const BYTES_PER_LINE: usize = COLUMNS / 4 * 3;
/// Whitespace accepted before and after the armored block.
pub(crate) fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Streaming armor encoder: emits full 64-column lines as soon as 48 bytes are available.
pub(crate) struct Writer {
    started: bool,
    pending: Vec<u8>,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Writer {
            started: false,
            pending: Vec::with_capacity(BYTES_PER_LINE),
        }
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            out.extend_from_slice(BEGIN.as_bytes());
            out.push(b'\n');
            self.started = true;
        }
    }

    fn line(data: &[u8], out: &mut Vec<u8>) {
        STANDARD.encode_into(data, out);
        out.push(b'\n');
    }

    pub(crate) fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        self.start(out);
        if !self.pending.is_empty() {
            let take = input.len().min(BYTES_PER_LINE - self.pending.len());
            self.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.pending.len() < BYTES_PER_LINE {
                return;
            }
            Self::line(&self.pending, out);
            self.pending.clear();
        }
        let mut chunks = input.chunks_exact(BYTES_PER_LINE);
        for c in &mut chunks {
            Self::line(c, out);
        }
        self.pending.extend_from_slice(chunks.remainder());
    }

    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        self.start(out);
        if !self.pending.is_empty() {
            Self::line(&self.pending, out);
            self.pending.clear();
        }
        out.extend_from_slice(END.as_bytes());
        out.push(b'\n');
    }
}

#[derive(PartialEq, Eq)]
enum State {
    Leading,
    Begin,
    Body { last_seen: bool },
    Trailing,
}

/// Streaming armor decoder: line by line, at most one line (66 bytes) buffered.
pub(crate) struct Reader {
    state: State,
    line: Vec<u8>,
}

impl Reader {
    pub(crate) fn new() -> Self {
        Reader {
            state: State::Leading,
            line: Vec::new(),
        }
    }

    /// Appends decoded bytes of `input` to `out`.
    pub(crate) fn push(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        for &b in input {
            match self.state {
                State::Leading if is_whitespace(b) => continue,
                State::Leading => self.state = State::Begin,
                State::Trailing if is_whitespace(b) => continue,
                State::Trailing => return Err(Error::armor("data after the END line")),
                _ => {}
            }
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                self.end_line(&line, out)?;
            } else {
                if self.line.len() > COLUMNS + 1 {
                    return Err(Error::armor("line longer than 64 columns"));
                }
                self.line.push(b);
                // random bytes are no armor: say so at their first byte that can't begin it
                if matches!(self.state, State::Begin) && !may_begin(&self.line) {
                    return Err(not_an_age_file());
                }
            }
        }
        Ok(())
    }

    fn end_line(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        match self.state {
            State::Begin => {
                if line != BEGIN.as_bytes() {
                    return Err(not_an_age_file());
                }
                self.state = State::Body { last_seen: false };
            }
            State::Body { last_seen } => {
                if line == END.as_bytes() {
                    self.state = State::Trailing;
                    return Ok(());
                }
                if last_seen {
                    return Err(Error::armor(
                        "a short or padded line must be followed by the END line",
                    ));
                }
                if line.is_empty() || line.len() > COLUMNS {
                    return Err(Error::armor("base64 lines must have 1 to 64 columns"));
                }
                let decoded = STANDARD
                    .decode(line)
                    .ok_or_else(|| Error::armor("invalid or non-canonical base64 line"))?;
                out.extend_from_slice(&decoded);
                self.state = State::Body {
                    last_seen: line.len() < COLUMNS || line.ends_with(b"="),
                };
            }
            State::Leading | State::Trailing => {}
        }
        Ok(())
    }

    /// End of input: a last line without newline is accepted; the END line must have been seen.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.end_line(&line, out)?;
        }
        match self.state {
            State::Trailing => Ok(()),
            State::Leading => Err(Error::armor("empty input")),
            _ => Err(Error::armor(format!("missing END line {}", quoted(END)))),
        }
    }
}

/// Whether `line` (the first line so far) can still become the BEGIN line (with its `\r`).
fn may_begin(line: &[u8]) -> bool {
    let begin = BEGIN.as_bytes();
    match line.split_last() {
        Some((b'\r', head)) if head == begin => true,
        _ => begin.starts_with(line),
    }
}

/// Input that begins with none of the three starts of ciphertext.
fn not_an_age_file() -> Error {
    Error::armor(format!(
        "not an age file: the first line must be {} (armored), \
         age-encryption.org/v1 or the age-rt version line",
        quoted(BEGIN)
    ))
}
