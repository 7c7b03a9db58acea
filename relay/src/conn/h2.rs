//! The HTTP/2 frames a connection writes, read as they pass (`docs/PROTOCOL.md` §3.2): when
//! each stream's `END_STREAM` is written and how many DATA bytes the stream carried. hyper
//! hands a response's bytes to h2, which writes them when flow control and the connection's
//! writer let it, possibly long after the response body ended; only the frames tell when they
//! are in the socket. Frame headers are decoded (RFC 9113 §4.1), payloads skipped; nothing is
//! copied or buffered beyond one 9-byte header.

use std::collections::HashMap;

/// RFC 9113 §6: frame types and the flag read here.
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const END_STREAM: u8 = 0x1;
const HEADER_LEN: usize = 9;
/// Open streams remembered at most (hyper's limit of concurrent streams is 4096): beyond it the
/// oldest are forgotten, so streams reset by the peer (never ended by us) can't pile up.
const MAX_OPEN: usize = 8192;

/// A stream whose response ended on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StreamEnd {
    pub id: u32,
    /// DATA payload bytes the stream carried (h2 never pads what it sends).
    pub data: u64,
}

/// The parser over the bytes the server writes (the connection preface aside, a server's
/// writes are frames from the first byte).
#[derive(Debug, Default)]
pub(super) struct Frames {
    head: [u8; HEADER_LEN],
    have: usize,
    /// Payload bytes of the current frame still to skip.
    skip: usize,
    /// DATA bytes written so far per stream not yet ended.
    open: HashMap<u32, u64>,
    /// HEADERS and DATA frames of streams written so far (their headers read).
    pub stream_frames: u64,
}

impl Frames {
    /// Reads `buf` (the next bytes written); `ended` gets every stream whose `END_STREAM` is
    /// in it, in order.
    pub fn feed(&mut self, mut buf: &[u8], ended: &mut impl FnMut(StreamEnd)) {
        while !buf.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(buf.len());
                self.skip -= n;
                buf = &buf[n..];
                continue;
            }
            let n = (HEADER_LEN - self.have).min(buf.len());
            self.head[self.have..self.have + n].copy_from_slice(&buf[..n]);
            self.have += n;
            buf = &buf[n..];
            if self.have == HEADER_LEN {
                self.have = 0;
                self.frame(ended);
            }
        }
    }

    /// A complete frame header is in `head`.
    fn frame(&mut self, ended: &mut impl FnMut(StreamEnd)) {
        let h = &self.head;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let (kind, flags) = (h[3], h[4]);
        let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        self.skip = len;
        if id == 0 {
            return;
        }
        match kind {
            DATA | HEADERS => {
                self.stream_frames += 1;
                let data = if kind == DATA { len as u64 } else { 0 };
                if flags & END_STREAM != 0 {
                    let data = self.open.remove(&id).unwrap_or(0) + data;
                    ended(StreamEnd { id, data });
                } else {
                    if !self.open.contains_key(&id) && self.open.len() >= MAX_OPEN {
                        self.forget_oldest();
                    }
                    *self.open.entry(id).or_insert(0) += data;
                }
            }
            RST_STREAM => {
                self.open.remove(&id);
            }
            _ => {}
        }
    }

    fn forget_oldest(&mut self) {
        if let Some(&oldest) = self.open.keys().min() {
            self.open.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, id: u32, len: usize) -> Vec<u8> {
        let l = (len as u32).to_be_bytes();
        let mut f = vec![l[1], l[2], l[3], kind, flags];
        f.extend_from_slice(&id.to_be_bytes());
        f.extend(std::iter::repeat_n(7u8, len));
        f
    }

    fn ends_of(bytes: &[u8], step: usize) -> Vec<StreamEnd> {
        let mut p = Frames::default();
        let mut out = Vec::new();
        for chunk in bytes.chunks(step) {
            p.feed(chunk, &mut |e| out.push(e));
        }
        out
    }

    #[test]
    fn streams_end_with_their_data_counted_across_any_split() {
        let mut w = frame(0x4, 0, 0, 18); // SETTINGS
        w.extend(frame(HEADERS, 0x4, 1, 30));
        w.extend(frame(HEADERS, 0x4, 3, 12));
        w.extend(frame(DATA, 0, 1, 16384));
        w.extend(frame(DATA, 0, 3, 5));
        w.extend(frame(0x6, 0, 0, 8)); // PING
        w.extend(frame(DATA, 0, 1, 100));
        w.extend(frame(DATA, END_STREAM, 3, 0));
        w.extend(frame(DATA, END_STREAM, 1, 1));
        w.extend(frame(HEADERS, 0x4 | END_STREAM, 5, 20)); // no body
        w.extend(frame(HEADERS, 0x4, 7, 20));
        w.extend(frame(DATA, 0, 7, 9));
        w.extend(frame(RST_STREAM, 0, 7, 4));
        let want = vec![
            StreamEnd { id: 3, data: 5 },
            StreamEnd { id: 1, data: 16485 },
            StreamEnd { id: 5, data: 0 },
        ];
        for step in [1, 2, 7, 9, 10, 4096, w.len()] {
            assert_eq!(ends_of(&w, step), want, "split every {step} bytes");
        }
    }

    #[test]
    fn open_streams_are_bounded() {
        let mut p = Frames::default();
        for id in 0..(MAX_OPEN as u32 + 10) {
            p.feed(&frame(HEADERS, 0x4, 2 * id + 1, 0), &mut |_| {});
        }
        assert_eq!(p.open.len(), MAX_OPEN);
        assert!(!p.open.contains_key(&1), "the oldest is forgotten first");
    }
}
