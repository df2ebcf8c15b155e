//! The generic decoders the format table is built from: blocks (`open … close`), prefixes
//! (no closer) and tagged calls (`begin HEAD sep BODY end`), and the body decoders they share.

use std::ops::Range;

use serde_json::Value;

use super::json::*;
use super::python::*;
use super::text::*;
use super::xml::*;
use crate::bytes::offset_in;
use crate::calls::pythonic::Py;
use crate::calls::scan::{
    Finder, Masked, bare_name, find_str, ident_len, is_name_byte, is_valid_json, json_extent,
    skip_ws,
};
use crate::calls::{Args, Ctx, Incomplete, Item, Out, Raw, Rejected};
use crate::error::{Code, Error};

/// How a body between markers is encoded.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Body {
    /// JSON call objects (or arrays of them); `name_is_key`: `{NAME: {args}}` (Apertus).
    Json { name_is_key: bool },
    /// What follows `<tool_call>`: JSON (Hermes, Granite), `<function=` (Qwen3-Coder) or a
    /// bare name and `<arg_key>` pairs (GLM).
    ToolCall,
    /// `<function=NAME>` tags holding `<parameter=K>V</parameter>` or JSON.
    FunctionTags,
    /// GLM-4.5: `NAME` then `<arg_key>K</arg_key><arg_value>V</arg_value>` pairs.
    Glm,
    /// `<PinvokeName name="X"><Pparameter name="K">V</Pparameter></Pinvoke>` with prefix P.
    Invoke(&'static str),
    /// Python calls, a `[…]` list or one per line.
    Pythonic,
    /// Python calls or JSON, whichever the body starts with.
    PythonicOrJson,
    /// Gemma: `call:NAME{key:value,...}` with strings between a quote token (`<escape>`,
    /// `<|"|>`) and bare keys, numbers, booleans and enum words.
    Gemma(&'static str),
}

pub(super) fn blocks(
    text: Masked<'_>,
    ctx: &Ctx<'_>,
    opens: &[&str],
    closes: &[&str],
    body: Body,
    out: &mut Out,
) {
    each_marker(text, opens, |find, start, body_start| {
        // A body that is valid JSON ends where that JSON does: markers in its strings are text.
        let at = skip_ws(&text, body_start);
        let search = if text[at..].starts_with(['{', '[']) {
            ctx.json_extent(&text, at, text.len())
                .filter(|&end| is_valid_json(&text[at..end]))
                .unwrap_or(body_start)
        } else {
            body_start
        };
        let close = find.find_any(search, text.len(), closes);
        let next = find.find_any(search, text.len(), opens);
        let (body_end, after, closed) = match (close, next) {
            (Some((c, len)), n) if n.is_none_or(|(o, _)| c <= o) => (c, c + len, true),
            (_, Some((o, _))) => (o, o, false),
            (_, None) => (text.len(), text.len(), false),
        };
        // A marker quoted in backticks, its block never closed, is a mention
        // (`` `<function=x>` `` in prose), not a call cut off.
        if !closed && text[..start].ends_with('`') {
            return body_start;
        }
        // `<function=` (`<function name=`) is itself the start of the body.
        let from = if opens.iter().all(|o| FUNCTION_OPENS.contains(o)) {
            start
        } else {
            body_start
        };
        if decode(text, ctx, body, from..body_end, closed, out).is_some() {
            out.cut.push(start..after);
            after.max(body_start)
        } else if (closed || !mentioned(text, &text[start..body_start], start))
            && let Some(calls) = after_prose(&text, ctx, body, body_start..body_end, out)
        {
            // The markers and the calls are cut; the stray words around the calls stay text.
            out.cut.extend([start..body_start, calls, body_end..after]);
            after.max(body_start)
        } else if let Some(item) = unread(
            text,
            &text[start..body_start],
            start,
            body_end,
            Opened::Block(closed),
        ) {
            out.unread.push((item, start..after));
            after.max(body_start)
        } else {
            body_start
        }
    });
    if !out.items.is_empty() || !out.unread.is_empty() {
        // A closing marker written twice, or without its opening one, is markup too.
        cut_all(text, closes, out);
    }
}

/// Markers that are also words or plain tags a reply may mention (`<tool_call>` tags, the
/// functools module): they start a call only at the start of a line or before call-like
/// text. The others are special tokens, never written in prose.
pub(super) const PLAIN_MARKERS: &[&str] = &[
    "<tool_call>",
    "<tool_calls>",
    "<TOOLCALL>",
    "<function_calls>",
    "<function_call>",
    "<function=",
    "<function name=",
    "functools",
    "[TOOL_CALLS]",
];

/// Whether the marker at `start` is only mentioned, for a body that does not start like a
/// call: in backticks, the word `functools`, or a plain marker in the middle of a line.
pub(super) fn mentioned(text: Masked<'_>, marker: &str, start: usize) -> bool {
    let line = text[..start].trim_end_matches([' ', '\t']);
    text[..start].ends_with('`')
        || marker == "functools"
        || (PLAIN_MARKERS.contains(&marker) && !(line.is_empty() || line.ends_with('\n')))
}

/// The error for a call marker at `start` whose body (to `body_end`) no decoder could read,
/// or `None` when the marker is only mentioned: in backticks, or a plain marker in the middle
/// of prose. A body that is empty to the end of the reply is a call cut off after its marker.
/// `Block(closed)`: the marker opens a block, closed or not; a plain opener in prose is a
/// mention only when its closer follows (`Use <tool_call> and </tool_call>`): left open
/// (`hi <tool_call> there`) it starts a call that could not be read.
pub(super) fn unread(
    text: Masked<'_>,
    marker: &str,
    start: usize,
    body_end: usize,
    opened: Opened,
) -> Option<Item> {
    let closed = matches!(opened, Opened::Block(true) | Opened::Section(true));
    let body = text[start + marker.len()..body_end].trim();
    let at_end = body.is_empty() && !closed && body_end == text.len();
    if body.is_empty() && !closed && !at_end {
        // The marker written twice: the next one starts the call.
        return None;
    }
    let call_like = body.starts_with(['{', '[', '<']) || body.starts_with("```");
    let left_open = opened == Opened::Block(false)
        && marker.starts_with('<')
        && !text[..start].ends_with('`')
        && !quoted_before(text, marker, start);
    if (mentioned(text, marker, start) && !(call_like || at_end || left_open))
        || marker == "functools"
    {
        return None;
    }
    if at_end {
        return Some(Item::Incomplete(Incomplete {
            tool: None,
            id: None,
            offset: start,
            message: format!("it ends after {marker}"),
        }));
    }
    Some(Item::failed(
        None,
        Error::at(
            Code::InvalidJson,
            start,
            format!("{marker} starts a tool call, but no call can be read from what follows it"),
        ),
    ))
}

/// Whether `marker` is quoted in backticks shortly before `start` (`Wrap calls in
/// `<tool_call>` tags, like <tool_call> this`): the reply talks about the markup. Only a
/// bounded stretch is looked at, so that many markers stay linear.
fn quoted_before(text: Masked<'_>, marker: &str, start: usize) -> bool {
    let mut from = start.saturating_sub(512);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let quoted = format!("`{marker}`");
    find_str(text.sub(from..start), &quoted).is_some()
}

/// How the marker given to [`unread`] opens its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Opened {
    /// A block marker, and whether its closer came.
    Block(bool),
    /// A prefix, whose call has no closer.
    Prefix,
    /// A section of tagged calls, and whether it closed.
    Section(bool),
}

