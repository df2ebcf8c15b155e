//! XML-style bodies: `<function=NAME>` tags (Qwen3-Coder, Functionary), GLM's `<arg_key>`
//! pairs, `<invoke>` (MiniMax-M2, DeepSeek DSML, Step-3) and Gemma's calls.

use std::ops::Range;

use serde_json::Value;

use super::text::*;
use crate::bytes::offset_in;
use crate::calls::scan::{Finder, Masked, bare_name, find_str, is_name_byte, skip_ws};
use crate::calls::{Args, Field, Incomplete, Item, Out, Raw};
use crate::repair::{Repair, RepairKind};

/// GLM writes the name right after `<tool_call>`, then a newline, `<arg_key>` or the close;
/// `<tool_call> tags` in prose is a mention.
pub(super) fn looks_like_glm(body: &str) -> bool {
    let n = body.bytes().take_while(|b| is_name_byte(*b)).count();
    if n == 0 || body[..n].ends_with(['.', ':', '-']) {
        return false;
    }
    let after = &body[n..];
    after.is_empty()
        || after.starts_with(['\n', '\r'])
        || after.starts_with("\\n")
        || after.starts_with("\\r\\n")
        || after.starts_with("<arg_key>")
        || after.starts_with("</tool_call>")
}

/// How many bytes of white space start `s`, counting the escapes of it (`\n`, `\r`, `\t`
/// written as two characters) that a GLM reply JSON-encoded once more on its way carries
/// between its tags (SGLang's tests of GLM-4.5 have such replies).
fn glm_space_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 0;
    loop {
        match bytes.get(i..) {
            Some([b' ' | b'\t' | b'\n' | b'\r', ..]) => i += 1,
            Some([b'\\', b'n' | b'r' | b't', ..]) => i += 2,
            _ => return i,
        }
    }
}

/// One leading and one trailing newline stripped, as Qwen3-Coder writes values.
pub(super) fn xml_value(raw: &str) -> String {
    let raw = raw
        .strip_prefix("\r\n")
        .or_else(|| raw.strip_prefix('\n'))
        .unwrap_or(raw);
    let raw = raw
        .strip_suffix("\r\n")
        .or_else(|| raw.strip_suffix('\n'))
        .unwrap_or(raw);
    raw.to_owned()
}

/// `<function=NAME>…</function>` tags in `range`.
/// Gemma calls in `range`: each `call:NAME{...}` is rewritten as JSON text (strings between
/// `quote` tokens escaped, bare keys and enum words quoted) for the args pipeline. A call whose
/// braces or strings are not closed is incomplete.
pub(super) fn gemma(
    text: Masked<'_>,
    range: Range<usize>,
    quote: &str,
    out: &mut Out,
) -> Option<usize> {
    let mut pos = range.start;
    let mut any = false;
    while let Some(i) = find_str(text.sub(pos..range.end), "call:") {
        let start = pos + i;
        let name_start = start + "call:".len();
        let name_len = text.as_bytes()[name_start..range.end]
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            .count();
        let brace = name_start + name_len;
        if name_len == 0 || !text[brace..range.end].starts_with('{') {
            pos = name_start;
            continue;
        }
        any = true;
        let name = &text[name_start..brace];
        match gemma_args(text.sub(..range.end), brace, quote) {
            Some((json, end)) => {
                out.items.push(Item::Call(Raw {
                    name: Some(name.to_owned()),
                    args: Args::Text(json),
                    offset: start,
                    ..Raw::default()
                }));
                pos = end;
            }
            None => {
                out.cut_off(
                    Some(bare_name(name).0),
                    start,
                    "it ends before its arguments are closed",
                );
                return Some(range.end);
            }
        }
    }
    any.then_some(range.end)
}

