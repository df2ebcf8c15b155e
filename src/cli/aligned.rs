//! The input buffer of the filter commands: a `BufReader` whose buffer starts on a page.
//!
//! `BufReader`'s buffer of 256 KiB comes from `malloc`, which maps it and hands out its first
//! page 16 bytes in. On AMD Zen 3 (the kernel copies with `rep movsb`) a `read()` into a
//! buffer that starts 1 to 31 bytes past a page cost 4 to 5 times what it costs into one that
//! starts on it: measured with a C loop of 256 KiB reads of 300 MB from the page cache,
//! 184-211 ms of CPU at offsets 1, 8, 16, 24; 32-46 ms at 0, 32, 48, 4064, 4095. On the bench's
//! clean lines that copy was a quarter of `toolmend args`'s time.

use std::io::{self, BufRead, Read};

/// What the buffer's start is aligned to.
const PAGE: usize = 4096;

/// A buffered reader of `R` (as `std::io::BufReader`) whose buffer starts on a page boundary.
pub struct Aligned<R> {
    inner: R,
    /// `PAGE` bytes more than the buffer, which is `storage[start..start + capacity]`.
    storage: Vec<u8>,
    start: usize,
    capacity: usize,
    /// The unread bytes are `storage[pos..filled]`.
    pos: usize,
    filled: usize,
}

impl<R: Read> Aligned<R> {
    /// A reader of `inner` with a buffer of `capacity` bytes.
    pub fn with_capacity(capacity: usize, inner: R) -> Aligned<R> {
        let storage = vec![0; capacity + PAGE];
        // (`align_offset` may, in principle, say it cannot: the buffer then starts anywhere.)
        let start = storage.as_ptr().align_offset(PAGE).min(PAGE);
        Aligned {
            inner,
            storage,
            start,
            capacity,
            pos: start,
            filled: start,
        }
    }

    /// Reads into the buffer, which holds no unread byte.
    #[inline(never)]
    fn refill(&mut self) -> io::Result<()> {
        let buf = &mut self.storage[self.start..self.start + self.capacity];
        self.filled = self.start + self.inner.read(buf)?;
        self.pos = self.start;
        Ok(())
    }
}

impl<R: Read> Read for Aligned<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // As `BufReader`: with nothing buffered, a read of at least the buffer's size goes
        // straight to the inner reader.
        if self.pos == self.filled && out.len() >= self.capacity {
            return self.inner.read(out);
        }
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Aligned<R> {
    // Inlined, the read out of line: the filters call these twice per line.
    #[inline]
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.filled {
            self.refill()?;
        }
        Ok(&self.storage[self.pos..self.filled])
    }

    #[inline]
    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.filled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer starts on a page, and what is read through it is the stream, whatever the
    /// sizes of the reads and of the buffer.
    #[test]
    fn reads_the_stream_through_a_buffer_on_a_page() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for capacity in [1, 7, 4096, 65536] {
            let reader = Aligned::with_capacity(capacity, &data[..]);
            assert_eq!(reader.storage[reader.start..].as_ptr() as usize % PAGE, 0);
            // Through fill_buf and consume, a few bytes at a time.
            let mut reader = reader;
            let mut got = Vec::new();
            loop {
                let chunk = reader.fill_buf().unwrap();
                if chunk.is_empty() {
                    break;
                }
                let take = chunk.len().min(got.len() % 13 + 1);
                got.extend_from_slice(&chunk[..take]);
                reader.consume(take);
            }
            assert_eq!(got, data, "{capacity}");
            // Through read, with reads smaller and larger than the buffer.
            let mut reader = Aligned::with_capacity(capacity, &data[..]);
            let mut got = Vec::new();
            let mut piece = vec![0; 70_000];
            for size in [3, 5000, 70_000].into_iter().cycle() {
                let n = reader.read(&mut piece[..size]).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&piece[..n]);
            }
            assert_eq!(got, data, "{capacity}");
        }
    }
}