pub(super) fn prefixes(
    text: Masked<'_>,
    ctx: &Ctx<'_>,
    opens: &[&str],
    lead: &[&str],
    body: Body,
    out: &mut Out,
) {
    each_marker(text, opens, |find, at, body_start| {
        let body_end = find
            .find_any(body_start, text.len(), opens)
            .map_or(text.len(), |(j, _)| j);
        let before = text[..at].trim_end();
        let start = lead
            .iter()
            .find(|l| before.ends_with(**l))
            .map_or(at, |l| before.len() - l.len());
        let open = &text[at..body_start];
        match decode(text, ctx, body, body_start..body_end, false, out) {
            Some(end) => {
                out.cut.push(start..end);
                end.max(body_start)
            }
            None if !mentioned(text, open, at)
                && let Some(calls) = after_prose(&text, ctx, body, body_start..body_end, out) =>
            {
                out.cut.extend([start..body_start, calls.clone()]);
                calls.end.max(body_start)
            }
            None => match unread(text, open, at, body_end, Opened::Prefix) {
                Some(item) => {
                    out.unread.push((item, start..body_end));
                    body_end.max(body_start)
                }
                None => body_start,
            },
        }
    });
}

/// Calls `one` on each of the `opens` markers in `text`, left to right, with the finder,
/// where the marker starts and where the text after it starts; `one` says where the next
/// marker may start.
fn each_marker(
    text: Masked<'_>,
    opens: &[&str],
    mut one: impl FnMut(&mut Finder, usize, usize) -> usize,
) {
    let mut find = Finder::new(text);
    let mut pos = 0;
    while let Some((start, len)) = find.find_any(pos, text.len(), opens) {
        pos = one(&mut find, start, start + len);
    }
}

