//! CSV splitting in the wasm module (`csv.decode`, issue #9), on BurntSushi's `csv-core`:
//! bytes in, complete records out as one buffer of unescaped field bytes plus field ends in
//! UTF-16 code units (so JavaScript decodes the buffer once with a `TextDecoder` and slices
//! the fields out of that string) and the number of fields of each record.
//!
//! `csv-core` never fails (it prefers *a* parse over none), so the strict parts of RFC 4180
//! are checked here, over the raw bytes: a quote only at the start of a field, nothing but a
//! delimiter or a line end after a closing quote, no unterminated quoted field; and the
//! field bytes must be UTF-8 (checked by the caller's fatal `TextDecoder`; `badUtf8` then names
//! the row). Errors name the row (1-based, the header counts).

use csv_core::{ReadRecordResult, Reader, ReaderBuilder};
use js_sys::{Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// The quote-structure check, carried across chunks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quotes {
    /// Outside quotes; `prev_start`: the last byte seen ends a field or a row (or nothing yet).
    Outside { prev_start: bool },
    /// Inside a quoted field.
    Inside,
    /// A quote inside a quoted field as the last byte seen: closing, or the first of `""`.
    QuoteSeen,
}

/// Splits CSV bytes into records (`CsvSplitter` in JavaScript).
#[wasm_bindgen(js_name = CsvSplitter)]
pub struct JsCsvSplitter {
    rdr: Reader,
    delim: u8,
    quotes: Quotes,
    /// Bytes of a possible BOM seen so far (at most 3, only at the very start).
    bom: Vec<u8>,
    started: bool,
    /// Bytes were given to `csv-core`.
    fed: bool,
    /// Unescaped field bytes: complete records (`out[..published]`), then the partial one.
    out: Vec<u8>,
    out_len: usize,
    published: usize,
    /// Field ends of the record being read, relative to its start (as `csv-core` gives them).
    rec_ends: Vec<usize>,
    rec_nends: usize,
    /// Published: field ends (bytes, then UTF-16 units) from `out[0]`, fields per record.
    ends: Vec<u32>,
    counts: Vec<u32>,
    /// Published: where each record ends in `out` (bytes), for [`JsCsvSplitter::bad_utf8`].
    record_ends: Vec<u32>,
    /// Records completed before this call (header included).
    rows: u64,
    /// Why the last call stopped early.
    error: Option<String>,
}

fn err(row: u64, what: &str) -> String {
    format!("csv.decode: row {row}: {what}")
}

#[wasm_bindgen(js_class = CsvSplitter)]
impl JsCsvSplitter {
    /// `delimiter`: one ASCII byte other than a quote, CR or LF.
    #[wasm_bindgen(constructor)]
    pub fn new(delimiter: u8) -> Result<JsCsvSplitter, JsError> {
        if !delimiter.is_ascii() || matches!(delimiter, b'"' | b'\r' | b'\n') {
            return Err(JsError::new(
                "csv.decode: `delimiter` must be one ASCII character other than a quote, CR or LF",
            ));
        }
        Ok(JsCsvSplitter {
            rdr: ReaderBuilder::new().delimiter(delimiter).build(),
            delim: delimiter,
            quotes: Quotes::Outside { prev_start: true },
            bom: Vec::new(),
            started: false,
            fed: false,
            out: vec![0; 1 << 16],
            out_len: 0,
            published: 0,
            rec_ends: vec![0; 64],
            rec_nends: 0,
            ends: Vec::new(),
            counts: Vec::new(),
            record_ends: Vec::new(),
            rows: 0,
            error: None,
        })
    }

    /// Reads `chunk`; returns the number of records completed (read them with `text`, `ends`,
    /// `counts` before the next call), then check `error`: bad input stops the records there.
    pub fn push(&mut self, chunk: &[u8]) -> u32 {
        self.begin();
        if let Err(e) = self.push_bytes(chunk) {
            self.error = Some(e);
        }
        self.publish()
    }

    /// The end of input: the last record (if not ended by a line end); then check `error`.
    pub fn finish(&mut self) -> u32 {
        self.begin();
        if let Err(e) = self.finish_bytes() {
            self.error = Some(e);
        }
        self.publish()
    }

    /// Why the last call stopped early (the message names the row), if it did.
    pub fn error(&self) -> Option<String> {
        self.error.clone()
    }

    /// The field bytes of the records of the last call. A view into wasm memory: decode it
    /// before calling into the module again.
    pub fn text(&self) -> Uint8Array {
        // SAFETY: a view of `out`; the caller decodes it before the next call into the module
        // (nothing in between can grow or free the buffer).
        unsafe { Uint8Array::view(&self.out[..self.published]) }
    }

    /// The field ends (UTF-16 code units from the start of `text`) of the last call's
    /// records. A view, like `text`.
    pub fn ends(&self) -> Uint32Array {
        // SAFETY: as for `text`.
        unsafe { Uint32Array::view(&self.ends) }
    }

    /// The number of fields of each record of the last call. A view, like `text`.
    pub fn counts(&self) -> Uint32Array {
        // SAFETY: as for `text`.
        unsafe { Uint32Array::view(&self.counts) }
    }
}

