//! Arguments written as a JSON string (`"arguments": "{\"a\": …}"`): the reader of the JSON
//! inside the string, and the ways the stream reads on in it without a scan and a refresh.

use super::arguments::text_only;
use super::arguments::{object_snapshot, push_arguments_events, snapshot_due};
use super::event::Event;
use super::settle::revise;
use super::{CallSlot, Written};
use crate::calls::partial::{Reader, Step};

#[derive(Debug)]
pub(super) struct Nested {
    pub(super) reader: Reader,
    pub(super) fed: usize,
}

impl Nested {
    /// A reader of the arguments of `slot` written as a JSON string; writing, it keeps their
    /// text.
    pub(super) fn new(slot: &CallSlot, written: &Option<Written>) -> Box<Nested> {
        let mut reader = Reader::new();
        if written.is_some() {
            // With no tools no schema coerces them, so only their text is wanted even before
            // the call is announced (marker-less JSON is, once they are read).
            reader.record(0, text_only(slot, written) || slot.tools.is_none());
        }
        Box::new(Nested { reader, fed: 0 })
    }
}

/// Feeds the text of an arguments string read so far (from where it was left) to its reader.
/// A byte it gives up at is not counted: fed again, it gives up again.
#[inline]
pub(super) fn feed_nested(nested: &mut Nested, bytes: &[u8]) -> bool {
    while nested.fed < bytes.len() {
        let b = bytes[nested.fed];
        // Whitespace before the object, as the pipeline trims it.
        if nested.reader.stack.is_empty()
            && nested.reader.value.is_none()
            && b.is_ascii_whitespace()
        {
            nested.fed += 1;
            continue;
        }
        if bytes.len() - nested.fed > 1
            && b != b'"'
            && b != b'\\'
            && nested.reader.in_plain_string()
            && !nested.reader.stack.is_empty()
            && plain_run_in(nested, bytes)
        {
            continue;
        }
        match nested.reader.push(b) {
            Step::More | Step::Done => nested.fed += 1,
            Step::Bail => return false,
        }
    }
    true
}

/// Reads the plain run of a string inside the JSON at `nested.fed`, up to its next quote or
/// backslash, in one go (as the scan reads one of the reply's strings), when it is longer
/// than a byte; whether it did. (A string at the top is left to the byte loop, which skips
/// blanks before its end.)
#[inline(never)]
fn plain_run_in(nested: &mut Nested, bytes: &[u8]) -> bool {
    let rest = &bytes[nested.fed..];
    let run = plain_run(rest);
    if run > 1 && nested.reader.extend_string(&rest[..run]) {
        nested.fed += run;
        return true;
    }
    false
}

/// How many bytes `bytes` starts with before a quote or a backslash (the whole, if none).
#[inline]
pub(super) fn plain_run(bytes: &[u8]) -> usize {
    if bytes.len() <= 16 {
        // Short, as a chunk's are: looked at a byte at a time.
        return bytes
            .iter()
            .position(|&c| c == b'"' || c == b'\\')
            .unwrap_or(bytes.len());
    }
    memchr::memchr2(b'"', b'\\', bytes).unwrap_or(bytes.len())
}

/// What a refresh does for the call `slot` whose arguments string is open on top, its text
/// so far `bytes`: reads on in it, and gives the `arguments` event due. Whether the JSON in it
/// could be read (else the call is frozen, and revised if a key came again).
pub(super) fn read_nested(
    slot: &mut CallSlot,
    bytes: &[u8],
    src: &[u8],
    events: &mut Vec<Event>,
    written: &mut Option<Written>,
) -> bool {
    let mut nested = slot
        .nested
        .take()
        .unwrap_or_else(|| Nested::new(slot, written));
    let ok = feed_nested(&mut nested, bytes);
    if ok {
        slot.args_bytes = nested.fed;
        if snapshot_due(slot) {
            push_arguments_events(
                slot,
                Some((&nested.reader, 0)),
                || object_snapshot(&nested.reader, 0),
                false,
                events,
                written,
            );
            nested.reader.forget_written();
        }
    } else {
        slot.frozen = true;
        if let Some(path) = nested.reader.repeated_path() {
            revise(slot, path, src, events);
        }
    }
    slot.nested = Some(nested);
    ok
}

#[cfg(test)]
mod tests {
    use super::super::{ArgumentsEvents, Stream};
    use crate::calls::{CallOptions, Shape};

