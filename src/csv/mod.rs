//! Strict RFC 4180 CSV splitting on BurntSushi's `csv-core`: bytes in (cut anywhere), complete
//! records out. Target-independent; the wasm binding `CsvSplitter` (`src/wasm/csv.rs`, behind
//! `csv.decode` in `js/pipeline/csv.js`) is a thin wrapper over [`Splitter`].
//!
//! The input is RFC 4180 (§2) with any ASCII delimiter: records end at CRLF, LF or CR; blank
//! lines are skipped; a field is quoted (`"a,b"`, a quote inside doubled: `""`) or not. A
//! leading UTF-8 BOM (`EF BB BF`) is dropped (a second one is data). `csv-core` never fails,
//! so the strict rules are checked here over the raw bytes, each an [`ErrorKind`]:
//!
//! - a quote only at the start of a field ([`ErrorKind::QuoteInUnquotedField`]);
//! - nothing but a delimiter or a line end after a closing quote
//!   ([`ErrorKind::TextAfterClosingQuote`]);
//! - no unterminated quoted field at the end of input ([`ErrorKind::UnterminatedQuote`]).
//!
//! Field bytes are not decoded: [`Splitter::utf8_error`] names the row of invalid UTF-8 for a
//! caller that needs text. Errors name the row, 1-based, counting every record (a header too).
//!
//! ```
//! use httpipe::csv::{Splitter, Units};
//!
//! let mut sp = Splitter::new(b',', Units::Bytes).unwrap();
//! assert_eq!(sp.push(b"\xef\xbb\xbfname,note\r\nada,\"say \"\"hi\"\"\"\r\nbob,x"), 2);
//! let rows: Vec<Vec<&[u8]>> = sp.records().map(|r| r.fields().collect()).collect();
//! assert_eq!(rows, [vec![&b"name"[..], b"note"], vec![b"ada", b"say \"hi\""]]);
//! assert_eq!(sp.finish(), 1); // "bob,x": the last record needs no line end
//! assert!(sp.error().is_none());
//!
//! let mut sp = Splitter::new(b',', Units::Bytes).unwrap();
//! assert_eq!(sp.push(b"a,b\nc,d\"\n"), 1); // the records before the bad byte, then the error
//! assert_eq!(sp.error().unwrap().to_string(),
//!     "row 2: a quote inside an unquoted field (quote the whole field and double the quote)");
//! ```

mod quotes;
#[cfg(test)]
mod tests;

use csv_core::{ReadRecordResult, Reader, ReaderBuilder};
use quotes::QuoteCheck;
use std::fmt;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// Why the input was rejected (see [`Error`] for the row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A quote inside an unquoted field, e.g. `a"b` (RFC 4180 §2 rule 5).
    QuoteInUnquotedField,
    /// Text after the closing quote of a quoted field, e.g. `"a"b` (§2 rule 7).
    TextAfterClosingQuote,
    /// The input ended inside a quoted field.
    UnterminatedQuote,
    /// The field bytes of a record are not UTF-8 ([`Splitter::utf8_error`] only).
    InvalidUtf8,
    /// A UTF-8 sequence cut short by the end of input ([`Splitter::utf8_error`] only).
    Utf8CutAtEnd,
    /// The records of one call need over 4 GiB of field bytes: push smaller chunks.
    TooLarge,
    /// [`Splitter::push`] after [`Splitter::finish`].
    AfterFinish,
}

impl ErrorKind {
    /// What is wrong, in words (an [`Error`] adds the row).
    pub fn message(self) -> &'static str {
        match self {
            ErrorKind::QuoteInUnquotedField => {
                "a quote inside an unquoted field (quote the whole field and double the quote)"
            }
            ErrorKind::TextAfterClosingQuote => "text after the closing quote of a quoted field",
            ErrorKind::UnterminatedQuote => "unterminated quoted field at end of input",
            ErrorKind::InvalidUtf8 => "invalid UTF-8",
            ErrorKind::Utf8CutAtEnd => "invalid UTF-8 (a sequence cut short at the end of input)",
            ErrorKind::TooLarge => "over 4 GiB in one call",
            ErrorKind::AfterFinish => "push after finish",
        }
    }
}

