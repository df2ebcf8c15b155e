//! `calls --stream`: each input (stdin or a file) is one reply, read as it arrives; one JSON
//! event per line is written and flushed as it goes (`toolmend_core::calls::EventWriter`). A
//! panic in the stream (a bug in toolmend) ends the reply with an `end` event of code
//! `internal_error`, and the next input is read as usual.

use std::io::{self, Read, Write};

use toolmend_core::calls::{ArgumentsEvents, DeltaFraming, Event, EventWriter};
use toolmend_core::{contained, panicked_end};

use crate::cli::files::each_input;
use crate::cli::{ArgumentsEventsArg, CallsArgs, CallsInputArg, ExitCode};

/// Runs `calls --stream` over every input.
pub fn run(args: &CallsArgs) -> anyhow::Result<ExitCode> {
    let options = args.call_options(None).map_err(anyhow::Error::msg)?;
    let framing = match args.input {
        CallsInputArg::Whole | CallsInputArg::Lines => None,
        CallsInputArg::Jsonl => Some(DeltaFraming::Jsonl),
        CallsInputArg::Sse => Some(DeltaFraming::Sse),
    };
    let arguments_events = match args.arguments_events {
        ArgumentsEventsArg::Delta => ArgumentsEvents::Delta,
        ArgumentsEventsArg::Snapshot => ArgumentsEvents::Snapshot,
    };
    // `one` says whether the reply was accepted.
    each_input(&args.files, "a reply", |input, _, out, _| {
        let mut lines = WholeLines::new(out);
        let writer = EventWriter::new(
            options.clone(),
            framing,
            args.shape(),
            args.io.max_bytes,
            &mut lines,
        )
        .with_arguments_events(arguments_events)
        .with_arguments_step(args.arguments_step);
        let accepted = match one(input, writer)? {
            Ok(accepted) => accepted,
            Err(end) => {
                // What the writer wrote of an event when it panicked is dropped: the `end`
                // event follows the last whole one.
                lines.partial.clear();
                serde_json::to_writer(&mut lines, &end.as_json(args.shape()))?;
                lines.write_all(b"\n")?;
                false
            }
        };
        lines.finish()?;
        Ok(!accepted)
    })
}

/// Streams one reply from `input`, each read as it comes; whether `calls` accepts it. Should
/// the stream panic (a bug in toolmend), the reply ends there: the `end` event to write in
/// place of the rest (`internal_error`), and nothing else is read.
fn one<R: Read, W: Write>(
    mut input: R,
    mut writer: EventWriter<W>,
) -> io::Result<Result<bool, Box<Event>>> {
    let mut chunk = vec![0; 64 << 10];
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let read = &chunk[..n];
        match contained(read, || writer.write_bytes(read)) {
            Ok(more) => {
                if !more? {
                    break;
                }
            }
            Err(error) => return Ok(Err(Box::new(panicked_end(error, writer.reply())))),
        }
    }
    match contained(b"", || writer.finish()) {
        Ok(finished) => finished.map(|()| Ok(writer.accepted())),
        Err(error) => Ok(Err(Box::new(panicked_end(error, writer.reply())))),
    }
}

/// Passes whole lines to `out` and holds back the start of one until its end comes, so that
/// an event the stream was writing when it panicked never reaches `out` cut short. (The events
/// are written a read at a time, each ending its line: nothing is held back between reads.)
struct WholeLines<W: Write> {
    out: W,
    partial: Vec<u8>,
}

impl<W: Write> WholeLines<W> {
    fn new(out: W) -> WholeLines<W> {
        WholeLines {
            out,
            partial: Vec::new(),
        }
    }

    /// Writes what is held back (a last line without its newline) and flushes.
    fn finish(&mut self) -> io::Result<()> {
        self.out.write_all(&self.partial)?;
        self.partial.clear();
        self.out.flush()
    }
}

impl<W: Write> Write for WholeLines<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some(end) = memchr::memrchr(b'\n', buf) else {
            self.partial.extend_from_slice(buf);
            return Ok(buf.len());
        };
        if !self.partial.is_empty() {
            self.out.write_all(&self.partial)?;
            self.partial.clear();
        }
        self.out.write_all(&buf[..=end])?;
        self.partial.extend_from_slice(&buf[end + 1..]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolmend_core::calls::{CallOptions, Shape};

    /// Output whose second write panics, as a bug in the stream writing its events would.
    struct PanicsOnSecondWrite {
        out: Vec<u8>,
        writes: usize,
    }

    impl Write for PanicsOnSecondWrite {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            assert!(self.writes != 2, "a bug in the stream");
            self.out.write(buf)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A reply read in these pieces.
    struct Pieces<'a>(Vec<&'a [u8]>);

    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let piece = self.0.remove(0);
            buf[..piece.len()].copy_from_slice(piece);
            Ok(piece.len())
        }
    }

    #[test]
    fn a_panic_in_the_stream_ends_it_with_internal_error() {
        let pieces: Vec<&[u8]> = vec![
            b"Hello ",
            b"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
        ];
        let mut lines = WholeLines::new(PanicsOnSecondWrite {
            out: Vec::new(),
            writes: 0,
        });
        let writer = EventWriter::new(
            CallOptions::default(),
            None,
            Shape::Native,
            1 << 20,
            &mut lines,
        );
        // As `run` does with what `one` gives.
        let Err(end) = one(Pieces(pieces), writer).unwrap() else {
            panic!("the reply ended as usual");
        };
        lines.partial.clear();
        serde_json::to_writer(&mut lines, &end.as_json(Shape::Native)).unwrap();
        lines.write_all(b"\n").unwrap();
        lines.finish().unwrap();
        let out = String::from_utf8(lines.out.out).unwrap();
        let events: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("every line is a whole event"))
            .collect();
        assert_eq!(events.len(), 2, "{out}");
        assert_eq!(events[0]["event"], "text", "{out}");
        let end = &events[1];
        assert_eq!(end["event"], "end", "{out}");
        assert_eq!(end["ok"], false);
        assert_eq!(end["error"]["code"], "internal_error");
        let message = end["error"]["message"].as_str().unwrap();
        assert!(
            message.ends_with("this input): a bug in the stream"),
            "{message}"
        );
        assert!(
            end["error"]["original"]
                .as_str()
                .unwrap()
                .starts_with("Hello <tool_call>"),
            "{out}"
        );
    }

    #[test]
    fn whole_lines_hold_back_only_a_line_cut_short() {
        let mut out = Vec::new();
        let mut lines = WholeLines::new(&mut out);
        lines.write_all(b"{\"a\":1}\n{\"b\"").unwrap();
        lines.flush().unwrap();
        lines.write_all(b":2}\n").unwrap();
        lines.write_all(b"{\"cut").unwrap();
        lines.partial.clear();
        lines.write_all(b"{}").unwrap();
        lines.finish().unwrap();
        assert_eq!(out, b"{\"a\":1}\n{\"b\":2}\n{}");
    }
}
