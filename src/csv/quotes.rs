//! The strict quote structure of RFC 4180 §2 (rules 5–7), checked over raw bytes and carried
//! across chunks: `csv-core` accepts any quoting (it prefers *a* parse over none).

use super::ErrorKind;

/// Where the last byte seen left the quoting.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Outside quotes; `at_start`: the last byte seen ends a field or a row (or none yet), so
    /// a quote next opens a quoted field.
    Outside { at_start: bool },
    /// Inside a quoted field.
    Inside,
    /// A quote inside a quoted field as the last byte seen: closing, or the first of `""`.
    QuoteSeen,
}

/// The quote check of one input, fed in chunks.
#[derive(Clone, Debug)]
pub(super) struct QuoteCheck {
    delimiter: u8,
    state: State,
}

impl QuoteCheck {
    pub(super) fn new(delimiter: u8) -> QuoteCheck {
        QuoteCheck {
            delimiter,
            state: State::Outside { at_start: true },
        }
    }

    /// The input so far ends inside a quoted field (its closing quote not seen yet).
    pub(super) fn inside(&self) -> bool {
        self.state == State::Inside
    }

    /// Checks the next `input` bytes: `Err((offset, why))` names the first bad byte of
    /// `input` (the state is then undefined: the input is rejected from there on).
    pub(super) fn check(&mut self, input: &[u8]) -> Result<(), (usize, ErrorKind)> {
        let d = self.delimiter;
        let ends_field = |b: u8| b == d || b == b'\r' || b == b'\n';
        let mut i = 0;
        let n = input.len();
        while i < n {
            match self.state {
                State::Outside { at_start } => match memchr::memchr(b'"', &input[i..]) {
                    None => {
                        self.state = State::Outside {
                            at_start: ends_field(input[n - 1]),
                        };
                        return Ok(());
                    }
                    Some(k) => {
                        let q = i + k;
                        let quote_at_start = if q > i {
                            ends_field(input[q - 1])
                        } else {
                            at_start
                        };
                        if !quote_at_start {
                            return Err((q, ErrorKind::QuoteInUnquotedField));
                        }
                        self.state = State::Inside;
                        i = q + 1;
                    }
                },
                State::Inside => match memchr::memchr(b'"', &input[i..]) {
                    None => return Ok(()),
                    Some(k) => {
                        self.state = State::QuoteSeen;
                        i += k + 1;
                    }
                },
                State::QuoteSeen => {
                    let b = input[i];
                    if b == b'"' {
                        self.state = State::Inside;
                    } else if ends_field(b) {
                        self.state = State::Outside { at_start: true };
                    } else {
                        return Err((i, ErrorKind::TextAfterClosingQuote));
                    }
                    i += 1;
                }
            }
        }
        Ok(())
    }
}
