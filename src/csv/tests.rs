//! The strict rules, the BOM and row numbers one by one; then properties over any input cut
//! into any chunks (proptest).

use super::*;
use proptest::prelude::*;

type Rows = Vec<Vec<Vec<u8>>>;

/// Feeds `input` cut at `cuts` (offsets, any order, clamped), then ends it: every record and
/// the error.
fn split_cut(delimiter: u8, input: &[u8], cuts: &[usize]) -> (Rows, Option<Error>) {
    let mut at: Vec<usize> = cuts.iter().map(|&c| c.min(input.len())).collect();
    at.sort_unstable();
    let mut sp = Splitter::new(delimiter, Units::Bytes).unwrap();
    let mut rows = Rows::new();
    let mut take = |sp: &Splitter, n: usize| {
        assert_eq!(sp.records().count(), n);
        assert_eq!(sp.counts().len(), n);
        rows.extend(
            sp.records()
                .map(|r| r.fields().map(<[u8]>::to_vec).collect()),
        );
    };
    let mut pos = 0;
    for &c in at.iter().chain([input.len()].iter()) {
        let n = sp.push(&input[pos..c]);
        take(&sp, n);
        pos = c;
        if sp.error().is_some() {
            break;
        }
    }
    let n = sp.finish();
    take(&sp, n);
    (rows, sp.error().copied())
}

fn split(input: &[u8]) -> (Rows, Option<Error>) {
    split_cut(b',', input, &[])
}

fn rows(rs: &[&[&str]]) -> Rows {
    rs.iter()
        .map(|r| r.iter().map(|f| f.as_bytes().to_vec()).collect())
        .collect()
}

fn err(row: u64, kind: ErrorKind) -> Option<Error> {
    Some(Error { row, kind })
}

#[test]
fn plain_and_quoted_fields_with_any_line_end() {
    let input = b"a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\n\"multi\r\nline\",\rlast,";
    let want = rows(&[
        &["a", "b"],
        &["x,y", "say \"hi\""],
        &["multi\r\nline", ""],
        &["last", ""],
    ]);
    assert_eq!(split(input), (want, None));
}

#[test]
fn blank_lines_are_skipped_and_an_empty_quoted_field_is_a_record() {
    assert_eq!(split(b"\r\n\na\n\n\"\"\n"), (rows(&[&["a"], &[""]]), None));
}

#[test]
fn a_quote_inside_an_unquoted_field_is_rejected_at_its_row() {
    let (got, e) = split(b"h\nok\nab\"c\nnever\n");
    assert_eq!(got, rows(&[&["h"], &["ok"]]));
    assert_eq!(e, err(3, ErrorKind::QuoteInUnquotedField));
    assert_eq!(
        e.unwrap().to_string(),
        "row 3: a quote inside an unquoted field (quote the whole field and double the quote)"
    );
    // After a delimiter the quote opens a field; after a space it does not.
    assert_eq!(split(b"a,\"b\"\n").1, None);
    assert_eq!(
        split(b"a, \"b\"\n").1,
        err(1, ErrorKind::QuoteInUnquotedField)
    );
}

#[test]
fn text_after_a_closing_quote_is_rejected() {
    let (got, e) = split(b"a\n\"b\"c\n");
    assert_eq!(got, rows(&[&["a"]]));
    assert_eq!(e, err(2, ErrorKind::TextAfterClosingQuote));
    assert_eq!(
        split(b"\"b\" \n").1,
        err(1, ErrorKind::TextAfterClosingQuote)
    );
    assert_eq!(
        split(b"\"b\";x\n").1,
        err(1, ErrorKind::TextAfterClosingQuote)
    );
    assert_eq!(
        split_cut(b';', b"\"b\";x\n", &[]),
        (rows(&[&["b", "x"]]), None)
    );
}

#[test]
fn an_unterminated_quoted_field_is_rejected_at_the_end() {
    let (got, e) = split(b"a\nb\n\"open,\r\nstill open");
    assert_eq!(got, rows(&[&["a"], &["b"]]));
    assert_eq!(e, err(3, ErrorKind::UnterminatedQuote));
    assert_eq!(split(b"\"a\"\"").1, err(1, ErrorKind::UnterminatedQuote));
}