/// Decodes one body into `out.items`; returns where the decoded part ends, or `None` (having
/// added nothing) when the body holds no call, so the marker was only mentioned.
pub(super) fn decode(
    text: Masked<'_>,
    ctx: &Ctx<'_>,
    body: Body,
    range: Range<usize>,
    closed: bool,
    out: &mut Out,
) -> Option<usize> {
    let at = skip_ws(&text, range.start).min(range.end);
    let rest = &text[at..range.end];
    // XML function tags in a block of another encoding (`<tool_call><function=…>`, MiniCPM's
    // `<function name=…>` in any wrapper) are read as what they are.
    if FUNCTION_OPENS.iter().any(|o| rest.starts_with(o))
        && matches!(
            body,
            Body::Json { .. } | Body::ToolCall | Body::Pythonic | Body::PythonicOrJson
        )
    {
        return function_tags(text, range, closed, out);
    }
    match body {
        Body::Json { name_is_key } => json_seq(&text, ctx, range, name_is_key, true, out),
        Body::ToolCall => {
            if rest.starts_with(['{', '[']) || rest.starts_with("```") {
                json_seq(&text, ctx, range, false, true, out)
            } else if rest.starts_with("<function=") {
                function_tags(text, range, closed, out)
            } else if looks_like_glm(&text[range.start..range.end]) {
                glm(text, range, closed, out)
            } else {
                None
            }
        }
        Body::FunctionTags => function_tags(text, range, closed, out),
        Body::Glm => glm(text, range, closed, out),
        Body::Invoke(prefix) => invokes(text, range, closed, prefix, out),
        Body::Pythonic => pythonic(&text, range, out),
        Body::Gemma(quote) => gemma(text, range, quote, out),
        Body::PythonicOrJson => {
            let n = ident_len(&text, at);
            if Py::looks_like_list(&text, at) || (n > 0 && text[at + n..].starts_with(['(', '.'])) {
                pythonic(&text, range, out)
            } else if rest.starts_with(['{', '[']) {
                json_seq(&text, ctx, range, false, true, out)
            } else {
                None
            }
        }
    }
}

/// Decodes a body whose JSON calls follow stray words; the words stay text. Returns the span
/// the calls took.
pub(super) fn after_prose(
    text: &str,
    ctx: &Ctx<'_>,
    body: Body,
    range: Range<usize>,
    out: &mut Out,
) -> Option<Range<usize>> {
    let name_is_key = match body {
        Body::Json { name_is_key } => name_is_key,
        Body::ToolCall | Body::PythonicOrJson => false,
        _ => return None,
    };
    let start = call_json(text, ctx, range.clone())?;
    let end = json_seq(text, ctx, start..range.end, name_is_key, true, out)?;
    Some(start..end)
}

/// Whether a Kimi K2 call id is `functions.NAME:INDEX` (or `NAME:INDEX`).
pub(super) fn is_call_id(head: &str) -> bool {
    let Some((name, index)) = head.rsplit_once(':') else {
        return false;
    };
    let name = name.strip_prefix("functions.").unwrap_or(name);
    !index.is_empty()
        && index.bytes().all(|b| b.is_ascii_digit())
        && !name.is_empty()
        && name.bytes().all(is_name_byte)
}