/// Bad input: the row (1-based, every record counts, a header too) and why. Displays as
/// `row {row}: {why}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    /// The record holding the bad byte, 1-based.
    pub row: u64,
    /// Why.
    pub kind: ErrorKind,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "row {}: {}", self.row, self.kind.message())
    }
}

impl std::error::Error for Error {}

/// A delimiter that is not one ASCII byte other than a quote, CR or LF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadDelimiter;

impl BadDelimiter {
    /// What is wrong, in words (its `Display`).
    pub const MESSAGE: &'static str =
        "`delimiter` must be one ASCII character other than a quote, CR or LF";
}

impl fmt::Display for BadDelimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(BadDelimiter::MESSAGE)
    }
}

impl std::error::Error for BadDelimiter {}

/// The unit of [`Splitter::field_ends`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Units {
    /// Bytes of [`Splitter::text`].
    Bytes,
    /// UTF-16 code units of `text` decoded as UTF-8 (JavaScript string offsets); a byte that
    /// starts a UTF-8 sequence counts 1, 2 for a 4-byte sequence (valid text assumed).
    Utf16,
}

/// Splits CSV bytes, pushed in chunks of any size, into records.
///
/// Each [`push`](Splitter::push) or [`finish`](Splitter::finish) publishes the records it
/// completed, readable until the next call: [`text`](Splitter::text) (their field bytes,
/// unescaped, back to back), [`field_ends`](Splitter::field_ends) and
/// [`counts`](Splitter::counts) (flat arrays), or [`records`](Splitter::records). Bad input
/// stops the records at its row: the call publishes the records before it and sets
/// [`error`](Splitter::error); the splitter is then spent (later calls publish nothing and keep
/// the error), as it is after `finish`.
#[derive(Clone, Debug)]
pub struct Splitter {
    rdr: Reader,
    quotes: QuoteCheck,
    units: Units,
    /// Bytes of a possible BOM seen so far (at most 3, only at the very start).
    bom: Vec<u8>,
    started: bool,
    /// Bytes were given to `csv-core`.
    fed: bool,
    finished: bool,
    /// Unescaped field bytes: complete records (`out[..published]`), then the partial one.
    out: Vec<u8>,
    out_len: usize,
    published: usize,
    /// Field ends of the record being read, relative to its start (as `csv-core` gives them).
    rec_ends: Vec<usize>,
    rec_nends: usize,
    /// Published: field ends in bytes from `out[0]`; the same in UTF-16 units when `units` asks
    /// for them and the text is not ASCII (`utf16_differs`); fields per record.
    ends: Vec<u32>,
    ends16: Vec<u32>,
    utf16_differs: bool,
    counts: Vec<u32>,
    /// Published: where each record ends in `out` (bytes), for [`Splitter::utf8_error`].
    record_ends: Vec<u32>,
    /// Records completed before this call (header included).
    rows: u64,
    error: Option<Error>,
}

impl Splitter {
    /// A splitter for fields separated by `delimiter` (one ASCII byte other than a quote, CR or
    /// LF), giving field ends in `units`.
    pub fn new(delimiter: u8, units: Units) -> Result<Splitter, BadDelimiter> {
        if !delimiter.is_ascii() || matches!(delimiter, b'"' | b'\r' | b'\n') {
            return Err(BadDelimiter);
        }
        Ok(Splitter {
            rdr: ReaderBuilder::new().delimiter(delimiter).build(),
            quotes: QuoteCheck::new(delimiter),
            units,
            bom: Vec::new(),
            started: false,
            fed: false,
            finished: false,
            out: vec![0; 1 << 16],
            out_len: 0,
            published: 0,
            rec_ends: vec![0; 64],
            rec_nends: 0,
            ends: Vec::new(),
            ends16: Vec::new(),
            utf16_differs: false,
            counts: Vec::new(),
            record_ends: Vec::new(),
            rows: 0,
            error: None,
        })
    }

    /// Reads the next `chunk` of input; returns the number of records it completed. Then check
    /// [`error`](Splitter::error): bad input stops the records there.
    pub fn push(&mut self, chunk: &[u8]) -> usize {
        self.begin();
        if self.error.is_none() {
            let res = if self.finished {
                Err(ErrorKind::AfterFinish)
            } else {
                self.push_bytes(chunk)
            };
            self.fail_on(res);
        }
        self.publish()
    }