#[test]
fn the_files_bom_is_dropped_even_split_and_a_second_is_data() {
    let input = b"\xef\xbb\xbfa,b\n";
    for cut in 0..input.len() {
        assert_eq!(
            split_cut(b',', input, &[cut, cut + 1]),
            (rows(&[&["a", "b"]]), None)
        );
    }
    let twice = b"\xef\xbb\xbf\xef\xbb\xbfa\n";
    let want = vec![vec![b"\xef\xbb\xbfa".to_vec()]];
    for cut in 0..twice.len() {
        assert_eq!(split_cut(b',', twice, &[cut]), (want.clone(), None));
    }
    // Part of a BOM is data; a BOM alone is no record.
    assert_eq!(split(b"\xef\xbb").0, vec![vec![b"\xef\xbb".to_vec()]]);
    assert_eq!(split(b"\xef\xbb\xbf"), (Rows::new(), None));
    // A BOM before a quote: the quote is at the start of the field.
    assert_eq!(split(b"\xef\xbb\xbf\"a\"\n"), (rows(&[&["a"]]), None));
}

#[test]
fn the_delimiter_is_one_ascii_byte_other_than_a_quote_cr_or_lf() {
    for d in [b'"', b'\r', b'\n', 0x80, 0xff] {
        assert_eq!(Splitter::new(d, Units::Bytes).err(), Some(BadDelimiter));
    }
    assert_eq!(
        BadDelimiter.to_string(),
        "`delimiter` must be one ASCII character other than a quote, CR or LF"
    );
    assert_eq!(
        split_cut(b'\t', b"a,b\tc\n", &[]),
        (rows(&[&["a,b", "c"]]), None)
    );
}

#[test]
fn a_spent_splitter_keeps_its_error_and_publishes_nothing() {
    let mut sp = Splitter::new(b',', Units::Bytes).unwrap();
    assert_eq!(sp.push(b"a\nb\"\nc\n"), 1);
    let e = sp.error().copied();
    assert_eq!(e, err(2, ErrorKind::QuoteInUnquotedField));
    assert_eq!((sp.push(b"d\n"), sp.error().copied()), (0, e));
    assert_eq!((sp.finish(), sp.error().copied()), (0, e));

    let mut sp = Splitter::new(b',', Units::Bytes).unwrap();
    assert_eq!((sp.push(b"a\nb"), sp.finish(), sp.finish()), (1, 1, 0));
    assert_eq!(sp.error(), None);
    assert_eq!(sp.push(b"c\n"), 0);
    assert_eq!(sp.error(), err(3, ErrorKind::AfterFinish).as_ref());
}

#[test]
fn rows_count_across_calls() {
    let mut sp = Splitter::new(b',', Units::Bytes).unwrap();
    assert_eq!(sp.push(b"a\nb\nc"), 2);
    assert_eq!(sp.push(b"\nd\n"), 2);
    assert_eq!(sp.rows_before(), 2);
    assert_eq!(sp.push(b"e\"\n"), 0);
    assert_eq!(sp.rows_before(), 4);
    assert_eq!(sp.error(), err(5, ErrorKind::QuoteInUnquotedField).as_ref());
}

#[test]
fn utf16_ends_count_javascript_string_units() {
    let mut sp = Splitter::new(b',', Units::Utf16).unwrap();
    assert_eq!(sp.push("é,€x,😀\nab,c\n".as_bytes()), 2);
    assert_eq!(sp.field_ends(), [1, 3, 5, 7, 8]);
    assert_eq!(sp.counts(), [3, 2]);
    assert_eq!(sp.push(b"ab,c\n"), 1);
    assert_eq!(sp.field_ends(), [2, 3]);
}

#[test]
fn invalid_utf8_names_its_row() {
    let mut sp = Splitter::new(b',', Units::Bytes).unwrap();
    assert_eq!(sp.push(b"a\nb\n"), 2);
    assert_eq!(sp.utf8_error(false), None);
    assert_eq!(sp.push(b"c\nd,\xff\ne\n"), 3);
    assert_eq!(sp.utf8_error(false), err(4, ErrorKind::InvalidUtf8));
    let mut sp = Splitter::new(b',', Units::Bytes).unwrap();
    sp.push(b"a\n\xe2\x82");
    assert_eq!(sp.finish(), 1);
    assert_eq!(sp.utf8_error(true), err(2, ErrorKind::Utf8CutAtEnd));
    assert_eq!(sp.utf8_error(false), err(2, ErrorKind::InvalidUtf8));
}

// ---- properties ------------------------------------------------------------------------------