impl JsCsvSplitter {
    fn push_bytes(&mut self, chunk: &[u8]) -> Result<(), String> {
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

    fn finish_bytes(&mut self) -> Result<(), String> {
        if !self.started {
            let held = std::mem::take(&mut self.bom);
            self.started = true;
            if held.as_slice() != BOM {
                self.split(&held)?;
            }
        }
        if self.quotes == Quotes::Inside {
            return Err(err(
                self.rows + self.counts.len() as u64 + 1,
                "unterminated quoted field at end of input",
            ));
        }
        self.read(&[], true);
        Ok(())
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
        self.error = None;
    }

    /// Checks the quoting of `input`, then splits the good part into records.
    fn split(&mut self, input: &[u8]) -> Result<(), String> {
        match self.check_quotes(input) {
            Ok(()) => {
                self.read(input, false);
                Ok(())
            }
            Err((at, what)) => {
                self.read(&input[..at], false);
                Err(err(self.rows + self.counts.len() as u64 + 1, what))
            }
        }
    }

    /// The quote structure of `input` (RFC 4180, strict): the offset of the first bad byte.
    fn check_quotes(&mut self, input: &[u8]) -> Result<(), (usize, &'static str)> {
        let d = self.delim;
        let ends_field = |b: u8| b == d || b == b'\r' || b == b'\n';
        let mut i = 0;
        let n = input.len();
        while i < n {
            match self.quotes {
                Quotes::Outside { prev_start } => match memchr::memchr(b'"', &input[i..]) {
                    None => {
                        self.quotes = Quotes::Outside {
                            prev_start: if n > i {
                                ends_field(input[n - 1])
                            } else {
                                prev_start
                            },
                        };
                        return Ok(());
                    }
                    Some(k) => {
                        let q = i + k;
                        let at_start = if q > i {
                            ends_field(input[q - 1])
                        } else {
                            prev_start
                        };
                        if !at_start {
                            return Err((
                                q,
                                "a quote inside an unquoted field (quote the whole field and double the quote)",
                            ));
                        }
                        self.quotes = Quotes::Inside;
                        i = q + 1;
                    }
                },
                Quotes::Inside => match memchr::memchr(b'"', &input[i..]) {
                    None => return Ok(()),
                    Some(k) => {
                        self.quotes = Quotes::QuoteSeen;
                        i += k + 1;
                    }
                },
                Quotes::QuoteSeen => {
                    let b = input[i];
                    if b == b'"' {
                        self.quotes = Quotes::Inside;
                    } else if ends_field(b) {
                        self.quotes = Quotes::Outside { prev_start: true };
                    } else {
                        return Err((i, "text after the closing quote of a quoted field"));
                    }
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// Runs `csv-core` over `input` (empty: the end of input, to `csv-core`; so a chunk that
    /// is empty is not passed on), collecting complete records.
    fn read(&mut self, mut input: &[u8], at_end: bool) {
        if input.is_empty() && !at_end {
            return;
        }
        if !self.fed && input.len() >= BOM.len() {
            // csv-core drops a BOM at the start of its first input; the file's BOM is gone
            // already (`push`), so a second one is data: start with one byte.
            self.fed = true;
            self.read(&input[..1], false);
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
                    let start = self.out_len - self.rec_ends[self.rec_nends - 1];
                    for &e in &self.rec_ends[..self.rec_nends] {
                        self.ends.push((start + e) as u32);
                    }
                    self.counts.push(self.rec_nends as u32);
                    self.record_ends.push(self.out_len as u32);
                    self.rec_nends = 0;
                    self.published = self.out_len;
                    if at_end {
                        return;
                    }
                }
                ReadRecordResult::InputEmpty | ReadRecordResult::End => return,
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

    /// Turns the field ends into UTF-16 units (the text is UTF-8-validated by the caller's
    /// fatal `TextDecoder`; [`JsCsvSplitter::bad_utf8`] finds the row if it is not).
    fn publish(&mut self) -> u32 {
        let text = &self.out[..self.published];
        if text.is_ascii() {
            return self.counts.len() as u32;
        }
        let mut units = 0u32;
        let mut pos = 0usize;
        for e in self.ends.iter_mut() {
            let end = *e as usize;
            let field = &text[pos..end];
            if field.is_ascii() {
                units += field.len() as u32;
            } else {
                for &b in field {
                    units += u32::from(b & 0xc0 != 0x80) + u32::from(b >= 0xf0);
                }
            }
            pos = end;
            *e = units;
        }
        self.counts.len() as u32
    }
}

#[wasm_bindgen(js_class = CsvSplitter)]
impl JsCsvSplitter {
    /// After the caller's `TextDecoder` rejected `text`: the message naming the row (1-based,
    /// the header counts) of the first invalid UTF-8; `at_end`: the text came from `finish`.
    #[wasm_bindgen(js_name = badUtf8)]
    pub fn bad_utf8(&self, at_end: bool) -> String {
        let text = &self.out[..self.published];
        let (bad, cut) = match std::str::from_utf8(text) {
            Ok(_) => (text.len(), false),
            Err(e) => (e.valid_up_to(), e.error_len().is_none()),
        };
        // The first record that ends after the bad byte.
        let record = self
            .record_ends
            .iter()
            .take_while(|&&e| e as usize <= bad)
            .count();
        let what = if cut && at_end {
            "invalid UTF-8 (a sequence cut short at the end of input)"
        } else {
            "invalid UTF-8"
        };
        format!("csv.decode: row {}: {what}", self.rows + record as u64 + 1)
    }
}
