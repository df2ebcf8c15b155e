//! Input framing: cutting a byte stream into inputs (`lines`, `jsonl`, `whole`).
//!
//! Each input is read into one buffer that is reused; a line longer than the size limit is
//! skipped past without being kept (only its first bytes are, for the error record), so memory
//! stays bounded whatever arrives.

use std::borrow::Cow;
use std::io::{self, BufRead};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{Code, Error};

/// How the input stream is cut into inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// Each line is one input; a trailing `\r` is dropped.
    #[default]
    Lines,
    /// Each line is a JSON string, or an object with the text in `text`, `content` or
    /// `arguments` and an optional `id`.
    Jsonl,
    /// All of the stream is one input.
    Whole,
}

/// One framed input, before it is decoded.
#[derive(Debug)]
pub enum RawInput<'a> {
    /// The input's bytes (line ending removed).
    Bytes(&'a [u8]),
    /// The input was longer than the limit: its first bytes and its length.
    TooLarge {
        /// The first bytes of the input.
        head: &'a [u8],
        /// Its length in bytes.
        len: u64,
    },
}

/// How many bytes of an oversized input are kept, for its error record.
const HEAD: usize = 512;

/// Reads framed inputs from a stream, one at a time.
pub struct InputReader<R> {
    inner: R,
    whole: bool,
    max_bytes: usize,
    buf: Vec<u8>,
    line: u64,
    done: bool,
    /// Bytes of the reader's buffer lent out as the last input, consumed at the next call.
    lent: usize,
}

impl<R: BufRead> InputReader<R> {
    /// A reader of `inner` that cuts it as `framing` says, refusing inputs over `max_bytes`.
    pub fn new(inner: R, framing: Framing, max_bytes: usize) -> InputReader<R> {
        InputReader {
            inner,
            whole: framing == Framing::Whole,
            max_bytes,
            buf: Vec::new(),
            line: 0,
            done: false,
            lent: 0,
        }
    }

    /// The next input and its 1-based number, or `None` at the end of the stream.
    ///
    /// # Errors
    /// Only a failure to read the stream; bad content is for the caller to report.
    pub fn next_input(&mut self) -> io::Result<Option<(u64, RawInput<'_>)>> {
        self.inner.consume(std::mem::take(&mut self.lent));
        // A whole line in the reader's buffer is lent as it stands, not copied (past the first
        // line, whose byte order mark is taken off).
        if !self.whole && !self.done && self.line > 0 {
            let end = match self.inner.fill_buf() {
                // The end of the stream: at a terminal (Ctrl-D) a second read would wait for
                // more typing, so it is not read again below.
                Ok([]) => {
                    self.done = true;
                    return Ok(None);
                }
                Ok(chunk) => memchr::memchr(b'\n', chunk).filter(|&end| end <= self.max_bytes),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
                Err(e) => return Err(e),
            };
            if let Some(end) = end {
                self.lent = end + 1;
                self.line += 1;
                // The buffer just filled, given again without a read.
                let chunk = self.inner.fill_buf()?;
                let line = &chunk[..end];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                return Ok(Some((self.line, RawInput::Bytes(line))));
            }
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let framed = self.read_into(&mut buf);
        self.buf = buf;
        Ok(framed?.map(|(line, too_large)| {
            let raw = match too_large {
                Some(len) => RawInput::TooLarge {
                    head: &self.buf,
                    len,
                },
                None => RawInput::Bytes(&self.buf),
            };
            (line, raw)
        }))
    }

    /// Appends the next input to `buf` and returns its 1-based number and, when it was longer
    /// than the limit, its length (only its first bytes were appended); `None` at the end of
    /// the stream. Lets a caller gather many inputs in one buffer without copying them twice.
    ///
    /// # Errors
    /// Only a failure to read the stream.
    pub fn read_into(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<(u64, Option<u64>)>> {
        self.inner.consume(std::mem::take(&mut self.lent));
        if self.done {
            return Ok(None);
        }
        let start = buf.len();
        let mut len: u64 = 0;
        let mut any = false;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                self.done = true;
                break;
            }
            any = true;
            let (take, used, ended) = match (self.whole, memchr::memchr(b'\n', chunk)) {
                (false, Some(i)) => (i, i + 1, true),
                _ => (chunk.len(), chunk.len(), false),
            };
            len += take as u64;
            let over = len > self.max_bytes as u64;
            // Within the limit everything is kept; past it, only the head, for the record.
            let keep = if over {
                buf.truncate(start + HEAD);
                (start + HEAD).saturating_sub(buf.len()).min(take)
            } else {
                take
            };
            buf.extend_from_slice(&chunk[..keep]);
            self.inner.consume(used);
            if ended {
                break;
            }
        }
        // An empty stream has no lines, but as a whole it is one (empty) input.
        if !(any || self.whole && self.line == 0) {
            return Ok(None);
        }
        self.line += 1;
        if self.line == 1 && buf[start..].starts_with(b"\xEF\xBB\xBF") {
            // A byte order mark starts the stream, not the first input.
            buf.drain(start..start + 3);
            len -= 3;
        }
        if len > self.max_bytes as u64 {
            return Ok(Some((self.line, Some(len))));
        }
        if !self.whole && buf.len() > start && buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some((self.line, None)))
    }
}

