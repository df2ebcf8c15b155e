//! Skipping what lies between tokens: whitespace, comments, stray lines, and the byte classes
//! that say where a token ends. Kept apart so every other part asks the same questions.

use super::Parser;
use crate::error::Error;
use crate::repair::RepairKind;

impl<'a> Parser<'a> {
    /// Skips whitespace and, when repairing, comments (and stray fences and Unicode spaces).
    #[inline(always)]
    pub(super) fn skip_ws(&mut self) -> Result<(), Error> {
        // Most calls find nothing to skip, or one space after a comma or colon: those are
        // answered here, inlined, without the loop (skip_ws was a tenth of the profile).
        if self.peek() == Some(b' ') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b' ' | b'\t' | b'\n' | b'\r' | b'/' | b'#' | b'`' | 0xC2 | 0xE2 | 0xE3 | 0xEF) => {
                self.skip_ws_more()
            }
            _ => Ok(()),
        }
    }

    #[inline(never)]
    fn skip_ws_more(&mut self) -> Result<(), Error> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if !self.strict => match self.src.get(self.pos + 1) {
                    Some(b'/') => {
                        self.fix(RepairKind::Comment, self.pos)?;
                        self.skip_line();
                    }
                    Some(b'*') => {
                        self.fix(RepairKind::Comment, self.pos)?;
                        let body = self.pos + 2;
                        self.pos = match memchr::memmem::find(&self.src[body..], b"*/") {
                            Some(i) => body + i + 2,
                            None => self.src.len(),
                        };
                    }
                    _ => return Ok(()),
                },
                Some(b'#') if !self.strict => {
                    self.fix(RepairKind::Comment, self.pos)?;
                    self.skip_line();
                }
                Some(b'`') if !self.strict && self.src[self.pos..].starts_with(b"```") => {
                    // `{"a": "b"```: a code fence inside the value is not part of it (recorded
                    // unless it ends the input: a closing fence, counted with its opening one).
                    let fence = self.pos;
                    self.pos += self.src[self.pos..]
                        .iter()
                        .take_while(|&&b| b == b'`')
                        .count();
                    self.pos += self.src[self.pos..]
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric())
                        .count();
                    if !self.src[self.pos..].trim_ascii().is_empty() {
                        self.fix(RepairKind::CodeFence, fence)?;
                    }
                }
                Some(0xC2 | 0xE2 | 0xE3 | 0xEF) if !self.strict => {
                    let Some(len) = unicode_space(&self.src[self.pos..]) else {
                        return Ok(());
                    };
                    self.fix(RepairKind::UnicodeSpace, self.pos)?;
                    self.pos += len;
                }
                _ => return Ok(()),
            }
        }
    }

    fn skip_line(&mut self) {
        self.pos = match memchr::memchr(b'\n', &self.src[self.pos..]) {
            Some(i) => self.pos + i + 1,
            None => self.src.len(),
        };
    }

    /// Past whitespace and comments from `at`, without recording them (`"a" + /* c */ "b"`:
    /// the joined string is the repair).
    pub(super) fn skip_blank_from(&self, mut at: usize) -> usize {
        loop {
            let rest = &self.src[at..];
            match rest {
                [b' ' | b'\t' | b'\n' | b'\r', ..] => at += 1,
                [b'/', b'*', ..] => {
                    at = memchr::memmem::find(&rest[2..], b"*/")
                        .map_or(self.src.len(), |i| at + i + 4);
                }
                [b'/', b'/', ..] => {
                    at = memchr::memchr(b'\n', rest).map_or(self.src.len(), |i| at + i + 1);
                }
                _ => return at,
            }
        }
    }

    /// The bounded look ahead at `at`, and the length of the bare words (letters, digits, `_`,
    /// `-` and spaces) it starts with.
    pub(super) fn words_at(&self, at: usize) -> (&'a [u8], usize) {
        let ahead = &self.src[at..(at + 64).min(self.src.len())];
        let len = ahead
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b' '))
            .count();
        (ahead, len)
    }

    /// Past spaces from `at`, when there are some: words after a closing quote must stand
    /// apart from it to be read as something else (`"5"px` is one string with a quote in it).
    pub(super) fn after_space(&self, at: usize) -> Option<usize> {
        let at = self.skip_spaces_from(at);
        self.src[..at]
            .last()
            .is_some_and(u8::is_ascii_whitespace)
            .then_some(at)
    }

    pub(super) fn skip_spaces_from(&self, mut at: usize) -> usize {
        while let Some(b' ' | b'\t') = self.src.get(at) {
            at += 1;
        }
        at
    }
}

/// The length of a Unicode space at the start of `s` that JSON does not count as whitespace:
/// U+00A0, U+2000 to U+200B, U+202F, U+205F, U+3000 and U+FEFF.
fn unicode_space(s: &[u8]) -> Option<usize> {
    match s {
        [0xC2, 0xA0, ..] => Some(2),
        [0xE2, 0x80, 0x80..=0x8B | 0xAF, ..] | [0xE2, 0x81, 0x9F, ..] => Some(3),
        [0xE3, 0x80, 0x80, ..] | [0xEF, 0xBB, 0xBF, ..] => Some(3),
        _ => None,
    }
}

/// Whether `b` (`None` at the end) may follow a number: whitespace, punctuation that ends a
/// value, or the start of a comment.
pub(super) fn is_delimiter(rest: &[u8]) -> bool {
    matches!(
        rest,
        [] | [
            b' ' | b'\t'
                | b'\n'
                | b'\r'
                | b','
                | b'}'
                | b']'
                | b':'
                | b')'
                | b'#'
                | b'{'
                | b'['
                | b'"',
            ..
        ] | [b'/', b'/' | b'*', ..]
    )
}
