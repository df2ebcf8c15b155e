//! The wheel's `toolmend` command (`toolmend/_cli.py`, a console script) runs the CLI here, in
//! the native module, so the one compile that builds the module builds the command too.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the `toolmend` command line `argv` (`argv[0]` is the program's name) on this process's
/// stdin, stdout and stderr, with the GIL released, and returns its exit status.
#[pyfunction]
pub fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| toolmend::run(argv))
}
