//! `calls --stream`: each input (stdin or a file) is one reply, read as it arrives; one JSON
//! event per line is written and flushed as it goes (see `toolmend_core::calls::Stream`).

use std::io::{self, BufWriter, Read, Write};

use toolmend_core::calls::{CallOptions, DeltaFraming, Deltas, Event, Shape, Stream};
use toolmend_core::{Code, Error};

use crate::cli::files::each_input;
use crate::cli::{ArgumentsEventsArg, CallsArgs, CallsInputArg, ExitCode};

/// Runs `calls --stream` over every input.
pub fn run(args: &CallsArgs) -> anyhow::Result<ExitCode> {
    let reading = Reading {
        options: args.call_options(None).map_err(anyhow::Error::msg)?,
        framing: match args.input {
            CallsInputArg::Whole | CallsInputArg::Lines => None,
            CallsInputArg::Jsonl => Some(DeltaFraming::Jsonl),
            CallsInputArg::Sse => Some(DeltaFraming::Sse),
        },
        shape: args.shape(),
        max_bytes: args.io.max_bytes,
        snapshots: args.arguments_events == ArgumentsEventsArg::Snapshot,
    };
    // `one` says whether the reply was accepted.
    each_input(&args.files, "a reply", |input, _, out, _| {
        Ok(!reading.one(input, out)?)
    })
}

struct Reading {
    options: CallOptions,
    /// `None`: raw text.
    framing: Option<DeltaFraming>,
    shape: Shape,
    max_bytes: usize,
    /// `arguments` events carry the whole parameters too.
    snapshots: bool,
}

impl Reading {
    /// Streams one reply from `input`; whether `calls` accepts it.
    fn one<R: Read, W: Write>(&self, input: R, out: &mut W) -> io::Result<bool> {
        // The events of a read go out through a bounded buffer, flushed after each read: the
        // last ones (the results, the reply's text and reasoning in full, the end record) are
        // never all held at once.
        let out = &mut BufWriter::with_capacity(64 << 10, out);
        let mut stream = Stream::writing(self.options.clone());
        if self.snapshots {
            stream = stream.with_snapshots();
        }
        let mut events = Vec::new();
        match self.framing {
            None => self.raw(input, &mut stream, &mut events, out)?,
            Some(framing) => self.lines(input, framing, &mut stream, &mut events, out)?,
        }
        events.extend(stream.finish());
        write(out, &mut stream, &mut events, self.shape)?;
        Ok(matches!(stream.result(), Some(Ok(_))))
    }

    /// Raw text: every read is fed as it comes (a character split between reads waits for
    /// its other bytes).
    fn raw<R: Read, W: Write>(
        &self,
        input: R,
        stream: &mut Stream,
        events: &mut Vec<Event>,
        out: &mut W,
    ) -> io::Result<()> {
        self.read(input, stream, events, out, |text, stream, events| {
            stream.feed_into(text, events);
            Ok(())
        })
    }

    /// One delta per line, or server-sent events (lines end with LF, CRLF or CR): each read
    /// is fed as it comes, so an event is read as soon as its line ends.
    fn lines<R: Read, W: Write>(
        &self,
        input: R,
        framing: DeltaFraming,
        stream: &mut Stream,
        events: &mut Vec<Event>,
        out: &mut W,
    ) -> io::Result<()> {
        let mut deltas = Deltas::new(framing);
        self.read(input, stream, events, out, |text, stream, events| {
            events.extend(deltas.text(text, stream)?);
            Ok(())
        })?;
        if stream.result().is_none() {
            match deltas.end(stream) {
                Ok(more) => events.extend(more),
                Err(error) => events.extend(stream.abort(error)),
            }
        }
        Ok(())
    }

    /// Reads `input` as it comes, feeding its text to `feed` (a character split between reads
    /// waits for its other bytes); an error of `feed`, a reply past `--max-bytes` or bytes
    /// that are not UTF-8 end the reply.
    fn read<R: Read, W: Write>(
        &self,
        mut input: R,
        stream: &mut Stream,
        events: &mut Vec<Event>,
        out: &mut W,
        mut feed: impl FnMut(&str, &mut Stream, &mut Vec<Event>) -> Result<(), Error>,
    ) -> io::Result<()> {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        let mut chunk = vec![0; 64 << 10];
        let mut pending: Vec<u8> = Vec::new();
        let mut total = 0usize;
        // Whether the start of the input was looked at for a byte order mark.
        let mut started = false;
        loop {
            let n = match input.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            total += n;
            pending.extend_from_slice(&chunk[..n]);
            if !started {
                // A byte order mark starts the input, not the reply, as `calls` reads it.
                if pending.len() < BOM.len() && BOM.starts_with(&pending) {
                    continue;
                }
                started = true;
                if pending.starts_with(BOM) {
                    pending.drain(..BOM.len());
                    total -= BOM.len();
                }
            }
            if total > self.max_bytes {
                events.extend(stream.abort(self.too_large(total)));
                return write(out, stream, events, self.shape);
            }
            let valid = match std::str::from_utf8(&pending) {
                Ok(text) => text.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(e) => {
                    let at = stream.reply().len() + e.valid_up_to();
                    let error = Error::at(Code::InvalidUtf8, at, "invalid UTF-8");
                    let unread = self.head_of_rest(&mut input, pending);
                    events.extend(stream.abort_unreadable(error, &unread));
                    return write(out, stream, events, self.shape);
                }
            };
            // Checked just above.
            let text = std::str::from_utf8(&pending[..valid]).unwrap_or_default();
            if let Err(error) = feed(text, stream, events) {
                events.extend(stream.abort(error));
                return write(out, stream, events, self.shape);
            }
            pending.drain(..valid);
            write(out, stream, events, self.shape)?;
        }
        if !pending.is_empty() {
            let at = stream.reply().len();
            // The words of `calls --records`, which reads the whole input.
            let error = Error::at(Code::InvalidUtf8, at, "invalid UTF-8");
            events.extend(stream.abort_unreadable(error, &pending));
        }
        Ok(())
    }

    /// The bytes not fed after invalid UTF-8 (`pending`), with enough of the input after them
    /// read for the `end` event's `original` to show what `calls --records` shows of the whole
    /// input (its first 100 characters, at most 404 bytes looked at).
    fn head_of_rest<R: Read>(&self, input: &mut R, mut pending: Vec<u8>) -> Vec<u8> {
        let mut more = [0; 512];
        while pending.len() < 405 {
            match input.read(&mut more) {
                Ok(0) | Err(_) => break,
                Ok(n) => pending.extend_from_slice(&more[..n]),
            }
        }
        pending
    }

    fn too_large(&self, total: usize) -> Error {
        Error::whole(
            Code::TooLarge,
            format!(
                "the reply is more than {total} bytes, past --max-bytes {}",
                self.max_bytes
            ),
        )
    }
}

/// Writes the events, one per line, and flushes: a reader sees each as soon as it is known.
fn write<W: Write>(
    out: &mut W,
    stream: &mut Stream,
    events: &mut Vec<Event>,
    shape: Shape,
) -> io::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    stream.write_events(events, shape, out)?;
    out.flush()
}
