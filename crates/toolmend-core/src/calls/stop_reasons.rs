//! What an API's stop reason says of the reply: cut (its last call is incomplete, however whole
//! its JSON looks) or a call the server dropped. The one rule for whole replies
//! ([`super::message`]) and streams ([`super::Deltas`], `stream::server`).

/// The stop reasons that say an API cut the output (`field` as the API names it).
const CUT_REASONS: &[(&str, &str)] = &[
    ("finish_reason", "length"),
    ("stop_reason", "max_tokens"),
    ("done_reason", "length"),
    ("finishReason", "MAX_TOKENS"),
    ("incomplete_details.reason", "max_output_tokens"),
    // Stopped by the server's filters or the context window, not by the model: a call being
    // written was cut there, however whole its JSON looks.
    ("finish_reason", "content_filter"),
    // OpenRouter: the provider failed mid-stream (its chunk's `error` says how).
    ("finish_reason", "error"),
    ("incomplete_details.reason", "content_filter"),
    ("stop_reason", "refusal"),
    ("stop_reason", "model_context_window_exceeded"),
    ("finishReason", "SAFETY"),
    ("finishReason", "RECITATION"),
    ("finishReason", "BLOCKLIST"),
    ("finishReason", "PROHIBITED_CONTENT"),
    ("finishReason", "SPII"),
    // Cohere v2.
    ("finish_reason", "MAX_TOKENS"),
    // Replicate: a prediction canceled, or not finished when it was read (`Prefer: wait`
    // timed out).
    ("status", "canceled"),
    ("status", "aborted"),
    ("status", "starting"),
    ("status", "processing"),
    // Replicate's stream: its `done` event's data.
    ("reason", "canceled"),
    ("reason", "error"),
    // Amazon Bedrock Converse.
    ("stopReason", "max_tokens"),
    ("stopReason", "model_context_window_exceeded"),
    ("stopReason", "guardrail_intervened"),
    ("stopReason", "content_filtered"),
];

/// How the message of a call the server dropped ([`dropped_by`]) starts.
pub(crate) const DROPPED: &str = "the server dropped a call the model wrote:";

/// Why a call the model wrote is missing, when an API's stop reason says the server dropped
/// it (Gemini's `MALFORMED_FUNCTION_CALL`: a call it could not parse; `UNEXPECTED_TOOL_CALL`:
/// a call where none may be), with the server's own words (`finishMessage`, which often holds
/// the call as written). The reply then has a call that is not one, as a cut call is not: the
/// record fails with `incomplete_call`, never `ok` with the call gone (or its text taken for
/// an answer). The one rule for whole replies and streams.
pub fn dropped_by(field: &str, reason: &str, message: Option<&str>) -> Option<String> {
    // Its own words, not a cut's, in the reply's error too ([`super::Extracted::error`]).
    let dropped = field == "finishReason"
        && matches!(reason, "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL");
    dropped.then(|| {
        let mut why = format!("{DROPPED} {field} {reason:?}");
        if let Some(message) = message.filter(|m| !m.is_empty()) {
            why.push_str(&format!(" ({message})"));
        }
        why
    })
}

/// Why the output was cut, when an API's stop reason (`field`: `finish_reason`,
/// `stop_reason`, `done_reason`, `finishReason`, `incomplete_details.reason`) says it was:
/// the message a call made incomplete by it carries. The one rule for whole replies and
/// streams.
pub fn cut_by(field: &str, reason: &str) -> Option<String> {
    CUT_REASONS
        .contains(&(field, reason))
        .then(|| format!("the API's stop reason says the output was cut: {field} {reason:?}"))
}
