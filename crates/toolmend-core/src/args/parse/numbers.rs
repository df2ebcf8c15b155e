//! Numbers: copied as written when valid, mended (leading zeros, signs, digit groups,
//! non-finite words) when not.

use super::scan::is_delimiter;
use super::{Parser, statement_end};
use crate::bytes::escape::push_json_string;
use crate::error::Error;
use crate::repair::RepairKind;

impl<'a> Parser<'a> {
    pub(super) fn number(&mut self) -> Result<(), Error> {
        let src = self.src;
        let start = self.pos;
        let out_start = self.sink.out.len();
        let repairs_before = self.sink.repairs.len();
        let mut p = start;
        if !self.strict && matches!(src[p], b'-' | b'+') {
            // `-NaN`, `+Infinity`, `- Infinity`: a sign (and spaces) before a word that has no
            // JSON form; null, as for the unsigned word.
            let word = self.skip_spaces_from(p + 1);
            if let Some(len) = non_finite_at(&src[word..]) {
                self.fix(RepairKind::NonFinite, start)?;
                self.sink.out.extend_from_slice(b"null");
                self.pos = word + len;
                return Ok(());
            }
        }
        if !self.strict
            && let Some(len) = lone_sign_len(&src[start..])
        {
            // `{"n": -}`, `{"n": +.`: a sign with no digits is no number; the member keeps its
            // key with null, as `{"n": }` does. Alone, it leaves no value at all.
            if self.sink.scratch.nesting.is_empty() {
                return Err(self.invalid(start, "a sign with no digits is no number"));
            }
            self.fix(RepairKind::MissingValue, start)?;
            self.sink.out.extend_from_slice(b"null");
            self.pos = start + len;
            return Ok(());
        }
        match src[p] {
            b'-' => {
                self.sink.out.push(b'-');
                p += 1;
                if !self.strict {
                    let digit = self.skip_spaces_from(p);
                    if digit > p && src.get(digit).is_some_and(u8::is_ascii_digit) {
                        // `[- 1]`: the sign belongs to the number after the space.
                        self.fix(RepairKind::NumberFormat, p)?;
                        p = digit;
                    } else if is_delimiter(&src[p..]) {
                        // `{"n": -}` or input cut off after the sign: no number was written.
                        self.sink.out.truncate(out_start);
                        self.fix(RepairKind::MissingValue, start)?;
                        self.sink.out.extend_from_slice(b"null");
                        self.pos = p;
                        return Ok(());
                    }
                }
            }
            b'+' => {
                self.fix(RepairKind::NumberFormat, start)?;
                p += 1;
            }
            _ => {}
        }
        if src[p..].starts_with(b"Infinity") {
            // Under `strict` (a repair reads it above): an error.
            self.fix(RepairKind::NonFinite, start)?;
        }
        let int_start = p;
        while p < src.len() && src[p].is_ascii_digit() {
            p += 1;
        }
        let int = &src[int_start..p];
        if int.is_empty() {
            if src.get(p) == Some(&b'.') && src.get(p + 1).is_some_and(u8::is_ascii_digit) {
                self.fix(RepairKind::NumberFormat, start)?;
                self.sink.out.push(b'0');
            } else if self.strict {
                return Err(self.invalid(p, "expected a digit"));
            } else {
                // `--1`, `.e5`: not a number; the text is kept.
                self.sink.out.truncate(out_start);
                self.sink.repairs.truncate(repairs_before);
                self.pos = start;
                return self.bare_string();
            }
        } else if int.len() > 1 && int[0] == b'0' {
            self.fix(RepairKind::NumberFormat, int_start)?;
            let zeros = int
                .iter()
                .take_while(|&&d| d == b'0')
                .count()
                .min(int.len() - 1);
            self.sink.out.extend_from_slice(&int[zeros..]);
        } else {
            self.sink.out.extend_from_slice(int);
        }
        if src.get(p) == Some(&b'.') {
            let dot = p;
            p += 1;
            while p < src.len() && src[p].is_ascii_digit() {
                p += 1;
            }
            if p == dot + 1 {
                self.fix(RepairKind::NumberFormat, dot)?;
                self.sink.out.extend_from_slice(b".0");
            } else {
                self.sink.out.extend_from_slice(&src[dot..p]);
            }
        }
        if let Some(b'e' | b'E') = src.get(p) {
            let e = p;
            let mut q = p + 1;
            if let Some(b'+' | b'-') = src.get(q) {
                q += 1;
            }
            let digits = q;
            while q < src.len() && src[q].is_ascii_digit() {
                q += 1;
            }
            if q == digits {
                // `1e` with no digits: the dangling exponent is dropped.
                self.fix(RepairKind::NumberFormat, e)?;
            } else {
                self.sink.out.extend_from_slice(&src[e..q]);
            }
            p = q;
        }
        self.pos = p;
        if !self.strict && int.len() > 1 && int[0] == b'0' && is_delimiter(&src[p..]) {
            // `0012345`, `001.2`: a number with leading zeros is an id or a code more often
            // than a count; the string keeps every digit (jsonrepair's reading; json_repair
            // drops the zeros).
            self.sink.out.truncate(out_start);
            push_json_string(&mut self.sink.out, &src[start..p]);
            return Ok(());
        }
        if !self.strict && !is_delimiter(&src[p..]) && !statement_end(&src[p..]) {
            self.sink.out.truncate(out_start);
            self.sink.repairs.truncate(repairs_before);
            if let Some((len, digits)) = grouped_number(&src[start..]) {
                // `82_461_110`, `1_234.5`: digits grouped as Python and JavaScript allow.
                self.fix(RepairKind::NumberFormat, start)?;
                self.sink.out.extend_from_slice(&digits);
                self.pos = start + len;
                return Ok(());
            }
            // `12px`, `1.2.3`, `50%`, `1/2`: text that starts with digits, not a number.
            self.pos = start;
            return self.bare_string();
        }
        Ok(())
    }
}

