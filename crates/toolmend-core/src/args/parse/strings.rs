//! Quoted strings in every quote style a model writes, their escapes, and strings cut short.

use super::{Parser, Quote};
use crate::args::simd::{quoted_stop, string_stop};
use crate::bytes::escape::push_escape;
use crate::bytes::hex4;
use crate::error::Error;
use crate::repair::RepairKind;

/// The first position from `p` that holds one of `quote`'s stop bytes (or the end): a double
/// quote, a backslash or a control character, and the bytes that may close this quote.
pub(super) fn skip_plain(src: &[u8], p: usize, quote: Quote) -> usize {
    // Constant bytes per call, so the scan for a double quote tests two bytes, not three.
    match quote {
        Quote::Double => string_stop(src, p),
        Quote::Single => quoted_stop(src, p, b'\''),
        Quote::CurlyDouble | Quote::CurlySingle => quoted_stop(src, p, 0xE2),
        // Five stop bytes (`, ' and the acute accent's lead byte close it): a byte loop, as
        // backtick strings are rare.
        Quote::Backtick => src[p..]
            .iter()
            .position(|&b| b < 0x20 || matches!(b, b'"' | b'\\' | b'`' | b'\'' | 0xC2))
            .map_or(src.len(), |i| p + i),
    }
}

impl<'a> Parser<'a> {
    /// Reads a string value (and, when repairing, any `+ "..."` joined to it).
    pub(super) fn string_value(&mut self, quote: Quote, len: usize) -> Result<(), Error> {
        let at = self.pos;
        if let Some(kind) = quote.repair() {
            self.fix(kind, at)?;
        }
        let plain_end = match quote {
            Quote::Double => Some(skip_plain(self.src, at + 1, quote)),
            _ => None,
        };
        if let Some(end) = plain_end.filter(|&end| {
            self.src.get(end) == Some(&b'"')
                && (self.strict || self.value_quote_closes(end + 1, true))
        }) {
            // Most strings: nothing to escape before the quote that closes them.
            let start = self.sink.out.len();
            self.sink.out.extend_from_slice(&self.src[at..end]);
            self.tree_copied(start, at + 1..end, false);
            self.pos = end + 1;
        } else {
            self.sink.out.push(b'"');
            self.string_body(quote, len, false)?;
        }
        while !self.strict {
            let before = self.pos;
            self.pos = self.skip_blank_from(self.pos);
            if self.peek() != Some(b'+') {
                self.pos = before;
                break;
            }
            self.pos = self.skip_blank_from(self.pos + 1);
            let Some((next, len)) = Quote::opening(&self.src[self.pos..]) else {
                self.pos = before;
                break;
            };
            self.fix(RepairKind::StringConcat, before)?;
            if let Some(kind) = next.repair() {
                self.fix(kind, self.pos)?;
            }
            self.string_body(next, len, false)?;
        }
        self.sink.out.push(b'"');
        Ok(())
    }