/// The Gemma arguments opening at `brace`, as JSON text, and where they end; `None` when the
/// text ends first.
pub(super) fn gemma_args(text: Masked<'_>, brace: usize, quote: &str) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let mut json = Vec::new();
    // For each open container, whether it is an object (its entries start with a key).
    let mut stack: Vec<bool> = Vec::new();
    let mut at_key = false;
    let mut j = brace;
    while j < bytes.len() {
        if text[j..].starts_with(quote) {
            let s = j + quote.len();
            let len = find_str(text.sub(s..), quote)?;
            crate::bytes::escape::push_json_string(&mut json, &bytes[s..s + len]);
            j = s + len + quote.len();
            at_key = false;
            continue;
        }
        let b = bytes[j];
        match b {
            b'{' | b'[' => {
                stack.push(b == b'{');
                at_key = b == b'{';
                json.push(b);
                j += 1;
            }
            b'}' | b']' => {
                stack.pop();
                json.push(b);
                j += 1;
                if stack.is_empty() {
                    return Some((String::from_utf8(json).ok()?, j));
                }
            }
            b',' => {
                at_key = stack.last() == Some(&true);
                json.push(b);
                j += 1;
            }
            b':' => {
                at_key = false;
                json.push(b);
                j += 1;
            }
            _ if b.is_ascii_whitespace() => j += 1,
            _ => {
                // A bare word: a key, or a value (number and literals as they are, an enum
                // word as a string).
                let len = bytes[j..]
                    .iter()
                    .take_while(|&&c| !matches!(c, b',' | b':' | b'{' | b'}' | b'[' | b']'))
                    .count();
                let word = text[j..j + len].trim_end();
                let literal =
                    matches!(word, "true" | "false" | "null") || crate::exact::is_number(word);
                // `108.`: a float written with its point and no digit after it.
                let point_number = !at_key
                    && word.strip_suffix('.').is_some_and(|whole| {
                        !whole.contains(['.', 'e', 'E']) && crate::exact::is_number(whole)
                    });
                if point_number {
                    json.extend_from_slice(word.as_bytes());
                    json.push(b'0');
                } else if at_key || !literal {
                    crate::bytes::escape::push_json_string(&mut json, word.as_bytes());
                } else {
                    json.extend_from_slice(word.as_bytes());
                }
                j += len;
            }
        }
    }
    None
}

/// The tags that open an XML-style call: `<function=NAME>` (Qwen3-Coder, Functionary) and
/// `<function name="NAME">` (MiniCPM).
pub(super) const FUNCTION_OPENS: &[&str] = &["<function=", "<function name="];
/// The tags that open a value in such a call: `<parameter=KEY>`, and the attribute forms
/// `<parameter name="KEY">`, `<param name="KEY">`.
const PARAM_OPENS: &[&str] = &["<parameter=", "<parameter name=", "<param name="];
const PARAM_CLOSES: &[&str] = &["</parameter>", "</param>"];

/// The name a tag opened by `open` gives, its text to `gt` (the `>`): what follows `=`, or
/// the `name` attribute of the attribute forms.
fn tag_name<'t>(
    text: Masked<'t>,
    open_at: usize,
    open: &str,
    gt: usize,
) -> std::borrow::Cow<'t, str> {
    if open.ends_with(" name=") {
        let tag = text.sub(open_at + open.len() - "name=".len()..gt);
        return attr(tag, "name").unwrap_or_default().into();
    }
    text.as_str()[open_at + open.len()..gt]
        .trim()
        .trim_matches(['"', '\''])
        .into()
}

pub(super) fn function_tags(
    text: Masked<'_>,
    range: Range<usize>,
    closed: bool,
    out: &mut Out,
) -> Option<usize> {
    let mut find = Finder::new(text);
    let mut pos = range.start;
    let mut any = false;
    while let Some((start, len)) = find.find_any(pos, range.end, FUNCTION_OPENS) {
        let open = &text[start..start + len];
        let name_start = start + len;
        if let Some((name_end, args_at)) = eq_dialect(&text, open, name_start, range.end) {
            any = true;
            let (content_end, after) = until(&mut find, args_at, range.end, &["</function>"]);
            let name = &text[name_start..name_end];
            let complete = after.is_some() || closed;
            function_body(text, name, start, args_at..content_end, complete, out);
            pos = after.unwrap_or(range.end);
            continue;
        }
        let Some(gt) = text[name_start..range.end].find('>') else {
            out.cut_off(None, start, format!("it ends inside its {open}… tag"));
            return Some(range.end);
        };
        let name = tag_name(text, start, open, name_start + gt);
        // Names in other scripts (`<function=获取天气>`, as Ollama's tests of Qwen3-Coder
        // have) are names too: letters and digits of any script.
        let named = |c: char| c.is_alphanumeric() || c.is_ascii() && is_name_byte(c as u8);
        if name.is_empty() || !name.chars().all(named) {
            pos = name_start;
            continue;
        }
        any = true;
        let content_start = name_start + gt + 1;
        let (content_end, after) = until(&mut find, content_start, range.end, &["</function>"]);
        let complete = after.is_some() || closed;
        function_body(
            text,
            &name,
            start,
            content_start..content_end,
            complete,
            out,
        );
        pos = after.unwrap_or(range.end);
    }
    any.then_some(range.end)
}