    /// Event lines of `reply` fed in `pieces`, `fast` with the stream's fast ways.
    fn lines(pieces: &[&str], fast: bool, writing: bool, step: usize, snapshots: bool) -> String {
        let mut stream = if writing {
            Stream::writing(CallOptions::default())
        } else {
            Stream::new(CallOptions::default())
        }
        .with_arguments_step(step);
        if snapshots {
            stream = stream.with_arguments_events(ArgumentsEvents::Snapshot);
        }
        stream.skims = fast;
        let mut events = Vec::new();
        for piece in pieces {
            stream.feed_into(piece, &mut events);
        }
        events.extend(stream.finish());
        let mut out = Vec::new();
        stream
            .write_events(&mut events, Shape::Native, &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Replies whose arguments are JSON strings, with escapes of every kind, in the string and
    /// in the strings of the JSON inside it, and ones the reader gives up at.
    fn replies() -> Vec<String> {
        let inner = [
            r#"{\"a\": \"x\\\"y\", \"b\": [1, true, null, {\"c\": \"\\\\\"}], \"d\": \"\\n\\t\\/\"}"#,
            r#"{\"e\": \"\\u00e9\\ud83d\\ude00 caf\u00e9 \ud83d\ude00\", \"f\": -1.5e3}"#,
            r#"{\"g\":\"line\nbreak\",\"h\":\"tab\tx\", \"i\": \"\\u0041\\u00e9\"}"#,
            "{\\\"raw\\\": \\\"é😀 ü\\\", \\\"k\\\": [[], {}, \\\"\\\\b\\\\f\\\\r\\\"]}",
            r#"  {\"sp\" : { \"x\" : [ 1 , 2 ] } , \"y\":\"\u0041\"}  "#,
            r#"{\"rep\": 1, \"rep\": 2}"#,
            r#"{\"bad\": \"\\q\"}"#,
            r#"{\"a\": 1} {\"b\": 2}"#,
            r#"{\"half\": \"\\ud83d\"}"#,
            r#"{\"lo\": \"\\ude00\"}"#,
            r#"{\"a\": 'single'}"#,
            r#"{\"long\": \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", \"more\": \"\\\"q\\\" \\\\ \\u00e9\"}"#,
        ];
        let mut out = Vec::new();
        for body in inner {
            out.push(format!(
                r#"Here.<tool_call>{{"name": "run", "arguments": "{body}"}}</tool_call> done"#
            ));
            out.push(format!(
                r#"{{"name": "run", "arguments": "{body}"}} {{"name": "two", "arguments": "{body}"}}"#
            ));
        }
        // An escape of the outer string that the reader gives up at.
        out.push(r#"<tool_call>{"name": "run", "arguments": "{\"a\": \q}"}</tool_call>"#.into());
        out.push(
            r#"<tool_call>{"name": "run", "arguments": "{\"a\": 1}" , "x": 2}</tool_call>"#.into(),
        );
        out.push(r#"{"name": "run", "arguments": "{\"a\": \"\u00e9\ud83d\ude00\"}"}"#.into());
        out
    }

    /// The reply cut at every character boundary into two pieces, and into pieces of 1 to 5
    /// bytes (each piece ends on a character boundary), gives the same events with the fast
    /// ways as without: so `nested_chunk` reads as the scan and the refresh do.
    #[test]
    fn nested_chunks_give_the_events_of_the_scan() {
        for reply in replies() {
            let bounds: Vec<usize> = (0..=reply.len())
                .filter(|&i| reply.is_char_boundary(i))
                .collect();
            let mut splits: Vec<Vec<&str>> = Vec::new();
            for &i in &bounds {
                splits.push(vec![&reply[..i], &reply[i..]]);
            }
            for size in 1..=5 {
                let mut pieces = Vec::new();
                let mut from = 0;
                while from < reply.len() {
                    let mut to = (from + size).min(reply.len());
                    while !reply.is_char_boundary(to) {
                        to += 1;
                    }
                    pieces.push(&reply[from..to]);
                    from = to;
                }
                splits.push(pieces);
            }
            for pieces in &splits {
                for (writing, step, snapshots) in [
                    (true, 1, false),
                    (true, 128, false),
                    (false, 1, false),
                    (false, 7, true),
                ] {
                    assert_eq!(
                        lines(pieces, true, writing, step, snapshots),
                        lines(pieces, false, writing, step, snapshots),
                        "{pieces:?} writing {writing} step {step} snapshots {snapshots}"
                    );
                }
            }
        }
        assert!(
            super::super::NESTED_CHUNKS.with(|n| n.get()) > 10_000,
            "nested_chunk read too few chunks"
        );
    }
}
