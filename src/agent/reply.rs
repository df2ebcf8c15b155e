//! What a model's reply is to the loop: its answer, one valid call, or malformed (and the
//! message that tells the model why).

use toolmend_core::calls::{self, Call, CallOptions, Extracted, Failure};
use toolmend_core::{Code, Mender, Options, RepairKind, Target};

/// What a reply is.
pub(super) enum Reply {
    /// The final answer, and why the API says it was cut (`output_cut`), if it does.
    Answer { text: String, cut: Option<String> },
    /// One valid call; `reason` is the text the model wrote beside it.
    Call {
        call: Box<Call>,
        reason: Option<String>,
    },
    /// Not usable: the code and what is wrong, to tell the model.
    Malformed { code: &'static str, message: String },
}
/// What a reply is: an answer, one valid call, or malformed (and why).
pub(super) fn read_reply(reply: &str, options: &CallOptions) -> Reply {
    judge(reply, calls::extract(reply, options))
}

/// What a reply is, from what the extractor found in it.
pub(super) fn judge(reply: &str, extracted: Result<Extracted, Failure>) -> Reply {
    let found = match extracted {
        Ok(found) => found,
        Err(failure) => {
            let mut message = failure.error.message;
            if failure.error.code == Code::IncompleteCall {
                // "Cut off" also covers JSON that breaks before its end; the strict
                // parser says exactly where, which is what the model needs to fix it.
                let call = failure.error.offset.and_then(|at| reply.get(at..));
                if let Some(Err(e)) = call.map(strict_parse) {
                    message.push_str(&format!(" (as JSON, from the call's start: {})", e.message));
                }
            }
            return Reply::Malformed {
                code: failure.error.code.as_str(),
                message,
            };
        }
    };
    let count = found.calls.len();
    if count > 1 {
        return Reply::Malformed {
            code: Code::Concatenated.as_str(),
            message: format!(
                "the reply holds {count} tool calls; send exactly one JSON object per reply"
            ),
        };
    }
    // The API cut the output while the model wrote its text: the answer is what came, with
    // the reason (the run says so beside it).
    let cut = found
        .repairs
        .iter()
        .find(|r| r.kind == RepairKind::OutputCut)
        .and_then(|r| r.text.clone());
    match found.calls.into_iter().next() {
        Some(call) => Reply::Call {
            call: Box::new(call),
            reason: found.text,
        },
        None => {
            let text = found.text.unwrap_or_default();
            if text.trim().is_empty() {
                // Only reasoning: no answer to give, so the model is asked again.
                return Reply::Malformed {
                    code: Code::EmptyInput.as_str(),
                    message: "the reply has no text besides its reasoning".to_owned(),
                };
            }
            match attempted_call(&text) {
                Some((code, message)) => Reply::Malformed { code, message },
                None => Reply::Answer { text, cut },
            }
        }
    }
}
/// Whether a reply without a call still tries to be one: it has a `"tool"`, `"parameters"` or
/// `"terminate"` key. The extractor reads such text as prose when the JSON is too broken or
/// lacks the envelope; the model must hear about it, not have it taken for its answer. Other
/// JSON (an answer that is a JSON document) stays an answer.
pub(super) fn attempted_call(text: &str) -> Option<(&'static str, String)> {
    let has_key = |key: &str| {
        text.match_indices(key)
            .any(|(at, _)| text[at + key.len()..].trim_start().starts_with(':'))
    };
    if !["\"tool\"", "\"parameters\"", "\"terminate\""]
        .into_iter()
        .any(has_key)
    {
        return None;
    }
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .map_or(trimmed, |rest| rest.trim_end().trim_end_matches("```"))
        .trim();
    Some(match strict_parse(body) {
        Err(e) if body.starts_with('{') => (
            Code::InvalidJson.as_str(),
            format!("the reply is not valid JSON: {}", e.message),
        ),
        _ => (
            Code::MissingField.as_str(),
            "the reply looks like a tool call but is not {\"tool\": string, \"parameters\": \
             object, \"terminate\": boolean} with a known tool"
                .to_owned(),
        ),
    })
}

/// Parses `text` as one JSON object, without repairs: `Err` says what breaks and where.
pub(super) fn strict_parse(text: &str) -> Result<(), toolmend_core::Error> {
    let mut strict = Mender::new(Options {
        target: Target::Object,
        strict: true,
        ..Options::default()
    });
    strict.mend(text).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempted_calls() {
        assert!(attempted_call("The answer is 42.").is_none());
        assert!(attempted_call("I think {\"a\": 1} is JSON").is_none());
        assert!(attempted_call("```json\n{\"name\": \"config\", \"tool\": 1}\n```").is_some());
        assert!(attempted_call("```json\n{\"name\": \"config\", \"tools\": []}\n```").is_none());
        assert!(attempted_call("{\"answer\": 42}").is_none());
        let (code, message) =
            attempted_call("{\"tool\": \"echo\", \"parameters\": {\"text\": \"hi\" @@ }}").unwrap();
        assert_eq!(code, "invalid_json");
        assert!(message.contains("byte"), "{message}");
        let (code, _) =
            attempted_call("```json\n{\"parameters\": {}, \"terminate\": false}\n```").unwrap();
        assert_eq!(code, "missing_field");
        assert!(attempted_call("Calling: \"tool\": echo").is_some());
    }
}