/// Llama models on Groq write `<function=NAME={JSON}</function>` (or `<function=NAME{JSON}`):
/// an `=` where the tag's `>` belongs, or nothing; some write the call as Python's
/// (`<function=NAME({JSON})</function>`, the `)` then left as text after the JSON). For such a
/// `<function=` tag (`open`), its name at `name_start` and where its JSON starts. `NAME=` or
/// `NAME(` and `{` must come at once: anything else (`<function=a=b>`) is no call of this kind.
pub(in crate::calls) fn eq_dialect(
    text: &str,
    open: &str,
    name_start: usize,
    limit: usize,
) -> Option<(usize, usize)> {
    if open != "<function=" {
        return None;
    }
    let bytes = &text.as_bytes()[..limit];
    let name_end = name_start
        + bytes[name_start..]
            .iter()
            .take_while(|&&b| is_name_byte(b))
            .count();
    if name_end == name_start {
        return None;
    }
    match bytes.get(name_end..) {
        Some([b'{', ..]) => Some((name_end, name_end)),
        Some([b'=' | b'(', b'{', ..]) => Some((name_end, name_end + 1)),
        _ => None,
    }
}

pub(super) fn function_body(
    text: Masked<'_>,
    name: &str,
    offset: usize,
    range: Range<usize>,
    complete: bool,
    out: &mut Out,
) {
    let at = skip_ws(&text, range.start).min(range.end);
    let content = &text[at..range.end];
    let incomplete = |message: &str| {
        Item::Incomplete(Incomplete {
            tool: Some(bare_name(name).0),
            id: None,
            offset,
            message: message.to_owned(),
        })
    };
    let tagged = PARAM_OPENS.iter().any(|open| content.contains(open));
    // Functionary v3.1: the arguments are JSON; their end decides completeness. Text that is
    // no `<parameter=…>` tag is read as JSON too (Llama on Groq leaves the `{` out:
    // `<function=f>"query": "x"}`): mended or refused in the arguments' words, never dropped.
    if content.starts_with(['{', '['])
        || !tagged && !content.trim_end().is_empty() && complete
        || !tagged && content.starts_with('"')
    {
        out.items.push(Item::Call(Raw {
            name: Some(name.to_owned()),
            args: Args::Text(content.trim_end().to_owned()),
            args_at: Some(at),
            offset,
            ..Raw::default()
        }));
        return;
    }
    if !complete {
        out.items.push(incomplete("it ends before </function>"));
        return;
    }
    let mut find = Finder::new(text);
    let mut fields = Vec::new();
    let mut pos = range.start;
    let ends: Vec<&str> = PARAM_CLOSES
        .iter()
        .chain(PARAM_OPENS)
        .chain(&["</function>"])
        .copied()
        .collect();
    while let Some((open_at, len)) = find.find_any(pos, range.end, PARAM_OPENS) {
        let open = &text[open_at..open_at + len];
        let key_start = open_at + len;
        let Some(gt) = text[key_start..range.end].find('>') else {
            out.items
                .push(incomplete(&format!("it ends inside a {open}… tag")));
            return;
        };
        let key = tag_name(text, open_at, open, key_start + gt);
        let value_start = key_start + gt + 1;
        let (value_end, after) = until(&mut find, value_start, range.end, &ends);
        let closed_tag = after.is_some_and(|a| {
            PARAM_CLOSES
                .iter()
                .any(|c| text[value_end..a].starts_with(c))
        });
        fields.push((
            key.into_owned(),
            Field::Text(xml_value(&text[value_start..value_end])),
        ));
        pos = if closed_tag {
            after.unwrap_or(range.end)
        } else {
            value_end
        };
    }
    out.items.push(Item::Call(Raw {
        name: Some(name.to_owned()),
        args: Args::Fields(fields),
        offset,
        ..Raw::default()
    }));
}