    /// Reads a string from its opening quote (`open_len` bytes) through its closing quote and
    /// writes its content, escaped for a double-quoted JSON string, without the quotes.
    /// A key's string closes at its first closing quote; a value's only where a string can
    /// end (see [`Parser::quote_is_inner`]).
    pub(super) fn string_body(
        &mut self,
        quote: Quote,
        open_len: usize,
        key: bool,
    ) -> Result<(), Error> {
        let open = self.pos;
        let src = self.src;
        let mut p = open + open_len;
        let mut run = p;
        let mut noted = Noted::default();
        // Places an unterminated string may really have ended, as (source, output) offsets:
        // its last raw newline and its last `\"`.
        let mut last_escaped_quote = None;
        loop {
            // Escapes come in runs (`\\\\`, `\n\n`): the next one needs no word-wide scan.
            if src.get(p) != Some(&b'\\') {
                p = skip_plain(src, p, quote);
            }
            let Some(&c) = src.get(p) else {
                self.sink.out.extend_from_slice(&src[run..p]);
                self.pos = p;
                if !key && self.end_unterminated(open + open_len, last_escaped_quote) {
                    return self.fix(RepairKind::MissingQuote, open);
                }
                return self.fix(RepairKind::UnterminatedString, open);
            };
            if let Some(close_len) = quote.closing(&src[p..]) {
                // A backtick key closed by an apostrophe or an acute accent only before a colon
                // (`{`it's`: 1}`).
                // A double-quoted key is not closed by a quote with more of the key and its own
                // closing quote and colon after it (`{"k"e"y": 1}`).
                let closes_key = key
                    && (quote != Quote::Backtick
                        || c == b'`'
                        || self.src.get(self.skip_spaces_from(p + close_len)) == Some(&b':'))
                    && !(c == b'"' && self.key_quote_is_inner(p + close_len));
                if self.strict
                    || closes_key
                    || (!key && self.value_quote_closes(p + close_len, !noted.quote))
                {
                    self.sink.out.extend_from_slice(&src[run..p]);
                    self.pos = p + close_len;
                    return Ok(());
                }
                if let Some(comma) = self.unclosed_before_member(run, p) {
                    // `{"a": "x', "b": 2}`: this quote opens the next member's key, so the
                    // string ended, unclosed, at the comma before it.
                    return self.end_unclosed(src[run..comma].trim_ascii_end(), comma, open);
                }
                // `"he said "hi" twice"`: a quote that is not followed by what can follow a
                // string is part of it.
                self.fix_once(&mut noted.quote, RepairKind::UnescapedQuote, p)?;
                self.sink.out.extend_from_slice(&src[run..p]);
                if c == b'"' || c == b'\'' {
                    if c == b'"' {
                        self.sink.out.extend_from_slice(b"\\\"");
                    } else {
                        self.sink.out.push(b'\'');
                    }
                } else {
                    self.sink.out.extend_from_slice(&src[p..p + close_len]);
                }
                p += close_len;
                run = p;
                continue;
            }
            match c {
                b'"' => {
                    // A double quote inside a single- or curly-quoted string.
                    self.sink.out.extend_from_slice(&src[run..p]);
                    self.sink.out.extend_from_slice(b"\\\"");
                    p += 1;
                    run = p;
                }
                // The lead byte of a character that can close some quote (a curly quote, the
                // acute accent after a backtick) but not this one here: part of the text. It
                // is stepped over whole with the rest of its character, never escaped.
                0xE2 | 0xC2 => p += 1,
                b'\\' => match src.get(p + 1) {
                    Some(b'"') if !self.strict && !key => {
                        p += 2;
                        self.sink.out.extend_from_slice(&src[run..p]);
                        run = p;
                        last_escaped_quote = Some((p, self.sink.out.len()));
                    }
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => p += 2,
                    Some(b'u') if hex4(src, p + 2).is_some() => {
                        if let Some(end) = surrogate_pair_or_bmp(src, p) {
                            p = end;
                        } else if !self.lone_surrogates_as_fffd {
                            // Half a surrogate pair is valid JSON (`JSON.parse` reads it):
                            // kept as written, so the value is the one the input meant.
                            p += 6;
                        } else {
                            // Half a surrogate pair names no character, and a caller that
                            // needs Unicode text gets U+FFFD (an error under `strict`).
                            self.fix(RepairKind::LoneSurrogate, p)?;
                            self.sink.out.extend_from_slice(&src[run..p]);
                            self.sink.out.extend_from_slice(b"\\ufffd");
                            p += 6;
                            run = p;
                        }
                    }
                    Some(b'\'') if !self.strict => {
                        // `\'` is an escape in Python and JavaScript strings, not in JSON.
                        if quote != Quote::Single {
                            self.fix_once(&mut noted.escape, RepairKind::InvalidEscape, p)?;
                        }
                        self.sink.out.extend_from_slice(&src[run..p]);
                        self.sink.out.push(b'\'');
                        p += 2;
                        run = p;
                    }
                    _ if !self.strict && is_cut_escape(&src[p..]) => {
                        // `"abc\u00` or `"abc\` at the end of the input: half an escape names
                        // nothing; it is left out (and the string recorded as unterminated).
                        self.fix_once(&mut noted.escape, RepairKind::InvalidEscape, p)?;
                        self.sink.out.extend_from_slice(&src[run..p]);
                        p = src.len();
                        run = p;
                    }
                    _ => {
                        // Keep the backslash as written: the text after it stays as it was.
                        self.fix_once(&mut noted.escape, RepairKind::InvalidEscape, p)?;
                        self.sink.out.extend_from_slice(&src[run..p]);
                        self.sink.out.extend_from_slice(b"\\\\");
                        p += 1;
                        run = p;
                    }
                },
                _ => {
                    if c == b'\n' && !key && !self.strict && self.item_follows(p) {
                        // `{"a": "first⏎"b": 2}`, `["abc,⏎"def"]`: a raw newline and then a
                        // member or an element; the string was never closed (a comma that
                        // ended its line was meant to follow it).
                        let text = src[run..p].trim_ascii_end();
                        let text = text.strip_suffix(b",").unwrap_or(text).trim_ascii_end();
                        return self.end_unclosed(text, p, open);
                    }
                    self.fix_once(&mut noted.control, RepairKind::ControlCharacter, p)?;
                    self.sink.out.extend_from_slice(&src[run..p]);
                    push_escape(&mut self.sink.out, c);
                    p += 1;
                    run = p;
                }
            }
        }
    }

