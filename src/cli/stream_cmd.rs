//! `calls --stream`: each input (stdin or a file) is one reply, read as it arrives; one JSON
//! event per line is written and flushed as it goes (`toolmend_core::calls::EventWriter`).

use std::io::{self, Read, Write};

use toolmend_core::calls::{ArgumentsEvents, DeltaFraming, EventWriter};

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
        let writer = EventWriter::new(
            options.clone(),
            framing,
            args.shape(),
            args.io.max_bytes,
            out,
        )
        .with_arguments_events(arguments_events);
        Ok(!one(input, writer)?)
    })
}

/// Streams one reply from `input`, each read as it comes; whether `calls` accepts it.
fn one<R: Read, W: Write>(mut input: R, mut writer: EventWriter<W>) -> io::Result<bool> {
    let mut chunk = vec![0; 64 << 10];
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if !writer.write_bytes(&chunk[..n])? {
            break;
        }
    }
    writer.finish()?;
    Ok(writer.accepted())
}
