//! Mistral (`[TOOL_CALLS]`, every version) and Functionary v3.2 (`>>>NAME`).

use serde_json::{Map, Value};

use super::drivers::*;
use super::json::*;
use crate::calls::scan::{Masked, find_str, is_name_byte, json_extent, skip_ws};
use crate::calls::{Args, Ctx, Incomplete, Item, Out, Raw};

/// Mistral's marker before its calls.
pub(crate) const MISTRAL_OPEN: &str = "[TOOL_CALLS]";
/// Mistral v13's tags between a call's name and its arguments: the call id, then the arguments.
pub(crate) const MISTRAL_TAGS: [&str; 2] = [CALL_ID, ARGS];
const CALL_ID: &str = "[CALL_ID]";
const ARGS: &str = "[ARGS]";
/// Functionary v3.2's marker before each call's name.
pub(crate) const ARROWS: &str = ">>>";
/// The name after [`ARROWS`] that starts text, not a call.
pub(crate) const ARROWS_TEXT: &str = "all";

/// Mistral: `[TOOL_CALLS]` then a JSON array (pre-v11), `NAME{json}` (v11) or
/// `NAME[ARGS]{json}` with an optional `[CALL_ID]id` (v13). Stray words between the marker and
/// the calls (and after them) stay text; a marker followed by nothing readable is an error.
pub(super) fn mistral(text: Masked<'_>, ctx: &Ctx<'_>, out: &mut Out) {
    const MARK: &str = MISTRAL_OPEN;
    let mut pos = 0;
    while let Some(i) = find_str(text.sub(pos..), MARK) {
        let start = pos + i;
        let after = start + MARK.len();
        let segment_end = find_str(text.sub(after..), MARK).map_or(text.len(), |j| after + j);
        let at = skip_ws(&text, after).min(segment_end);
        pos = after;
        if text[at..].starts_with(['[', '{']) {
            if let Some(end) = json_seq(&text, ctx, at..segment_end, false, true, out) {
                out.cut.push(start..end);
                pos = end.max(after);
            }
            continue;
        }
        let n = text[at..segment_end]
            .bytes()
            .take_while(|b| is_name_byte(*b))
            .count();
        let name = &text[at..at + n];
        let mut j = at + n;
        let mut id = None;
        let mut tagged = false;
        // `[CALL_ID]id` and `[ARGS]`, in either order.
        while n > 0
            && MISTRAL_TAGS
                .iter()
                .any(|t| text[j..segment_end].starts_with(t))
        {
            if let Some(rest) = text[j..segment_end].strip_prefix(CALL_ID) {
                let m = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
                id = Some(Value::String(rest[..m].to_owned()));
                j += CALL_ID.len() + m;
            } else {
                j += ARGS.len();
            }
            tagged = true;
        }
        let args_at = skip_ws(&text, j).min(segment_end);
        // v11 writes the arguments right after the name; v13 after its tags.
        let args_at = if tagged || text[j..].starts_with('{') {
            Some(args_at)
        } else {
            None
        };
        if n > 0 && args_at.is_some_and(|a| text[a..segment_end].starts_with(['{', '['])) {
            let args_at = args_at.unwrap_or(j);
            let args_end = json_extent(&text[..segment_end], args_at).unwrap_or(segment_end);
            let mut end = args_end;
            // An id written after the arguments.
            if id.is_none()
                && let Some(rest) = text[end..segment_end].strip_prefix(CALL_ID)
            {
                let m = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
                id = Some(Value::String(rest[..m].to_owned()));
                end += CALL_ID.len() + m;
            }
            out.text_call(name, id, &text[args_at..args_end], args_at, start..end);
            pos = end.max(after);
            continue;
        }
        if n > 0 && skip_ws(&text, j) >= segment_end {
            out.items.push(Item::Incomplete(Incomplete {
                tool: Some(name.to_owned()),
                id,
                offset: start,
                message: "it ends before its arguments".into(),
            }));
            out.cut.push(start..segment_end);
            pos = segment_end.max(after);
            continue;
        }
        // Stray words, then the calls: the first JSON value in the segment that holds them.
        if let Some(json_at) = call_json(&text, ctx, at..segment_end)
            && let Some(end) = json_seq(&text, ctx, json_at..segment_end, false, true, out)
        {
            out.cut.extend([start..after, json_at..end]);
            pos = end.max(after);
            continue;
        }
        // `NAME {json}`: v11 with a space before the arguments.
        let k = skip_ws(&text, j).min(segment_end);
        if n > 0 && k > j && !name.ends_with([':', '.', '-']) && text[k..].starts_with('{') {
            let end = json_extent(&text[..segment_end], k).unwrap_or(segment_end);
            out.text_call(name, id, &text[k..end], k, start..end);
            pos = end.max(after);
            continue;
        }
        if let Some(item) = unread(text, MARK, start, segment_end, Opened::Prefix) {
            out.unread.push((item, start..segment_end));
            pos = segment_end.max(after);
        }
    }
}

/// Functionary v3.2: `>>>NAME\n{json}` per call; `>>>all\n` (or a leading `all\n`) starts text.
pub(super) fn functionary32(text: Masked<'_>, ctx: &Ctx<'_>, out: &mut Out) {
    let _ = ctx;
    let mut pos = 0;
    let mut any = false;
    let mut cuts = Vec::new();
    while let Some(i) = find_str(text.sub(pos..), ARROWS) {
        let start = pos + i;
        let name_at = start + ARROWS.len();
        let n = text[name_at..]
            .bytes()
            .take_while(|b| is_name_byte(*b))
            .count();
        pos = name_at;
        if n == 0 || !text[name_at + n..].starts_with('\n') {
            continue;
        }
        let name = &text[name_at..name_at + n];
        let body_start = name_at + n + 1;
        if name == ARROWS_TEXT {
            cuts.push(start..body_start);
            pos = body_start;
            continue;
        }
        let body_end =
            find_str(text.sub(body_start..), ARROWS).map_or(text.len(), |j| body_start + j);
        let at = skip_ws(&text, body_start).min(body_end);
        let args = if text[at..].starts_with('{') {
            let end = json_extent(&text[..body_end], at).unwrap_or(body_end);
            cuts.push(start..end);
            pos = end;
            Args::Text(text[at..end].to_owned())
        } else if name == "python" {
            cuts.push(start..body_end);
            pos = body_end;
            let mut code = Map::new();
            code.insert(
                "code".into(),
                Value::String(text[body_start..body_end].trim().to_owned()),
            );
            Args::Value(Value::Object(code))
        } else {
            continue;
        };
        any = true;
        let args_at = matches!(args, Args::Text(_)).then_some(at);
        out.items.push(Item::Call(Raw {
            name: Some(name.to_owned()),
            args,
            args_at,
            offset: start,
            ..Raw::default()
        }));
    }
    if any {
        let lead = skip_ws(&text, 0);
        if text[lead..].starts_with("all\n") {
            cuts.push(lead..lead + 4);
        }
    }
    // `>>>all\n` opens text whether or not calls come (llama.cpp reads it so); a bare
    // `all\n` is that only before calls.
    out.cut.extend(cuts);
}