/// GLM-4.5: `NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>…` (one call per block).
pub(super) fn glm(
    text: Masked<'_>,
    range: Range<usize>,
    closed: bool,
    out: &mut Out,
) -> Option<usize> {
    let lead = glm_space_len(&text[range.clone()]);
    if !looks_like_glm(&text[range.start + lead..range.end]) {
        return None;
    }
    let at = range.start + lead;
    let n = text[at..range.end]
        .bytes()
        .take_while(|b| is_name_byte(*b))
        .count();
    if n == 0 {
        return None;
    }
    let name = &text[at..at + n];
    if !closed {
        out.cut_off(
            Some(bare_name(name).0),
            range.start,
            "it ends before </tool_call>",
        );
        return Some(range.end);
    }
    let mut find = Finder::new(text);
    let mut fields = Vec::new();
    // Where each value starts, for the repair that decodes it.
    let mut spans = Vec::new();
    let mut pos = at + n;
    while let Some(i) = find_str(text.sub(pos..range.end), "<arg_key>") {
        let key_start = pos + i + "<arg_key>".len();
        let (key_end, after_key) = until(&mut find, key_start, range.end, &["</arg_key>"]);
        // The value's tag, after white space; text between the two tags (no GLM writes any)
        // does not lose the value, as long as no key comes first.
        let value_open = after_key.and_then(|a| {
            let v = a + glm_space_len(&text[a..range.end]);
            if text[v..range.end].starts_with("<arg_value>") {
                return Some(v);
            }
            let rest = &text[v..range.end];
            let tag = rest.find("<arg_value>")?;
            rest.find("<arg_key>")
                .is_none_or(|key| tag < key)
                .then_some(v + tag)
        });
        let value = value_open.map(|v| {
            let vs = v + "<arg_value>".len();
            let (ve, after) = until(&mut find, vs, range.end, &["</arg_value>"]);
            (vs..ve, after.unwrap_or(range.end))
        });
        let key = text[key_start..key_end].trim().to_owned();
        match value {
            Some((span, after)) => {
                spans.push(span.start);
                fields.push((key, Field::TextOrJson(text[span].to_owned())));
                pos = after;
            }
            None => {
                fields.push((key, Field::Value(Value::Null)));
                pos = after_key.unwrap_or(range.end);
            }
        }
    }
    let repairs = decode_over_escaped(&mut fields, &spans);
    out.items.push(Item::Call(Raw {
        name: Some(name.to_owned()),
        args: Args::Fields(fields),
        offset: range.start,
        repairs,
        ..Raw::default()
    }));
    Some(range.end)
}

/// GLM's and Hunyuan's `<arg_value>`s that arrive escaped one level too many (the reply was JSON-encoded once more on
/// its way): `line one\nline \"two\"`, `[{\"id\": 1}]`. A value is such when it holds an
/// escaped quote and no bare one, and reads as the inside of a JSON string; then it, and every
/// other value of the call that reads so and holds an escape, is decoded once, each with an
/// `unescape` repair at the value. A Windows path (`C:\new`) alone is left as written.
pub(super) fn decode_over_escaped(fields: &mut [(String, Field)], starts: &[usize]) -> Vec<Repair> {
    let mut repairs = Vec::new();
    let over = fields.iter().any(|(_, f)| match f {
        Field::Text(v) | Field::TextOrJson(v) => {
            v.contains("\\\"") && !has_bare_quote(v) && unescape_once(v).is_some()
        }
        _ => false,
    });
    if !over {
        return repairs;
    }
    let mut values = fields.iter_mut().filter_map(|(_, f)| match f {
        Field::Text(v) | Field::TextOrJson(v) => Some(v),
        _ => None,
    });
    for &start in starts {
        let Some(value) = values.next() else { break };
        if !value.contains('\\') || has_bare_quote(value) {
            continue;
        }
        if let Some(decoded) = unescape_once(value) {
            *value = decoded;
            repairs.push(Repair::at(RepairKind::Unescape, start));
        }
    }
    repairs
}

/// Whether `value` holds a `"` that no backslash escapes.
fn has_bare_quote(value: &str) -> bool {
    let bytes = value.as_bytes();
    let mut escaped = false;
    for &b in bytes {
        match b {
            b'\\' => escaped = !escaped,
            b'"' if !escaped => return true,
            _ => escaped = false,
        }
    }
    false
}

