//! The age header: version line, stanzas, MAC (C2SP age §"Header"; PROTOCOL.md §7–§8).
//!
//! ```text
//! age-encryption.org/v1                      (or github.com/parsimonit/age-rt-encryption/v0.2)
//! -> TYPE ARG...                             one line per stanza, args are VCHAR strings
//! BASE64 BODY (64 columns, last line shorter, possibly empty)
//! --- BASE64(HMAC-SHA-256)                   MAC over everything up to and including "---"
//! ```

use super::base64;
use super::keys::{header_mac, FileKey};
use super::{Error, Format};
use crate::text::quoted;
use hmac::Mac;

/// First line of an age v1 file.
pub(crate) const AGE_V1_LINE: &str = "age-encryption.org/v1";
/// First line of an age-rt v0.2 stream.
pub(crate) const AGE_RT_LINE: &str = "github.com/parsimonit/age-rt-encryption/v0.2";
/// Maximum header size of age-rt (PROTOCOL.md §8).
pub(crate) const AGE_RT_MAX_HEADER: usize = 4096;
const BODY_COLUMNS: usize = 64;

/// One recipient stanza: `-> tag args...` and its decoded body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stanza {
    pub tag: String,
    pub args: Vec<String>,
    pub body: Vec<u8>,
}

/// A parsed header. `mac_input` is the byte length of the header up to and including `---`.
#[derive(Debug)]
pub(crate) struct Header {
    pub format: Format,
    pub stanzas: Vec<Stanza>,
    pub mac: [u8; 32],
    pub mac_input: usize,
}

impl Format {
    pub(crate) fn version_line(self) -> &'static str {
        match self {
            Format::Age => AGE_V1_LINE,
            Format::AgeRt => AGE_RT_LINE,
        }
    }
}

/// Writes a complete header (with MAC line) for `stanzas` under `file_key`.
pub(crate) fn write(format: Format, stanzas: &[Stanza], file_key: &FileKey) -> Vec<u8> {
    let mut h = String::new();
    h.push_str(format.version_line());
    h.push('\n');
    for s in stanzas {
        h.push_str("-> ");
        h.push_str(&s.tag);
        for a in &s.args {
            h.push(' ');
            h.push_str(a);
        }
        h.push('\n');
        let b = base64::encode(&s.body);
        let mut rest = b.as_str();
        loop {
            let (line, tail) = rest.split_at(rest.len().min(BODY_COLUMNS));
            h.push_str(line);
            h.push('\n');
            rest = tail;
            if line.len() < BODY_COLUMNS {
                break;
            }
        }
    }
    h.push_str("---");
    let mac = header_mac(file_key, h.as_bytes()).finalize().into_bytes();
    h.push(' ');
    h.push_str(&base64::encode(&mac));
    h.push('\n');
    h.into_bytes()
}

/// Result of scanning a header prefix for its end.
pub(crate) enum Scan {
    /// Need more bytes.
    Incomplete,
    /// The header is `len` bytes long (through the newline of the MAC line).
    Complete(usize),
}

/// Finds the end of the header in `buf` (the first complete line starting with `---`).
/// Enforces the size cap (`age_v1_cap` for age v1, 4 KiB for age-rt) and detects the legacy
/// zebrastream format (a bare `---` line) and unknown first lines early.
pub(crate) fn scan(buf: &[u8], age_v1_cap: usize) -> Result<Scan, Error> {
    let first_end = buf.iter().position(|&b| b == b'\n');
    let cap = match first_end {
        Some(i) => match version(&buf[..i])? {
            Format::Age => age_v1_cap,
            Format::AgeRt => AGE_RT_MAX_HEADER,
        },
        None => {
            check_version_prefix(buf)?;
            return Ok(Scan::Incomplete);
        }
    };
    let mut start = first_end.unwrap_or(0) + 1;
    while let Some(rel) = buf[start..].iter().position(|&b| b == b'\n') {
        let line = &buf[start..start + rel];
        let end = start + rel + 1;
        if end > cap {
            return Err(Error::HeaderTooLarge { limit: cap });
        }
        if line == b"---" {
            return Err(Error::UnsupportedLegacyFormat);
        }
        if line.starts_with(b"---") {
            return Ok(Scan::Complete(end));
        }
        start = end;
    }
    if buf.len() > cap {
        return Err(Error::HeaderTooLarge { limit: cap });
    }
    Ok(Scan::Incomplete)
}

