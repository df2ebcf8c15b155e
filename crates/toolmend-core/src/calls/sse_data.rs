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

#[cfg(test)]
mod tests {
    use super::DataScan;

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
}