/// The error of an input of `len` bytes over `--max-bytes` (`max_bytes`).
pub(crate) fn too_large(len: u64, max_bytes: usize) -> Error {
    Error::whole(
        Code::TooLarge,
        format!("input is {len} bytes, more than the limit of {max_bytes} bytes"),
    )
}

/// The members of a jsonl object that carry the input's text, in the order they are looked up.
pub(crate) const JSONL_TEXT_MEMBERS: [&str; 3] = ["text", "content", "arguments"];

/// A decoded input: its text, and the `id` of a jsonl line (as JSON text).
#[derive(Debug)]
pub struct Decoded<'a> {
    /// The text to mend.
    pub text: Cow<'a, str>,
    /// The line's `id`, when it had one.
    pub id: Option<&'a str>,
}

#[derive(Deserialize)]
struct JsonlObject<'a> {
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// `bytes` as text, or `invalid_utf8` at the first bad byte. The block-at-a-time check
/// (simdutf8) says only whether the bytes are UTF-8; std's finds where they are not.
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, Error> {
    simdutf8::basic::from_utf8(bytes).or_else(|_| {
        std::str::from_utf8(bytes)
            .map_err(|e| Error::at(Code::InvalidUtf8, e.valid_up_to(), "invalid UTF-8"))
    })
}

/// Checks that an input is UTF-8 and, for jsonl, takes the text (and id) out of its line.
///
/// # Errors
/// `invalid_utf8` at the first bad byte; for jsonl, `invalid_input` for a line that is not a
/// JSON string or an object carrying the text.
pub fn decode_input(bytes: &[u8], framing: Framing) -> Result<Decoded<'_>, Error> {
    let text = utf8(bytes)?;
    if framing != Framing::Jsonl {
        return Ok(Decoded {
            text: Cow::Borrowed(text),
            id: None,
        });
    }
    let trimmed = text.trim_ascii();
    if trimmed.starts_with('"') {
        let text = serde_json::from_str::<String>(trimmed).map_err(|e| jsonl_error(&e))?;
        return Ok(Decoded {
            text: Cow::Owned(text),
            id: None,
        });
    }
    let object = serde_json::from_str::<JsonlObject<'_>>(trimmed).map_err(|e| jsonl_error(&e))?;
    let id = object.id.map(RawValue::get);
    let Some(raw) = object.text.or(object.content).or(object.arguments) else {
        return Err(Error::whole(
            Code::InvalidInput,
            "jsonl line has no \"text\", \"content\" or \"arguments\"",
        ));
    };
    let raw = raw.get();
    let text = match raw.as_bytes()[0] {
        b'"' => Cow::Owned(serde_json::from_str::<String>(raw).map_err(|e| jsonl_error(&e))?),
        // `null` arguments: nothing was given.
        b'n' => Cow::Borrowed(""),
        // Arguments given as a JSON value rather than as text: that value's text.
        _ => Cow::Borrowed(raw),
    };
    Ok(Decoded { text, id })
}