/// DeepSeek, Kimi K2 and Step-3: `open HEAD sep ARGS close` per call.
pub(super) fn tagged(
    text: Masked<'_>,
    [open, sep, close]: [&str; 3],
    section: &[&str],
    body: Body,
    id_head: bool,
    out: &mut Out,
) {
    let mut find = Finder::new(text);
    let mut pos = 0;
    let mut any = false;
    while let Some(start) = find.find(pos, text.len(), open) {
        let head_start = start + open.len();
        let next_open = find
            .find(head_start, text.len(), open)
            .unwrap_or(text.len());
        let limit = find
            .find_any(head_start, text.len(), section)
            .map_or(next_open, |(s, _)| s.min(next_open));
        any = true;
        // Step-3 may leave out `function<｜tool_sep｜>` and open its `<steptml:invoke …>` at
        // once (vLLM's tests have such replies): the invoke names the call.
        if let Body::Invoke(prefix) = body
            && text[skip_ws(&text, head_start).min(limit)..limit]
                .strip_prefix('<')
                .and_then(|tag| tag.strip_prefix(prefix))
                .is_some_and(|tag| tag.starts_with("invoke"))
        {
            let (body_end, after) = until(&mut find, head_start, limit, &[close]);
            let mut call_end = after.unwrap_or(body_end);
            // (Those replies put a `<｜tool_sep｜>` between calls: markup too.)
            let next = skip_ws(&text, call_end);
            if after.is_some() && text[next..].starts_with(sep) {
                call_end = next + sep.len();
            }
            out.cut.push(start..call_end);
            invokes(text, head_start..body_end, after.is_some(), prefix, out);
            pos = call_end.max(head_start);
            continue;
        }
        let Some(sep_at) = find.find_any(head_start, limit, &[sep]).map(|(at, _)| at) else {
            let head = text[head_start..limit].trim();
            let (tool, id) = if head.is_empty() || head == "function" {
                (None, None)
            } else if id_head && !is_call_id(head) {
                (None, Some(head.to_owned()))
            } else {
                let (tool, id) = bare_name(head);
                (Some(tool), id)
            };
            out.items.push(Item::Incomplete(Incomplete {
                tool: tool.filter(|t| !t.is_empty()),
                id: id.map(Value::String),
                offset: start,
                message: format!("it ends before {sep}"),
            }));
            out.cut.push(start..limit);
            pos = limit.max(head_start);
            continue;
        };
        let head = text[head_start..sep_at].trim();
        let args_start = sep_at + sep.len();
        let (args_end, after) = until(&mut find, args_start, limit, &[close]);
        let complete = after.is_some();
        let call_end = after.unwrap_or(args_end);
        out.cut.push(start..call_end);
        pos = call_end.max(head_start);
        if id_head && !is_call_id(head) {
            // `functions.invalid.0` is no call to a tool named `invalid.0`: the id is how the
            // format names the tool, and this one names none.
            out.items.push(Item::Failed(Rejected {
                tool: None,
                id: Some(Value::String(head.to_owned())),
                parameters: None,
                error: Error::at(
                    Code::MissingField,
                    start,
                    format!(
                        "tool call id {head:?} is not functions.NAME:INDEX, so it names no tool"
                    ),
                ),
                violations: Vec::new(),
            }));
            continue;
        }
        if let Body::Invoke(prefix) = body {
            invokes(text, args_start..args_end, complete, prefix, out);
            continue;
        }
        let (name, args) = if head == "function" {
            // DeepSeek V3 / R1: the name is on the first line, then a fenced JSON block.
            let rest = &text[args_start..args_end];
            match rest.split_once('\n') {
                Some((name, args)) => (name.trim().to_owned(), args),
                None => (rest.trim().to_owned(), ""),
            }
        } else {
            (head.to_owned(), &text[args_start..args_end])
        };
        let args = strip_fence(args.trim());
        if !complete
            && (args.is_empty() || (args.starts_with(['{', '[']) && json_extent(args, 0).is_none()))
        {
            out.cut_off(
                Some(bare_name(&name).0).filter(|n| !n.is_empty()),
                start,
                format!("it ends before {close}"),
            );
            continue;
        }
        out.items.push(Item::Call(Raw {
            name: Some(name),
            args: Args::Text(args.to_owned()),
            args_at: offset_in(&text, args),
            offset: start,
            ..Raw::default()
        }));
    }
    if any {
        cut_all(text, section, out);
    } else {
        // A section that opens, but holds no call (its closing markers all say `end`).
        let opens: Vec<&str> = section
            .iter()
            .copied()
            .filter(|m| !m.contains("end"))
            .collect();
        if let Some((start, len)) = find.find_any(0, text.len(), &opens) {
            let next = find.find_any(start + len, text.len(), section);
            let body_end = next.map_or(text.len(), |(e, _)| e);
            let end = next.map_or(text.len(), |(e, l)| e + l);
            let marker = &text[start..start + len];
            if let Some(item) = unread(
                text,
                marker,
                start,
                body_end,
                Opened::Section(next.is_some()),
            ) {
                out.unread.push((item, start..end));
            }
        }
    }
}
