//! The JSON strings of a reply, where markers are text.
//!
//! A call's parameters are what the model wrote: `{"cmd": "echo <think>x</think>"}` holds a
//! string, not reasoning, and `"<tool_call>"` or `"<|channel|>"` in a string starts no call.
//! So before a reply is scanned, the strings of the JSON values in it are found; the decoders
//! get the reply as a [`super::scan::Masked`] text holding them, and [`super::scan::find_str`]
//! (which every marker search goes through, reasoning included) skips a marker that starts
//! inside one.
//!
//! A JSON value here is an array or object whose brackets close and that reads as JSON with
//! at most repairs that leave its strings where they are (a trailing comma, an unquoted key,
//! Python's `True`, …). Strings in text that is not such a value (prose, a call cut off before
//! its end) are not masked. Finding them is one pass over the reply plus one mend of each
//! value holding a string that could hold a marker; a value that does not read as JSON is
//! looked into for values that do, within a budget proportional to the reply's length.

use std::ops::Range;

use super::Ctx;
use crate::args::{Concat, Target};
use crate::repair::RepairKind;

/// The insides (between the quotes) of the strings of the JSON values in `text` that could
/// hold a marker, in text order.
pub(crate) fn json_strings(text: &str, ctx: &Ctx<'_>) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut masked = Vec::new();
    if memchr::memchr(b'"', bytes).is_none() {
        return masked;
    }
    let mut budget = 8 * text.len() + (64 << 10);
    let mut areas: Vec<Range<usize>> = Vec::new();
    areas.push(0..text.len());
    while let Some(area) = areas.pop() {
        budget = budget.saturating_sub(area.len());
        let found = pass(bytes, area.clone());
        // An opener that never closes is no value, but values after it may be (a stray `{`
        // or quote in prose before a call): the rest of the area is looked into on its own.
        // Within the budget, like every other area looked into.
        if let Some(opener) = found.unclosed.filter(|&o| area.end - o <= budget) {
            areas.push(opener + 1..area.end);
        }
        for value in found.values {
            let inside = found.strings.partition_point(|s| s.start < value.start)
                ..found.strings.partition_point(|s| s.start < value.end);
            if inside.is_empty() {
                continue;
            }
            if budget < value.len() {
                continue;
            }
            budget -= value.len();
            if reads_as_json(&text[value.clone()], ctx) {
                masked.extend(found.strings[inside].iter().cloned());
            } else if value.len() > 2 {
                // Not JSON as a whole (a Python call, prose in brackets): values inside it
                // may be.
                areas.push(value.start + 1..value.end - 1);
            }
        }
    }
    masked.sort_by_key(|r| r.start);
    masked
}

/// What one pass over an area finds: the outermost bracketed values that close, the
/// strings inside brackets that could hold a marker, and the outermost opener still open
/// where the pass stopped.
struct Pass {
    values: Vec<Range<usize>>,
    strings: Vec<Range<usize>>,
    unclosed: Option<usize>,
}

/// Brackets are matched as [`crate::args::locate::json_extent`] matches them (any closer closes
/// the innermost opener; quotes count only inside brackets).
fn pass(bytes: &[u8], area: Range<usize>) -> Pass {
    let mut found = Pass {
        values: Vec::new(),
        strings: Vec::new(),
        unclosed: None,
    };
    let end = area.end;
    let mut open: Vec<usize> = Vec::new();
    let mut i = area.start;
    while i < end {
        if open.is_empty() {
            match memchr::memchr2(b'{', b'[', &bytes[i..end]) {
                Some(j) => i += j,
                None => break,
            }
        }
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                let Some(close) = string_end(bytes, start, end) else {
                    break;
                };
                if could_hold_marker(&bytes[start..close]) {
                    found.strings.push(start..close);
                }
                i = close;
            }
            b'{' | b'[' => open.push(i),
            b'}' | b']' => {
                if let Some(from) = open.pop() {
                    // Values closed inside this one are part of it.
                    while found.values.last().is_some_and(|v| v.start > from) {
                        found.values.pop();
                    }
                    found.values.push(from..i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    found.unclosed = open.first().copied();
    found
}

/// The index of the quote that ends the string whose text starts at `from`.
fn string_end(bytes: &[u8], mut from: usize, end: usize) -> Option<usize> {
    while let Some(j) = memchr::memchr2(b'"', b'\\', &bytes[from..end]) {
        let at = from + j;
        if bytes[at] == b'"' {
            return Some(at);
        }
        from = at + 2;
        if from >= end {
            return None;
        }
    }
    None
}

/// Whether a string has a byte or word that a marker starts with (`<…>`, `[TOOL_CALLS]`,
/// `>>>`, `functools`, `call:`).
fn could_hold_marker(s: &[u8]) -> bool {
    memchr::memchr3(b'<', b'[', b'>', s).is_some()
        || memchr::memmem::find(s, b"functools").is_some()
        || memchr::memmem::find(s, b"call:").is_some()
}

/// Whether a bracketed value reads as JSON with its strings where the bracket scan saw them.
fn reads_as_json(value: &str, ctx: &Ctx<'_>) -> bool {
    let mut mender = ctx.mender(Target::Any, Concat::First);
    let Ok(mended) = mender.mend(value) else {
        return false;
    };
    mended.repairs().iter().all(|r| {
        matches!(
            r.kind,
            RepairKind::DuplicateKey
                | RepairKind::TrailingComma
                | RepairKind::ExtraComma
                | RepairKind::MissingComma
                | RepairKind::MissingColon
                | RepairKind::UnquotedKey
                | RepairKind::PythonLiteral
                | RepairKind::NonFinite
                | RepairKind::Undefined
                | RepairKind::ControlCharacter
                | RepairKind::InvalidEscape
                | RepairKind::LoneSurrogate
                | RepairKind::NumberFormat
                | RepairKind::UnicodeSpace
        )
    })
}