fn jsonl_error(e: &serde_json::Error) -> Error {
    Error::whole(
        Code::InvalidInput,
        format!(
            "jsonl line is not a JSON string or an object with \"text\", \"content\" or \"arguments\": {e}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(data: &[u8], framing: Framing, max: usize) -> Vec<String> {
        let mut reader = InputReader::new(data, framing, max);
        let mut seen = Vec::new();
        while let Some((n, input)) = reader.next_input().unwrap() {
            seen.push(match input {
                RawInput::Bytes(b) => format!("{n}:{}", String::from_utf8_lossy(b)),
                RawInput::TooLarge { len, .. } => format!("{n}:too large {len}"),
            });
        }
        seen
    }

    /// Lines lent from the reader's buffer (`next_input`) are the lines copied out of it
    /// (`read_into`), whatever the buffer's size: lines cut by its end, `\r`, empty lines, a
    /// byte order mark, lines over the limit and a last line without a newline.
    #[test]
    fn lent_lines_are_the_lines_copied() {
        let data: &[u8] =
            b"\xEF\xBB\xBF{\"a\":1}\r\n\nxyz\r\r\n0123456789abcdef\n\r\n\xff\xfe\nlast";
        for max in [3, 5, 10, 100] {
            for capacity in [1, 2, 3, 5, 7, 16, 64, 4096] {
                let mut copied = Vec::new();
                let mut reader = InputReader::new(
                    std::io::BufReader::with_capacity(capacity, data),
                    Framing::Lines,
                    max,
                );
                let mut buf = Vec::new();
                while let Some((n, too_large)) = reader.read_into(&mut buf).unwrap() {
                    let text = String::from_utf8_lossy(&buf);
                    copied.push(match too_large {
                        Some(len) => format!("{n}:too large {len}"),
                        None => format!("{n}:{text}"),
                    });
                    buf.clear();
                }
                let reader = std::io::BufReader::with_capacity(capacity, data);
                let mut lent = InputReader::new(reader, Framing::Lines, max);
                let mut seen = Vec::new();
                while let Some((n, input)) = lent.next_input().unwrap() {
                    seen.push(match input {
                        RawInput::Bytes(b) => format!("{n}:{}", String::from_utf8_lossy(b)),
                        RawInput::TooLarge { len, .. } => format!("{n}:too large {len}"),
                    });
                }
                assert_eq!(seen, copied, "capacity {capacity}, max {max}");
                assert_eq!(seen.len(), 7);
            }
        }
    }

    /// A terminal's end of input (Ctrl-D) is one read of nothing, and the next read waits for
    /// more typing: the stream ends at the first empty read, which is not made twice.
    #[test]
    fn the_first_empty_read_ends_the_stream() {
        /// Gives its parts one read each: an empty part is an end of input, after which more
        /// comes (as at a terminal); then nothing.
        struct Terminal(Vec<&'static [u8]>);
        impl std::io::Read for Terminal {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let part = if self.0.is_empty() {
                    &b""[..]
                } else {
                    self.0.remove(0)
                };
                buf[..part.len()].copy_from_slice(part);
                Ok(part.len())
            }
        }
        let terminal = Terminal(vec![b"a\n", b"b\n", b"", b"typed after the end\n"]);
        let mut reader = InputReader::new(std::io::BufReader::new(terminal), Framing::Lines, 100);
        let mut seen = Vec::new();
        while let Some((n, input)) = reader.next_input().unwrap() {
            if let RawInput::Bytes(b) = input {
                seen.push(format!("{n}:{}", String::from_utf8_lossy(b)));
            }
        }
        assert_eq!(seen, ["1:a", "2:b"]);
    }

    #[test]
    fn lines_drop_cr_and_bom() {
        assert_eq!(
            frames(b"\xEF\xBB\xBFa\r\nb\n\nc", Framing::Lines, 100),
            ["1:a", "2:b", "3:", "4:c"]
        );
        assert_eq!(frames(b"", Framing::Lines, 100), Vec::<String>::new());
    }

    #[test]
    fn an_oversized_line_is_skipped_not_kept() {
        let mut data = vec![b'x'; 10_000];
        data.extend_from_slice(b"\nok\n");
        let mut reader = InputReader::new(
            std::io::BufReader::with_capacity(64, &data[..]),
            Framing::Lines,
            100,
        );
        match reader.next_input().unwrap() {
            Some((1, RawInput::TooLarge { head, len })) => {
                assert_eq!(len, 10_000);
                assert!(head.len() <= HEAD);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            reader.next_input().unwrap(),
            Some((2, RawInput::Bytes(b"ok")))
        ));
        assert!(reader.next_input().unwrap().is_none());
    }

    #[test]
    fn whole_is_one_input() {
        assert_eq!(frames(b"a\nb\n", Framing::Whole, 100), ["1:a\nb\n"]);
    }

    #[test]
    fn jsonl_takes_text_and_id() {
        let d = decode_input(br#"{"id": 7, "arguments": "{\"a\":1}"}"#, Framing::Jsonl).unwrap();
        assert_eq!((d.text.as_ref(), d.id), (r#"{"a":1}"#, Some("7")));
        let d = decode_input(br#"{"arguments": {"a":1}}"#, Framing::Jsonl).unwrap();
        assert_eq!(d.text, r#"{"a":1}"#);
        let d = decode_input(br#""plain""#, Framing::Jsonl).unwrap();
        assert_eq!(d.text, "plain");
        assert!(decode_input(b"{\"x\":1}", Framing::Jsonl).is_err());
        assert_eq!(
            decode_input(b"a\xffb", Framing::Lines).unwrap_err().offset,
            Some(1)
        );
    }
}