/// A number at the start of `s` whose digits are grouped with underscores (`82_461_110`), if
/// it is one followed by a delimiter: its length, and the number without them.
fn grouped_number(s: &[u8]) -> Option<(usize, Vec<u8>)> {
    let len = s
        .iter()
        .position(|&b| {
            !(b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'e' | b'E' | b'+' | b'-'))
        })
        .unwrap_or(s.len());
    let token = &s[..len];
    let grouped = |i: usize| {
        i > 0 && token[i - 1].is_ascii_digit() && token.get(i + 1).is_some_and(u8::is_ascii_digit)
    };
    if !token.contains(&b'_') || !(0..len).all(|i| token[i] != b'_' || grouped(i)) {
        return None;
    }
    let digits: Vec<u8> = token.iter().copied().filter(|&b| b != b'_').collect();
    let number = serde_json::from_slice::<serde_json::Number>(&digits).is_ok();
    (number && is_delimiter(&s[len..])).then_some((len, digits))
}

/// The length of a sign with no digits after it (`-`, `+`, `-.`) at the start of `s`, when what
/// follows ends an item: a number cut at its sign.
pub(super) fn lone_sign_len(s: &[u8]) -> Option<usize> {
    if !matches!(s.first(), Some(b'-' | b'+')) {
        return None;
    }
    let len = if s.get(1) == Some(&b'.') { 2 } else { 1 };
    let next = len
        + s[len..]
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
    matches!(
        &s[next..],
        [] | [b',' | b'}' | b']' | b')' | b'\n' | b'\r', ..] | [b'/', b'/' | b'*', ..]
    )
    .then_some(len)
}

/// The length of `NaN` or `Infinity` as a whole word at the start of `rest`.
fn non_finite_at(rest: &[u8]) -> Option<usize> {
    let len = [&b"NaN"[..], b"Infinity"]
        .into_iter()
        .find(|w| rest.starts_with(w))?
        .len();
    let more = rest
        .get(len)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_');
    (!more).then_some(len)
}
