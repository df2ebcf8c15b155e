//! The `args` and `repair` commands: options from the command line, files in, exit code out.

use toolmend_core::{Filter, Target};

use crate::cli::files::each_input;
use crate::cli::{ExitCode, MendArgs};

/// Runs the `args` or `repair` filter over every input file.
pub fn run(args: &MendArgs, target: Target) -> anyhow::Result<ExitCode> {
    let mut options = args.filter_options(target);
    options.schema = args.schema(None).map_err(anyhow::Error::msg)?;
    let mut filter = Filter::new(options);
    let waiting_for = match target {
        Target::Object => "tool-call arguments, one per line,",
        Target::Any => "almost-JSON documents, one per line,",
    };
    each_input(&args.files, waiting_for, |input, file, out, err| {
        Ok(filter.run(input, file, out, err)?.failed > 0)
    })
}
