//! The process exit status: the one place where its numbers are chosen.

#[cfg(unix)]
use crate::agent::Status;

/// How a `toolmend` command ends. Every command returns one (or an error, which `main` prints
/// and ends with [`ExitCode::Usage`], or with the code a [`Fatal`] carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 0: every input mended, every case passed.
    Success,
    /// 1: an input could not be mended or a case failed.
    Failed,
    /// 2: a usage, config or I/O error: an option, a file or the output could not be used.
    Usage,
    /// How a `loop` run ended: 0 to 8, or 130 (see `toolmend loop --help`).
    #[cfg(unix)]
    Loop(Status),
}

impl ExitCode {
    /// The number the process exits with.
    pub fn number(self) -> u8 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Failed => 1,
            ExitCode::Usage => 2,
            #[cfg(unix)]
            ExitCode::Loop(status) => match status {
                Status::Answered | Status::Terminated => 0,
                Status::Internal => 1,
                Status::ConfigError | Status::OutputFailed => 2,
                Status::Denied => 3,
                Status::ApprovalFailed => 4,
                Status::IterationLimit => 5,
                Status::Timeout => 6,
                Status::Malformed => 7,
                Status::LlmFailed => 8,
                Status::Interrupted => 130,
            },
        }
    }

    /// The end of a run over inputs: a usage error when one could not be read (or a fixture
    /// could not be run), else a failure when one was refused, else success.
    pub fn of_inputs(unusable: bool, failed: bool) -> Self {
        if unusable {
            ExitCode::Usage
        } else if failed {
            ExitCode::Failed
        } else {
            ExitCode::Success
        }
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        std::process::ExitCode::from(code.number())
    }
}

/// An error that ends the process with a code of its own instead of [`ExitCode::Usage`].
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Fatal {
    /// The exit status.
    pub code: ExitCode,
    /// What `main` prints after `toolmend: error: `.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn loop_statuses_keep_their_documented_numbers() {
        use Status::*;
        #[rustfmt::skip]
        let statuses = [
            Answered, Terminated, Internal, ConfigError, OutputFailed, Denied, ApprovalFailed,
            IterationLimit, Timeout, Malformed, LlmFailed, Interrupted,
        ];
        let numbers: Vec<u8> = statuses.map(|s| ExitCode::Loop(s).number()).to_vec();
        assert_eq!(numbers, [0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 130]);
    }

    #[test]
    fn a_usage_error_outranks_a_failed_input() {
        assert_eq!(ExitCode::of_inputs(true, true), ExitCode::Usage);
        assert_eq!(ExitCode::of_inputs(false, true), ExitCode::Failed);
        assert_eq!(ExitCode::of_inputs(false, false), ExitCode::Success);
    }
}
