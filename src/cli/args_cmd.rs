//! The `args` and `repair` commands: options from the command line, files in, exit code out.

use std::io::{BufRead, Write};

use toolmend_core::{Filter, Framing, Target};

use crate::cli::files::each_input;
use crate::cli::{ExitCode, MendArgs};

/// Runs the `args` or `repair` filter over every input file.
pub fn run(args: &MendArgs, target: Target) -> anyhow::Result<ExitCode> {
    let mut options = args.filter_options(target);
    options.schema = args.schema(None).map_err(anyhow::Error::msg)?;
    let lines = matches!(options.framing, Framing::Lines);
    let mut filter = Filter::new(options);
    let waiting_for = match target {
        Target::Object => "tool-call arguments, one per line,",
        Target::Any => "almost-JSON documents, one per line,",
    };
    let mut hinted = false;
    each_input(&args.files, waiting_for, |input, file, out, err| {
        // Read line by line, a pretty-printed document gives a record per line (`{` healed to
        // `{}`, then pieces): said once, before the records, which stay as they are.
        if lines && !hinted && looks_like_one_document(input.fill_buf()?) {
            hinted = true;
            let name = file.map_or(String::new(), |f| format!("{f} "));
            writeln!(
                err,
                "toolmend: hint: the input {name}looks like one JSON document written over several \
                 lines, but each line is read as an input; --input whole reads it as one"
            )?;
        }
        Ok(filter.run(input, file, out, err)?.failed > 0)
    })
}

/// Whether the start of an input is that of a pretty-printed document: its first line that is
/// not blank is `{` or `[` alone (a value opened and continued on the next lines), and more
/// lines follow.
fn looks_like_one_document(start: &[u8]) -> bool {
    let mut lines = start.split(|&b| b == b'\n').map(<[u8]>::trim_ascii);
    let first = lines.by_ref().find(|line| !line.is_empty());
    matches!(first, Some(b"{" | b"[")) && lines.any(|line| !line.is_empty())
}