/// `value` read as the inside of a JSON string (its escapes decoded once; raw characters kept
/// as they are), or `None` when an escape is not JSON's.
fn unescape_once(value: &str) -> Option<String> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)?;
                // A surrogate pair stays as written: not worth decoding by hand here.
                char::from_u32(unit)?
            }
            _ => return None,
        });
    }
    Some(out)
}

/// The value of attribute `key` in a tag's text (`name="x"`, `name='x'` or `name=x`).
pub(super) fn attr(tag: Masked<'_>, key: &str) -> Option<String> {
    let mut pos = 0;
    while let Some(i) = find_str(tag.sub(pos..), key) {
        let at = pos + i;
        let before_ok = at == 0 || tag.as_bytes()[at - 1].is_ascii_whitespace();
        let after = at + key.len();
        if before_ok && tag[after..].starts_with('=') {
            let v = &tag[after + 1..];
            return Some(match v.chars().next() {
                Some(q @ ('"' | '\'')) => v[1..].split(q).next().unwrap_or_default().to_owned(),
                _ => v
                    .split(|c: char| c.is_whitespace() || c == '>' || c == '/')
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
        pos = after;
    }
    None
}

/// `<Pinvoke name="X">` calls with `<Pparameter name="K">V</Pparameter>` values.
pub(super) fn invokes(
    text: Masked<'_>,
    range: Range<usize>,
    closed: bool,
    prefix: &str,
    out: &mut Out,
) -> Option<usize> {
    let open = format!("<{prefix}invoke");
    let close = format!("</{prefix}invoke>");
    let p_open = format!("<{prefix}parameter");
    let p_close = format!("</{prefix}parameter>");
    let mut find = Finder::new(text);
    let mut pos = range.start;
    let mut any = false;
    while let Some(i) = find_str(text.sub(pos..range.end), &open) {
        let start = pos + i;
        let Some(gt) = text[start..range.end].find('>') else {
            out.cut_off(None, start, "it ends inside its <invoke> tag");
            return Some(range.end);
        };
        let tag = text.sub(start + open.len()..start + gt);
        let name = attr(tag, "name").unwrap_or_default();
        any = true;
        let content_start = start + gt + 1;
        let (content_end, after) = until(&mut find, content_start, range.end, &[close.as_str()]);
        if after.is_none() && !closed {
            out.cut_off(
                (!name.is_empty()).then(|| bare_name(&name).0),
                start,
                format!("it ends before {close}"),
            );
            return Some(range.end);
        }
        let mut fields = Vec::new();
        let mut p = content_start;
        while let Some(j) = find_str(text.sub(p..content_end), &p_open) {
            let tag_start = p + j + p_open.len();
            let Some(gt) = text[tag_start..content_end].find('>') else {
                break;
            };
            let tag = text.sub(tag_start..tag_start + gt);
            let key = attr(tag, "name").unwrap_or_default();
            let is_json = attr(tag, "string").is_some_and(|s| s == "false");
            let value_start = tag_start + gt + 1;
            let (value_end, after) =
                until(&mut find, value_start, content_end, &[p_close.as_str()]);
            // Step-3 writes its values inline, their white space theirs (an edit's
            // `return 1\n`, as vLLM's tests have it); the others frame them with line breaks.
            let value = match prefix {
                "steptml:" => text[value_start..value_end].to_owned(),
                _ => xml_value(&text[value_start..value_end]),
            };
            fields.push((
                key,
                if is_json {
                    Field::Json(value)
                } else {
                    Field::Text(value)
                },
            ));
            p = after.unwrap_or(content_end);
        }
        // No parameter elements, one JSON object (DeepSeek V3.2 / V4 write that too): the
        // object is the arguments.
        let body = text[content_start..content_end].trim();
        let args = if fields.is_empty() && body.starts_with('{') {
            Args::Text(body.to_owned())
        } else {
            Args::Fields(fields)
        };
        let args_at = matches!(args, Args::Text(_))
            .then(|| offset_in(&text, body))
            .flatten();
        out.items.push(Item::Call(Raw {
            name: Some(name),
            args,
            args_at,
            offset: start,
            ..Raw::default()
        }));
        pos = after.unwrap_or(range.end);
    }
    any.then_some(range.end)
}
