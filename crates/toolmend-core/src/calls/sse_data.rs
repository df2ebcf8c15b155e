//! Whether an SSE event's data, as its `data:` lines come, may be one whole JSON value yet.
//!
//! [`super::Deltas`] reads an event's data as soon as it is whole JSON, with no wait for the
//! blank line. Trying to parse the data after every `data:` line read the data again each
//! time: an event whose JSON came over many `data:` lines (or a stream of them with no blank
//! line) was quadratic in its length (20,000 lines of 8 bytes took 59 s). The data is scanned
//! once here instead, and parsed only when it may be whole: outside any string, with as many
//! brackets closed as opened. A JSON text never has more closed than opened in any prefix, nor
//! an open string or bracket at its end, so no parse that could succeed is skipped.

/// The scan of one event's data so far.
#[derive(Debug, Default)]
pub(super) struct DataScan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Anything but JSON whitespace was read: a failed parse then fails for good.
    content: bool,
    /// The data can no longer become JSON (a bracket closed that was not opened, or it failed
    /// to parse with all its brackets closed): only the blank line reads it (as an error).
    never: bool,
}

impl DataScan {
    /// Reads more of the data.
    pub(super) fn push(&mut self, data: &str) {
        if self.never {
            return;
        }
        for &b in data.as_bytes() {
            if self.in_string {
                match b {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => continue,
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => match self.depth.checked_sub(1) {
                    Some(depth) => self.depth = depth,
                    None => {
                        self.never = true;
                        return;
                    }
                },
                _ => {}
            }
            self.content = true;
        }
    }

    /// Whether the data opened a value that is still open at its end, outside a string: JSON
    /// that more lines may close (a line break can only come between tokens).
    pub(super) fn open(&self) -> bool {
        !self.never && !self.in_string && self.depth > 0
    }

    /// Whether the data may be one whole JSON value (worth a parse).
    pub(super) fn may_be_whole(&self) -> bool {
        !self.never && !self.in_string && self.depth == 0
    }

    /// A parse of the data failed: with content and its brackets closed, no more data makes it
    /// JSON (a line break now ends whatever it ends with).
    pub(super) fn failed(&mut self) {
        if self.content {
            self.never = true;
        }
    }
}

/// The fields of a server-sent event that servers send, `data` first: what tells a stream of
/// events from text here, and the lines of one from the raw JSON some servers send between
/// them (`Deltas`).
pub(super) const SSE_FIELDS: [&str; 4] = ["data", "event", "id", "retry"];

/// Whether a reply that begins with `start` is a server's stream of server-sent events (a
/// `curl -N` to a streaming endpoint) rather than the model's text: `None` while `start` is
/// too short to tell. Blank lines and `:` comments (`: OPENROUTER PROCESSING`, `: ping`)
/// say nothing; the first other line decides: `data:` with JSON or `[DONE]`, `event:`, `id:`
/// or `retry:` make it one. Prose that opens with `data: the file…` stays text.
pub fn sse_body(start: &str) -> Option<bool> {
    let mut rest = start;
    loop {
        rest = rest.trim_start_matches([' ', '\t', '\r', '\n']);
        if !rest.starts_with(':') {
            break;
        }
        // A comment: the line after it decides.
        let end = rest.find(['\n', '\r'])?;
        rest = &rest[end..];
    }
    let line = rest.split(['\n', '\r']).next().unwrap_or("");
    let whole_line = line.len() < rest.len();
    // (`data` is looked at below: its value decides.)
    for field in &SSE_FIELDS[1..] {
        match line.strip_prefix(field) {
            Some(value) if value.starts_with(':') => return Some(true),
            _ if field.starts_with(line) && !whole_line => return None,
            _ => {}
        }
    }
    match line.strip_prefix("data:") {
        Some(data) => {
            let data = data.trim_start_matches(' ');
            if data.starts_with(['{', '[']) {
                // `[DONE]` is the only data that starts with `[` and is no JSON a server sends
                // apart from arrays (Gemini's stream of one array): both are its own.
                Some(true)
            } else if data.is_empty() && !whole_line {
                None
            } else {
                Some(false)
            }
        }
        None if "data:".starts_with(line) && !whole_line => None,
        None => Some(false),
    }
}

#[cfg(test)]
mod tests {
    use super::{DataScan, sse_body};

    fn scan(lines: &[&str]) -> DataScan {
        let mut scan = DataScan::default();
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                scan.push("\n");
            }
            scan.push(line);
        }
        scan
    }

    #[test]
    fn whole_only_outside_strings_and_brackets() {
        assert!(scan(&[r#"{"a": "}"}"#]).may_be_whole());
        assert!(!scan(&[r#"{"a": "\"}"#]).may_be_whole());
        assert!(scan(&[r#"{"a": "\\"}"#]).may_be_whole());
        assert!(!scan(&["{\"a\":", "[1,"]).may_be_whole());
        assert!(scan(&["{\"a\":", "[1,", "2]}"]).may_be_whole());
        assert!(scan(&["[DONE]"]).may_be_whole());
        assert!(scan(&["", ""]).may_be_whole());
        assert!(!scan(&["]", "["]).may_be_whole());
    }

    #[test]
    fn a_failed_parse_is_final_once_there_is_content() {
        let mut blank = scan(&[""]);
        blank.failed();
        assert!(
            blank.may_be_whole(),
            "empty data may still be followed by JSON"
        );
        let mut cut = scan(&["tru"]);
        cut.failed();
        cut.push("\ne");
        assert!(!cut.may_be_whole());
    }

    #[test]
    fn an_sse_body_is_told_from_text_by_its_first_field() {
        for body in [
            "data: {\"choices\": []}\n\n",
            "data:{\"a\":1}",
            "data: [DONE]",
            "event: message_start\ndata: {}",
            ": OPENROUTER PROCESSING\n\ndata: {\"choices\": []}",
            "\r\nid: 1\ndata: {}",
            "retry: 100\n",
        ] {
            assert_eq!(sse_body(body), Some(true), "{body:?}");
        }
        for text in [
            "Hello",
            "data: the file holds 3 rows",
            "date: today",
            "{\"tool\": \"f\"}",
            ":)\nSure.",
            "<tool_call>",
            "events: none",
        ] {
            assert_eq!(sse_body(text), Some(false), "{text:?}");
        }
        for start in ["", "  \n", "da", "data:", "data: ", "ev", ": ping", "re"] {
            assert_eq!(sse_body(start), None, "{start:?}");
        }
    }
}
