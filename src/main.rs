//! The `toolmend` binary: the command line of [`toolmend::run`] (`src/lib.rs`), its status as
//! the exit code.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(toolmend::run(std::env::args_os()))
}
