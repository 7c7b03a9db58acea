//! The wasm binding of the CSV splitter (`CsvSplitter`, behind `csv.decode` in
//! `js/pipeline/csv.js`, issue #9): a thin wrapper over [`crate::csv::Splitter`] (the strict
//! RFC 4180 rules, the BOM, row numbers) that hands JavaScript views of its buffers. The field
//! ends are UTF-16 code units, so JavaScript decodes the text once with a fatal `TextDecoder`
//! and slices the fields out of that string (`badUtf8` names the row if it rejects the text).

use crate::csv::{BadDelimiter, Error, ErrorKind, Splitter, Units};
use js_sys::{Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;

/// Splits CSV bytes into records (`CsvSplitter` in JavaScript).
#[wasm_bindgen(js_name = CsvSplitter)]
pub struct JsCsvSplitter {
    inner: Splitter,
}

#[wasm_bindgen(js_class = CsvSplitter)]
impl JsCsvSplitter {
    /// `delimiter`: one ASCII byte other than a quote, CR or LF.
    #[wasm_bindgen(constructor)]
    pub fn new(delimiter: u8) -> Result<JsCsvSplitter, JsError> {
        match Splitter::new(delimiter, Units::Utf16) {
            Ok(inner) => Ok(JsCsvSplitter { inner }),
            Err(_) => Err(JsError::new(
                &["csv.decode: ", BadDelimiter::MESSAGE].concat(),
            )),
        }
    }

    /// Reads `chunk`; returns the number of records completed (read them with `text`, `ends`,
    /// `counts` before the next call), then check `error`: bad input stops the records there.
    pub fn push(&mut self, chunk: &[u8]) -> u32 {
        self.inner.push(chunk) as u32
    }

    /// The end of input: the last record (if not ended by a line end); then check `error`.
    pub fn finish(&mut self) -> u32 {
        self.inner.finish() as u32
    }

    /// Why the last call stopped early (the message names the row), if it did.
    pub fn error(&self) -> Option<String> {
        self.inner.error().map(message)
    }

    /// The field bytes of the records of the last call. A view into wasm memory: decode it
    /// before calling into the module again.
    pub fn text(&self) -> Uint8Array {
        // SAFETY: a view of the splitter's buffer; the caller decodes it before the next call
        // into the module (nothing in between can grow or free the buffer).
        unsafe { Uint8Array::view(self.inner.text()) }
    }

    /// The field ends (UTF-16 code units from the start of `text`) of the last call's
    /// records. A view, like `text`.
    pub fn ends(&self) -> Uint32Array {
        // SAFETY: as for `text`.
        unsafe { Uint32Array::view(self.inner.field_ends()) }
    }

    /// The number of fields of each record of the last call. A view, like `text`.
    pub fn counts(&self) -> Uint32Array {
        // SAFETY: as for `text`.
        unsafe { Uint32Array::view(self.inner.counts()) }
    }

    /// After the caller's `TextDecoder` rejected `text`: the message naming the row (1-based,
    /// the header counts) of the first invalid UTF-8; `at_end`: the text came from `finish`.
    #[wasm_bindgen(js_name = badUtf8)]
    pub fn bad_utf8(&self, at_end: bool) -> String {
        // Valid text (the decoder held bytes of an earlier call): the row after these records.
        let e = self.inner.utf8_error(at_end).unwrap_or(Error {
            row: self.inner.rows_before() + self.inner.counts().len() as u64 + 1,
            kind: ErrorKind::InvalidUtf8,
        });
        message(&e)
    }
}

/// `csv.decode: row {row}: {why}` (one format for both kinds of error: less code than
/// `Error`'s `Display` under a prefix).
fn message(e: &Error) -> String {
    format!("csv.decode: row {}: {}", e.row, e.kind.message())
}
