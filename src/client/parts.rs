//! Cutting a byte stream into segmented-upload parts (`PROTOCOL.md` §4) while holding at most
//! one part: chunks are split (as views, no copy) at part boundaries.

use crate::client::options::number_text;
use std::collections::VecDeque;

use super::error::{Error, ErrorCode};
use crate::protocol::upload::{
    DEFAULT_MAX_PART_BYTES as MAX_PART_SIZE, SDK_FIRST_PART_BYTES as FIRST_PART_SIZE,
    SDK_PART_BYTES as DEFAULT_PART_SIZE,
};

/// A piece of bytes that can be measured and split without copying (a `Uint8Array` view in
/// the bindings, a `Vec<u8>` in tests).
pub trait ByteChunk: Sized {
    fn byte_len(&self) -> usize;
    /// Splits into `[0, at)` and `[at, len)`; `0 < at < len`.
    fn split_at(self, at: usize) -> (Self, Self);
}

impl ByteChunk for Vec<u8> {
    fn byte_len(&self) -> usize {
        self.len()
    }
    fn split_at(mut self, at: usize) -> (Self, Self) {
        let tail = self.split_off(at);
        (self, tail)
    }
}

/// Validates a `partSize` option (bytes): 1 ..= 16 MiB; `None` → the default.
pub fn part_size(requested: Option<f64>) -> Result<usize, Error> {
    match requested {
        None => Ok(DEFAULT_PART_SIZE),
        Some(n) if n.fract() == 0.0 && n >= 1.0 && n <= MAX_PART_SIZE as f64 => Ok(n as usize),
        Some(n) => Err(Error::new(
            ErrorCode::Unsupported,
            format!(
                "`partSize` must be a whole number of bytes between 1 and {MAX_PART_SIZE}, got {}",
                number_text(n)
            ),
        )),
    }
}

/// Groups chunks into parts: the first of `min(size, FIRST_PART_SIZE)` bytes, then `size`.
pub struct PartCutter<T> {
    size: usize,
    next_target: usize,
    current: Vec<T>,
    current_len: usize,
    ready: VecDeque<Vec<T>>,
}

impl<T: ByteChunk> PartCutter<T> {
    /// A cutter into parts of `size` bytes (the first one smaller: see the type).
    pub fn new(size: usize) -> Self {
        let size = size.max(1);
        PartCutter {
            size,
            next_target: size.min(FIRST_PART_SIZE),
            current: Vec::new(),
            current_len: 0,
            ready: VecDeque::new(),
        }
    }

    /// Adds a chunk; full parts become available through [`PartCutter::pop_full`].
    pub fn push(&mut self, mut chunk: T) {
        loop {
            let len = chunk.byte_len();
            if len == 0 {
                return;
            }
            let room = self.next_target - self.current_len;
            if len < room {
                self.current_len += len;
                self.current.push(chunk);
                return;
            }
            let rest = if len > room {
                let (head, tail) = chunk.split_at(room);
                self.current.push(head);
                Some(tail)
            } else {
                self.current.push(chunk);
                None
            };
            self.ready.push_back(std::mem::take(&mut self.current));
            self.current_len = 0;
            self.next_target = self.size;
            match rest {
                Some(tail) => chunk = tail,
                None => return,
            }
        }
    }

    /// A complete part, if one is ready.
    pub fn pop_full(&mut self) -> Option<Vec<T>> {
        self.ready.pop_front()
    }

    /// Bytes held (complete parts waiting plus the part being filled).
    pub fn buffered(&self) -> usize {
        self.current_len
            + self
                .ready
                .iter()
                .flatten()
                .map(ByteChunk::byte_len)
                .sum::<usize>()
    }

    /// The end of the stream: the remaining full parts and then the last (maybe empty) one.
    pub fn finish(mut self) -> Vec<Vec<T>> {
        let mut out: Vec<Vec<T>> = self.ready.drain(..).collect();
        out.push(std::mem::take(&mut self.current));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lens(parts: &[Vec<Vec<u8>>]) -> Vec<usize> {
        parts.iter().map(|p| p.iter().map(Vec::len).sum()).collect()
    }

    #[test]
    fn first_part_is_small_then_full_size() {
        let mut c = PartCutter::new(100_000);
        let mut parts = Vec::new();
        for i in 0..300_000u32 / 1000 {
            c.push(vec![(i % 251) as u8; 1000]);
            while let Some(p) = c.pop_full() {
                parts.push(p);
            }
            assert!(c.buffered() <= 100_000);
        }
        parts.extend(c.finish());
        assert_eq!(lens(&parts), vec![65_536, 100_000, 100_000, 34_464]);
        let joined: Vec<u8> = parts.into_iter().flatten().flatten().collect();
        let expected: Vec<u8> = (0..300u32)
            .flat_map(|i| vec![(i % 251) as u8; 1000])
            .collect();
        assert_eq!(joined, expected);
    }

    #[test]
    fn a_huge_chunk_is_split_into_many_parts() {
        let mut c = PartCutter::new(10);
        c.push((0..35u8).collect());
        let mut parts = Vec::new();
        while let Some(p) = c.pop_full() {
            parts.push(p);
        }
        parts.extend(c.finish());
        assert_eq!(lens(&parts), vec![10, 10, 10, 5]);
    }

    #[test]
    fn exact_multiple_ends_with_an_empty_last_part() {
        let mut c = PartCutter::new(4);
        c.push(vec![1; 8]);
        assert_eq!(c.pop_full().map(|p| p.len()), Some(1));
        assert!(c.pop_full().is_some());
        assert_eq!(lens(&c.finish()), vec![0]);
        assert_eq!(lens(&PartCutter::<Vec<u8>>::new(4).finish()), vec![0]);
    }

    #[test]
    fn part_size_bounds() {
        assert_eq!(part_size(None).unwrap(), DEFAULT_PART_SIZE);
        assert_eq!(part_size(Some(4096.0)).unwrap(), 4096);
        assert!(part_size(Some(0.0)).is_err());
        assert!(part_size(Some(f64::NAN)).is_err());
        assert!(part_size(Some(32.0 * 1024.0 * 1024.0)).is_err());
    }
}