    /// A string whose text starts at `content` ran to the end of the input. When the input
    /// ends with closing brackets or a fence (with spaces, newlines and commas among them), or
    /// they follow its last `\"`, they belong to the structure and the string ended before
    /// them: `{"msg": "unterminated⏎}`, `["abc  ]`, `{"a": "x", then more}`,
    /// `{"a": "ends with \"}`. Returns whether it found where the string ended.
    fn end_unterminated(
        &mut self,
        content: usize,
        last_escaped_quote: Option<(usize, usize)>,
    ) -> bool {
        let is_structural =
            |b: u8| matches!(b, b'}' | b']' | b',' | b'`' | b' ' | b'\t' | b'\r' | b'\n');
        let closes = |tail: &[u8]| tail.iter().any(|&b| matches!(b, b'}' | b']' | b'`'));
        if let Some((at, out_len)) = last_escaped_quote {
            let tail = &self.src[at..];
            if closes(tail) && tail.iter().all(|&b| is_structural(b)) {
                self.sink.out.truncate(out_len);
                self.pos = at;
                return true;
            }
        }
        let tail_len = self.src[content..]
            .iter()
            .rev()
            .take_while(|&&b| is_structural(b))
            .count();
        let at = self.src.len() - tail_len;
        let tail = &self.src[at..];
        let fenced = tail.contains(&b'`');
        if !closes(tail) || (self.sink.scratch.nesting.is_empty() && !fenced) {
            return false;
        }
        // The tail was written into the string as is, but for raw tabs and line breaks, which
        // were escaped as two bytes.
        let written: usize = tail
            .iter()
            .map(|&b| {
                if matches!(b, b'\t' | b'\r' | b'\n') {
                    2
                } else {
                    1
                }
            })
            .sum();
        self.sink.out.truncate(self.sink.out.len() - written);
        self.pos = at;
        true
    }

    /// Ends the string opened at `open`, whose closing quote is missing, at `end`: it holds
    /// `text`.
    fn end_unclosed(&mut self, text: &[u8], end: usize, open: usize) -> Result<(), Error> {
        self.sink.out.extend_from_slice(text);
        self.pos = end;
        self.fix(RepairKind::MissingQuote, open)
    }

    /// Records a repair of this kind once per string (`noted` says whether it was).
    #[inline(always)]
    fn fix_once(&mut self, noted: &mut bool, kind: RepairKind, at: usize) -> Result<(), Error> {
        if !*noted {
            *noted = true;
            self.fix(kind, at)?;
        }
        Ok(())
    }
}

/// Per string, the repairs already recorded, so a long string full of raw newlines is one
/// repair record, not thousands (the offset is the first one's).
#[derive(Default)]
struct Noted {
    control: bool,
    quote: bool,
    escape: bool,
}

/// Where the `\u` escape at `p` ends: after a BMP character, or after both halves of a
/// surrogate pair; `None` for a lone half.
pub(super) fn surrogate_pair_or_bmp(src: &[u8], p: usize) -> Option<usize> {
    match hex4(src, p + 2)? {
        0xD800..=0xDBFF => {
            let low = (src.get(p + 6..p + 8) == Some(b"\\u"))
                .then(|| hex4(src, p + 8))
                .flatten()?;
            (0xDC00..=0xDFFF).contains(&low).then_some(p + 12)
        }
        0xDC00..=0xDFFF => None,
        _ => Some(p + 6),
    }
}

/// `\` or `\u` with fewer than four hex digits, at the end of the input.
fn is_cut_escape(rest: &[u8]) -> bool {
    match rest {
        [b'\\'] => true,
        [b'\\', b'u', digits @ ..] => digits.len() < 4 && digits.iter().all(u8::is_ascii_hexdigit),
        _ => false,
    }
}