fn version(line: &[u8]) -> Result<Format, Error> {
    if line == AGE_V1_LINE.as_bytes() {
        Ok(Format::Age)
    } else if line == AGE_RT_LINE.as_bytes() {
        Ok(Format::AgeRt)
    } else if line.starts_with(b"age-encryption.org/")
        || line.starts_with(b"github.com/parsimonit/")
    {
        Err(Error::header(format!(
            "unsupported version line {} (expected {} or {})",
            quoted(&String::from_utf8_lossy(line)),
            quoted(AGE_V1_LINE),
            quoted(AGE_RT_LINE)
        )))
    } else {
        Err(Error::header(
            "not an age or age-rt file (unknown first line)",
        ))
    }
}

/// Fails early if a partial first line can't become a known version line.
fn check_version_prefix(buf: &[u8]) -> Result<(), Error> {
    let n = buf.len();
    let ok = [AGE_V1_LINE, AGE_RT_LINE]
        .iter()
        .any(|v| v.as_bytes().starts_with(&buf[..n.min(v.len())]) && n <= v.len());
    if ok || buf.starts_with(b"age-encryption.org/") {
        Ok(())
    } else {
        Err(Error::header(
            "not an age or age-rt file (unknown first line)",
        ))
    }
}

/// Parses a complete header (as delimited by [`scan`]).
pub(crate) fn parse(buf: &[u8]) -> Result<Header, Error> {
    let text = std::str::from_utf8(buf).map_err(|_| Error::header("header is not ASCII"))?;
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    let format = version(first.trim_end_matches('\n').as_bytes())?;
    let mut stanzas = Vec::new();
    let mut offset = first.len();
    let mut lines = lines.peekable();
    while let Some(raw) = lines.next() {
        let line = raw
            .strip_suffix('\n')
            .ok_or_else(|| Error::header("header ends without a newline"))?;
        if let Some(mac_b64) = line.strip_prefix("--- ") {
            let mac = base64::decode_exact::<32>(mac_b64)
                .ok_or_else(|| Error::header("MAC line is not canonical base64 of 32 bytes"))?;
            if lines.next().is_some() {
                return Err(Error::header("data after the MAC line"));
            }
            return Ok(Header {
                format,
                stanzas,
                mac,
                mac_input: offset + 3,
            });
        }
        let rest = line.strip_prefix("-> ").ok_or_else(|| {
            Error::header(format!(
                "expected a stanza or MAC line, got {}",
                quoted(line)
            ))
        })?;
        let args: Vec<&str> = rest.split(' ').collect();
        if args
            .iter()
            .any(|a| a.is_empty() || !a.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        {
            return Err(Error::header(
                "stanza argument empty or with characters outside ASCII 0x21-0x7E",
            ));
        }
        offset += raw.len();
        let mut body_b64 = String::new();
        loop {
            let raw = lines
                .next()
                .ok_or_else(|| Error::header("stanza body is missing its final short line"))?;
            let bl = raw
                .strip_suffix('\n')
                .ok_or_else(|| Error::header("header ends without a newline"))?;
            offset += raw.len();
            if bl.len() > BODY_COLUMNS {
                return Err(Error::header("stanza body line longer than 64 columns"));
            }
            if bl.starts_with("-") {
                return Err(Error::header("stanza body is missing its final short line"));
            }
            body_b64.push_str(bl);
            if bl.len() < BODY_COLUMNS {
                break;
            }
        }
        let body = base64::decode(&body_b64)
            .ok_or_else(|| Error::header("stanza body is not canonical unpadded base64"))?;
        stanzas.push(Stanza {
            tag: args[0].to_string(),
            args: args[1..].iter().map(|s| s.to_string()).collect(),
            body,
        });
    }
    Err(Error::header("header has no MAC line"))
}

/// Checks the header MAC in constant time.
pub(crate) fn verify_mac(header: &Header, raw: &[u8], file_key: &FileKey) -> Result<(), Error> {
    header_mac(file_key, &raw[..header.mac_input])
        .verify_slice(&header.mac)
        .map_err(|_| Error::HeaderMac)
}