/// RFC 4180 writing: a field is quoted when it must be (the delimiter, a quote, CR, LF; empty
/// as a record's only field, which would be a blank line; a leading BOM in the first field) or
/// when `quote` says so.
fn write(delimiter: u8, records: &[Vec<(Vec<u8>, bool)>], eols: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, record) in records.iter().enumerate() {
        for (k, (field, quote)) in record.iter().enumerate() {
            if k > 0 {
                out.push(delimiter);
            }
            let must = field
                .iter()
                .any(|&b| b == delimiter || matches!(b, b'"' | b'\r' | b'\n'))
                || (field.is_empty() && record.len() == 1)
                || (out.is_empty() && field.starts_with(BOM));
            if *quote || must {
                out.push(b'"');
                for &b in field {
                    out.extend_from_slice(if b == b'"' {
                        b"\"\""
                    } else {
                        std::slice::from_ref(&b)
                    });
                }
                out.push(b'"');
            } else {
                out.extend_from_slice(field);
            }
        }
        out.extend_from_slice(eols[i % eols.len()]);
    }
    out
}

/// Bytes that matter to CSV (and to the BOM and UTF-8) more often than chance would give them.
fn csv_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => prop::sample::select(b"a,;\"\r\n\t \xef\xbb\xbf\xe2\x82\xac\xff".to_vec()),
        1 => any::<u8>(),
    ]
}

fn delimiter() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => prop::sample::select(b",;\t|".to_vec()),
        1 => (0u8..0x80).prop_filter("not a quote, CR or LF", |d| !matches!(d, b'"' | b'\r' | b'\n')),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Records of any field bytes, written with RFC 4180 quoting and any line ends, split back
    /// into exactly those records, however the input is cut.
    #[test]
    fn written_records_split_back(
        d in delimiter(),
        records in prop::collection::vec(
            prop::collection::vec((prop::collection::vec(csv_byte(), 0..8), any::<bool>()), 1..5),
            0..8,
        ),
        eols in prop::collection::vec(prop::sample::select(vec![&b"\r\n"[..], b"\n", b"\r"]), 1..4),
        last_eol in any::<bool>(),
        bom in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut input = if bom { BOM.to_vec() } else { Vec::new() };
        input.extend(write(d, &records, &eols));
        if !last_eol && !records.is_empty() {
            // The last record needs no line end (unless it is one empty field).
            let last = records.last().unwrap();
            if !(last.len() == 1 && last[0].0.is_empty()) {
                let eol = eols[(records.len() - 1) % eols.len()];
                input.truncate(input.len() - eol.len());
            }
        }
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        let want: Rows = records.iter().map(|r| r.iter().map(|f| f.0.clone()).collect()).collect();
        prop_assert_eq!(split_cut(d, &input, &cuts), (want, None));
    }

    /// Any bytes, cut anywhere: the same records and the same error as in one piece, and no
    /// panic.
    #[test]
    fn chunking_changes_nothing(
        d in delimiter(),
        input in prop::collection::vec(csv_byte(), 0..64),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
        prop_assert_eq!(split_cut(d, &input, &cuts), split_cut(d, &input, &[]));
    }

    /// Any bytes: no panic, and the published shapes agree (field ends rise within the text,
    /// counts sum to the ends, UTF-16 ends match Rust's count for valid text).
    #[test]
    fn any_bytes_keep_the_shapes(
        d in delimiter(),
        input in prop::collection::vec(any::<u8>(), 0..256),
        cut in any::<usize>(),
    ) {
        let cut = cut % (input.len() + 1);
        let mut bytes = Splitter::new(d, Units::Bytes).unwrap();
        let mut utf16 = Splitter::new(d, Units::Utf16).unwrap();
        for chunk in [&input[..cut], &input[cut..], b""] {
            let (n, m) = if chunk.is_empty() {
                (bytes.finish(), utf16.finish())
            } else {
                (bytes.push(chunk), utf16.push(chunk))
            };
            prop_assert_eq!(n, m);
            prop_assert_eq!(bytes.error(), utf16.error());
            let ends = bytes.field_ends();
            prop_assert_eq!(bytes.counts().iter().map(|&c| c as usize).sum::<usize>(), ends.len());
            prop_assert!(ends.windows(2).all(|w| w[0] <= w[1]));
            prop_assert_eq!(ends.last().map_or(0, |&e| e as usize), bytes.text().len());
            let _ = bytes.utf8_error(chunk.is_empty());
            if let Ok(text) = std::str::from_utf8(bytes.text()) {
                let mut pos = 0;
                let want: Vec<u32> = ends.iter().map(|&e| {
                    let units = text[pos..e as usize].encode_utf16().count() as u32;
                    pos = e as usize;
                    units
                }).scan(0, |sum, u| { *sum += u; Some(*sum) }).collect();
                prop_assert_eq!(utf16.field_ends(), &want[..]);
            }
        }
    }
}