    /// The end of input: returns the number of records completed (the last one, if no line end
    /// ended it). Then check [`error`](Splitter::error). Calling it again publishes nothing.
    pub fn finish(&mut self) -> usize {
        self.begin();
        if self.error.is_none() && !self.finished {
            self.finished = true;
            let res = self.finish_bytes();
            self.fail_on(res);
        }
        self.publish()
    }

    /// Why the last call stopped early (and every call since), if it did.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// Records completed before the last call (a header included).
    pub fn rows_before(&self) -> u64 {
        self.rows
    }

    /// The field bytes of the last call's records, unescaped, back to back.
    pub fn text(&self) -> &[u8] {
        &self.out[..self.published]
    }

    /// Where each field of the last call's records ends, from the start of
    /// [`text`](Splitter::text), in the [`Units`] given to [`Splitter::new`]; all fields of all
    /// records in order ([`counts`](Splitter::counts) groups them).
    pub fn field_ends(&self) -> &[u32] {
        if self.utf16_differs {
            &self.ends16
        } else {
            &self.ends
        }
    }

    /// The number of fields (at least 1) of each of the last call's records.
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    /// The last call's records.
    pub fn records(&self) -> Records<'_> {
        Records {
            text: self.text(),
            ends: &self.ends,
            counts: self.counts.iter(),
            start: 0,
        }
    }

    /// The first invalid UTF-8 in [`text`](Splitter::text), naming its record's row
    /// ([`ErrorKind::InvalidUtf8`]; [`ErrorKind::Utf8CutAtEnd`] for a sequence cut short at
    /// the end of `text` when `at_end`: the text came from [`finish`](Splitter::finish)). `None`
    /// if the text is UTF-8.
    pub fn utf8_error(&self, at_end: bool) -> Option<Error> {
        let e = std::str::from_utf8(self.text()).err()?;
        let bad = e.valid_up_to();
        // The first record that ends after the bad byte.
        let record = self
            .record_ends
            .iter()
            .take_while(|&&end| end as usize <= bad)
            .count();
        let kind = if e.error_len().is_none() && at_end {
            ErrorKind::Utf8CutAtEnd
        } else {
            ErrorKind::InvalidUtf8
        };
        Some(Error {
            row: self.rows + record as u64 + 1,
            kind,
        })
    }

    fn push_bytes(&mut self, chunk: &[u8]) -> Result<(), ErrorKind> {
        let mut input = chunk;
        if !self.started {
            // The BOM may come split over chunks: hold its bytes until it is decided.
            let take = (BOM.len() - self.bom.len()).min(input.len());
            self.bom.extend_from_slice(&input[..take]);
            input = &input[take..];
            if !BOM.starts_with(&self.bom) {
                self.started = true;
                let held = std::mem::take(&mut self.bom);
                self.split(&held)?;
            } else if self.bom.len() == BOM.len() {
                self.started = true;
            } else {
                return Ok(());
            }
        }
        self.split(input)
    }

    fn finish_bytes(&mut self) -> Result<(), ErrorKind> {
        if !self.started {
            let held = std::mem::take(&mut self.bom);
            self.started = true;
            if held.as_slice() != BOM {
                self.split(&held)?;
            }
        }
        if self.quotes.inside() {
            return Err(ErrorKind::UnterminatedQuote);
        }
        self.read(&[], true)
    }

    /// Records `res`'s error, naming the row being read.
    fn fail_on(&mut self, res: Result<(), ErrorKind>) {
        if let Err(kind) = res {
            let row = self.rows + self.counts.len() as u64 + 1;
            self.error = Some(Error { row, kind });
        }
    }

    /// Drops what the last call published; the partial record moves to the front.
    fn begin(&mut self) {
        self.rows += self.counts.len() as u64;
        self.out.copy_within(self.published..self.out_len, 0);
        self.out_len -= self.published;
        self.published = 0;
        self.ends.clear();
        self.counts.clear();
        self.record_ends.clear();
        self.utf16_differs = false;
    }

    /// Checks the quoting of `input`, then splits the good part into records.
    fn split(&mut self, input: &[u8]) -> Result<(), ErrorKind> {
        match self.quotes.check(input) {
            Ok(()) => self.read(input, false),
            Err((at, kind)) => {
                self.read(&input[..at], false)?;
                Err(kind)
            }
        }
    }

    /// Runs `csv-core` over `input` (empty: the end of input, to `csv-core`; so a chunk that
    /// is empty is not passed on), collecting complete records.
    fn read(&mut self, mut input: &[u8], at_end: bool) -> Result<(), ErrorKind> {
        if input.is_empty() && !at_end {
            return Ok(());
        }
        if !self.fed && input.len() >= BOM.len() {
            // csv-core drops a BOM at the start of its first input; the file's BOM is gone
            // already (`push_bytes`), so a second one is data: start with one byte.
            self.fed = true;
            self.read(&input[..1], false)?;
            input = &input[1..];
        }
        self.fed = true;
        loop {
            let (res, nin, nout, nend) = self.rdr.read_record(
                input,
                &mut self.out[self.out_len..],
                &mut self.rec_ends[self.rec_nends..],
            );
            input = &input[nin..];
            self.out_len += nout;
            self.rec_nends += nend;
            match res {
                ReadRecordResult::Record => {
                    self.end_record()?;
                    if at_end {
                        return Ok(());
                    }
                }
                ReadRecordResult::InputEmpty | ReadRecordResult::End => return Ok(()),
                ReadRecordResult::OutputFull => {
                    let len = self.out.len() * 2;
                    self.out.resize(len, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let len = self.rec_ends.len() * 2;
                    self.rec_ends.resize(len, 0);
                }
            }
        }
    }

    /// Publishes the record `csv-core` just completed.
    fn end_record(&mut self) -> Result<(), ErrorKind> {
        let fields = &self.rec_ends[..self.rec_nends];
        let start = self.out_len - fields.last().copied().unwrap_or(0);
        let (Ok(record_end), Ok(count)) =
            (u32::try_from(self.out_len), u32::try_from(fields.len()))
        else {
            return Err(ErrorKind::TooLarge);
        };
        // `start + e` is at most `out_len`, which fits.
        for &e in fields {
            self.ends.push((start + e) as u32);
        }
        self.counts.push(count);
        self.record_ends.push(record_end);
        self.rec_nends = 0;
        self.published = self.out_len;
        Ok(())
    }

    /// Fills the UTF-16 field ends if asked for and the text is not ASCII; the record count.
    fn publish(&mut self) -> usize {
        let text = &self.out[..self.published];
        if self.units == Units::Bytes || text.is_ascii() {
            return self.counts.len();
        }
        self.ends16.clear();
        let mut units = 0u32;
        let mut pos = 0usize;
        for &e in &self.ends {
            let end = e as usize;
            let field = &text[pos..end];
            if field.is_ascii() {
                units += field.len() as u32;
            } else {
                for &b in field {
                    units += u32::from(b & 0xc0 != 0x80) + u32::from(b >= 0xf0);
                }
            }
            pos = end;
            self.ends16.push(units);
        }
        self.utf16_differs = true;
        self.counts.len()
    }
}

/// The records of one call ([`Splitter::records`]).
#[derive(Clone, Debug)]
pub struct Records<'a> {
    text: &'a [u8],
    ends: &'a [u32],
    counts: std::slice::Iter<'a, u32>,
    start: usize,
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        let n = *self.counts.next()? as usize;
        let ends = self.ends.get(..n)?;
        self.ends = &self.ends[n..];
        let record = Record {
            text: self.text,
            start: self.start,
            ends,
        };
        self.start = ends.last().map_or(self.start, |&e| e as usize);
        Some(record)
    }
}

/// One record: its fields' unescaped bytes.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    text: &'a [u8],
    start: usize,
    ends: &'a [u32],
}

impl<'a> Record<'a> {
    /// The number of fields (at least 1).
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Never true: a record has at least one field (a blank line is no record).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The fields' bytes, in order.
    pub fn fields(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let text = self.text;
        let mut pos = self.start;
        self.ends.iter().map(move |&e| {
            let field = &text[pos..e as usize];
            pos = e as usize;
            field
        })
    }
}
