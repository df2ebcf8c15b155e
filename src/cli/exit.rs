//! The process exit status: the one place where its numbers are chosen.

use toolmend::agent::Status;

/// How a `toolmend` command ends. Every command returns one (or an error, which `main` prints
/// and ends with [`ExitCode::Usage`], or with the code a [`Fatal`] carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 0: every input mended, every case passed, the model answered.
    Success,
    /// 1: an input could not be mended or a case failed; for `loop`, an internal error.
    Failed,
    /// 2: a usage, config or I/O error: an option, a file or the output could not be used.
    Usage,
    /// 3: `loop`: the approval hook denied a call.
    Denied,
    /// 4: `loop`: the approval hook failed, so the call was rejected.
    ApprovalFailed,
    /// 5: `loop`: `max_iterations` LLM calls without an answer.
    IterationLimit,
    /// 6: `loop`: the run's timeout passed.
    Timeout,
    /// 7: `loop`: `max_parse_retries` malformed replies in a row.
    Malformed,
    /// 8: `loop`: the LLM command kept failing.
    LlmFailed,
    /// 130: `loop`: interrupted by SIGINT, SIGTERM or SIGHUP.
    Interrupted,
}

impl ExitCode {
    /// The number the process exits with.
    pub fn number(self) -> u8 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Failed => 1,
            ExitCode::Usage => 2,
            ExitCode::Denied => 3,
            ExitCode::ApprovalFailed => 4,
            ExitCode::IterationLimit => 5,
            ExitCode::Timeout => 6,
            ExitCode::Malformed => 7,
            ExitCode::LlmFailed => 8,
            ExitCode::Interrupted => 130,
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

    /// How `toolmend loop` ends for a run's status.
    pub fn of_loop(status: Status) -> Self {
        match status {
            Status::Answered | Status::Terminated => ExitCode::Success,
            Status::Internal => ExitCode::Failed,
            Status::ConfigError | Status::OutputFailed => ExitCode::Usage,
            Status::Denied => ExitCode::Denied,
            Status::ApprovalFailed => ExitCode::ApprovalFailed,
            Status::IterationLimit => ExitCode::IterationLimit,
            Status::Timeout => ExitCode::Timeout,
            Status::Malformed => ExitCode::Malformed,
            Status::LlmFailed => ExitCode::LlmFailed,
            Status::Interrupted => ExitCode::Interrupted,
            // `Status` is non-exhaustive: a status added without a code here is an internal
            // error until it is given one (the test below lists every status).
            _ => ExitCode::Failed,
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
    /// What `main` prints after `toolmend: `.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_statuses_keep_their_documented_numbers() {
        let number = |status| ExitCode::of_loop(status).number();
        assert_eq!(number(Status::Answered), 0);
        assert_eq!(number(Status::Terminated), 0);
        assert_eq!(number(Status::Internal), 1);
        assert_eq!(number(Status::ConfigError), 2);
        assert_eq!(number(Status::OutputFailed), 2);
        assert_eq!(number(Status::Denied), 3);
        assert_eq!(number(Status::ApprovalFailed), 4);
        assert_eq!(number(Status::IterationLimit), 5);
        assert_eq!(number(Status::Timeout), 6);
        assert_eq!(number(Status::Malformed), 7);
        assert_eq!(number(Status::LlmFailed), 8);
        assert_eq!(number(Status::Interrupted), 130);
    }

    #[test]
    fn a_usage_error_outranks_a_failed_input() {
        assert_eq!(ExitCode::of_inputs(true, true), ExitCode::Usage);
        assert_eq!(ExitCode::of_inputs(false, true), ExitCode::Failed);
        assert_eq!(ExitCode::of_inputs(false, false), ExitCode::Success);
    }
}
