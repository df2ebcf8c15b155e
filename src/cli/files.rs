//! The per-file loop every filter command shares: each named file (stdin for none or `-`) is
//! opened and read through one 256 KiB buffer (which starts on a page: [`Aligned`]); a file
//! that cannot be opened or read is reported and the next one still runs.

use std::fs::File;
use std::io::{self, BufRead, Read, Stderr, StdinLock, StdoutLock, Write};
use std::path::{Path, PathBuf};

use crate::cli::ExitCode;
use crate::cli::aligned::Aligned;
use crate::cli::hints;

/// A larger buffer than stdin's own: fewer reads, longer runs of whole lines.
const BUFFER: usize = 256 << 10;

/// One input: stdin or a file, buffered alike.
pub enum Input<'a> {
    /// Standard input.
    Stdin(Aligned<StdinLock<'a>>),
    /// A named file.
    File(Aligned<File>),
}

impl Read for Input<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Stdin(r) => r.read(buf),
            Input::File(r) => r.read(buf),
        }
    }
}

// Inlined: the filters call these twice per line, and the call cost more than the work.
impl BufRead for Input<'_> {
    #[inline]
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Input::Stdin(r) => r.fill_buf(),
            Input::File(r) => r.fill_buf(),
        }
    }

    #[inline]
    fn consume(&mut self, amount: usize) {
        match self {
            Input::Stdin(r) => r.consume(amount),
            Input::File(r) => r.consume(amount),
        }
    }
}

/// Runs `each` over every input in `files` (stdin when empty), with the file's name when more
/// than one is given; `each` says whether any input in it failed. `waiting_for` is what a person
/// at a terminal is told stdin is read for.
pub fn each_input(
    files: &[PathBuf],
    waiting_for: &str,
    mut each: impl FnMut(
        &mut Input<'_>,
        Option<&str>,
        &mut StdoutLock<'_>,
        &mut Stderr,
    ) -> io::Result<bool>,
) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    let mut err = io::stderr();
    let stdin_only = [Path::new("-").to_path_buf()];
    let files = if files.is_empty() {
        &stdin_only[..]
    } else {
        files
    };
    let named = files.len() > 1;
    let (mut failed, mut unreadable) = (false, false);
    for path in files {
        let name = path.to_string_lossy();
        let file = named.then_some(name.as_ref());
        let mut input = if path == Path::new("-") {
            hints::if_stdin_is_a_terminal(waiting_for);
            Input::Stdin(Aligned::with_capacity(BUFFER, io::stdin().lock()))
        } else {
            match File::open(path) {
                Ok(f) => Input::File(Aligned::with_capacity(BUFFER, f)),
                Err(e) => {
                    hints::unreadable(&mut err, path, &e)?;
                    unreadable = true;
                    continue;
                }
            }
        };
        match each(&mut input, file, &mut out, &mut err) {
            Ok(one_failed) => failed |= one_failed,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Err(e.into()),
            Err(e) => {
                out.flush().ok();
                writeln!(err, "toolmend: error: {name}: {e}")?;
                unreadable = true;
            }
        }
    }
    Ok(ExitCode::of_inputs(unreadable, failed))
}
