//! Hunyuan: `<tool_calls>` with its own tags and argument pairs.

use std::ops::Range;

use super::json::*;
use super::text::*;
use super::xml::decode_over_escaped;
use crate::calls::scan::{
    Finder, Masked, bare_name, find_str, is_name_byte, is_valid_json, json_extent, skip_ws,
};
use crate::calls::{Args, Ctx, Field, Incomplete, Item, Out, Raw};
use crate::error::{Code, Error};

/// How a plain tag of the table (`<tool_call>`) starts when it carries a label, as Hunyuan HY4
/// writes every tag (`<tool_call:opensource>`): `<tool_call:`. `None` for what is not a plain tag.
pub(crate) fn labelled_open(marker: &str) -> Option<String> {
    let tag = marker.strip_prefix('<')?.strip_suffix('>')?;
    (!tag.contains([':', '|', '/'])).then(|| format!("<{tag}:"))
}

/// The label and the end of a Hunyuan tag whose name ended at `i`: `>` (HY3) or `:LABEL>`
/// (HY4 writes `<tool_call:opensource>`).
pub(super) fn hy_tag(text: &str, i: usize) -> Option<(&str, usize)> {
    let rest = &text[i..];
    if rest.starts_with('>') {
        return Some(("", i + 1));
    }
    let label = rest.strip_prefix(':')?;
    let n = label
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        .count();
    (n > 0 && label[n..].starts_with('>')).then(|| (&text[i..i + 1 + n], i + 2 + n))
}

/// Hunyuan HY3 / HY4: `<tool_calls>`, then per call `<tool_call>NAME<tool_sep>` and
/// `<arg_key>K</arg_key><arg_value>V</arg_value>` pairs (or a JSON object) up to
/// `</tool_call>`. HY4 writes no `<tool_sep>` and labels every tag (`<tool_call:opensource>`).
/// A `<tool_call>` is Hunyuan's when it has the separator, a label, or stands in a
/// `<tool_calls>` section; GLM's and Hermes' bare `<tool_call>` are left to `hermes`.
pub(super) fn hunyuan(text: Masked<'_>, ctx: &Ctx<'_>, out: &mut Out) {
    let mut pos = 0;
    let mut labels: Vec<&str> = Vec::new();
    while let Some(i) = find_str(text.sub(pos..), "<tool_call") {
        let start = pos + i;
        let name_end = start + "<tool_call".len();
        if text[name_end..].starts_with('s') {
            // A `<tool_calls>` section holding JSON is Jamba's: markers in its strings are text.
            pos = match hy_tag(&text, name_end + 1) {
                Some((_, end)) if text[skip_ws(&text, end)..].starts_with(['[', '{']) => {
                    let at = skip_ws(&text, end);
                    ctx.json_extent(&text, at, text.len())
                        .filter(|&e| is_valid_json(&text[at..e]))
                        .unwrap_or(end)
                }
                _ => name_end,
            };
            continue;
        }
        let Some((label, tag_end)) = hy_tag(&text, name_end) else {
            pos = name_end;
            continue;
        };
        let close = format!("</tool_call{label}>");
        let section_open = format!("<tool_calls{label}>");
        let section_close = format!("</tool_calls{label}>");
        let sep = format!("<tool_sep{label}>");
        let next_open = find_str(text.sub(tag_end..), &text[start..tag_end])
            .map_or(text.len(), |j| tag_end + j);
        let (body_end, after) = until(
            &mut Finder::new(text),
            tag_end,
            next_open,
            &[close.as_str(), section_close.as_str()],
        );
        // A section close ends the call but is cut with the section markers.
        let after = after.map(|a| {
            if text[body_end..].starts_with(&close) {
                a
            } else {
                body_end
            }
        });
        let at = skip_ws(&text, tag_end).min(body_end);
        let n = text[at..body_end]
            .bytes()
            .take_while(|b| is_name_byte(*b))
            .count();
        let mut args_at = skip_ws(&text, at + n).min(body_end);
        let has_sep = text[args_at..body_end].starts_with(&sep);
        let before = text[..start].trim_end();
        let in_section = before.ends_with(&section_open)
            || (labels.contains(&label) && before.ends_with(&close));
        let rest = &text[at + n..body_end];
        let glm_like = n > 0
            && (rest.is_empty()
                || rest.starts_with(char::is_whitespace)
                || rest.starts_with("<arg_key"));
        let json_body = n == 0 && text[at..body_end].starts_with('{');
        if !(has_sep || !label.is_empty() || (in_section && (glm_like || json_body))) {
            pos = tag_end;
            continue;
        }
        if !labels.contains(&label) {
            labels.push(label);
        }
        let complete = after.is_some();
        let call_end = after.unwrap_or(body_end);
        out.cut.push(start..call_end);
        pos = call_end.max(tag_end);
        if json_body {
            // `<tool_call>{"name": …}</tool_call>` in a section: Hermes' body.
            json_seq(&text, ctx, at..body_end, false, true, out);
            continue;
        }
        if n == 0 {
            out.items.push(Item::failed(
                None,
                Error::at(
                    Code::MissingField,
                    start,
                    "tool call has no tool name after <tool_call>",
                ),
            ));
            continue;
        }
        let name = &text[at..at + n];
        let incomplete = || {
            Item::Incomplete(Incomplete {
                tool: Some(bare_name(name).0),
                id: None,
                offset: start,
                message: format!("it ends before {close}"),
            })
        };
        if has_sep {
            args_at = skip_ws(&text, args_at + sep.len()).min(body_end);
        }
        if text[args_at..body_end].starts_with(['{', '[']) {
            let args = text[args_at..body_end].trim_end();
            if !complete && json_extent(args, 0).is_none() {
                out.items.push(incomplete());
            } else {
                out.items.push(Item::Call(Raw {
                    name: Some(name.to_owned()),
                    args: Args::Text(args.to_owned()),
                    args_at: Some(args_at),
                    offset: start,
                    ..Raw::default()
                }));
            }
            continue;
        }
        match hy_pairs(text, args_at..body_end, label) {
            Ok((mut fields, starts)) if complete => {
                let repairs = decode_over_escaped(&mut fields, &starts);
                out.items.push(Item::Call(Raw {
                    name: Some(name.to_owned()),
                    args: Args::Fields(fields),
                    offset: start,
                    repairs,
                    ..Raw::default()
                }))
            }
            Ok(_) | Err((_, true, _)) if !complete => out.items.push(incomplete()),
            Ok(_) => {}
            Err((offset, _, what)) => out.items.push(Item::failed(
                Some(bare_name(name).0),
                Error::at(
                    Code::InvalidJson,
                    offset,
                    format!("the arguments of the call to {name:?} are not <arg_key>/<arg_value> pairs: {what}"),
                ),
            )),
        }
    }
    for label in labels {
        cut_all(
            text,
            &[
                format!("<tool_calls{label}>"),
                format!("</tool_calls{label}>"),
            ],
            out,
        );
    }
}

/// The pairs read, and where each value starts (for the repairs that decode values).
type Pairs = (Vec<(String, Field)>, Vec<usize>);

/// Why pairs cannot be read: where, whether the text ended first, and what was expected.
type PairsError = (usize, bool, String);

/// Hunyuan's `<arg_key>K</arg_key><arg_value>V</arg_value>` pairs in `range` (tags with
/// `label`), with where each value starts. The error: where, whether the text ended first, and
/// what was expected.
pub(super) fn hy_pairs(
    text: Masked<'_>,
    range: Range<usize>,
    label: &str,
) -> Result<Pairs, PairsError> {
    let [key_open, key_close, value_open, value_close] =
        ["<arg_key", "</arg_key", "<arg_value", "</arg_value"].map(|t| format!("{t}{label}>"));
    let mut find = Finder::new(text);
    let mut fields = Vec::new();
    let mut starts = Vec::new();
    let mut i = range.start;
    loop {
        i = skip_ws(&text, i).min(range.end);
        if i >= range.end {
            return Ok((fields, starts));
        }
        if !text[i..range.end].starts_with(&key_open) {
            return Err((i, false, format!("expected {key_open}")));
        }
        let key_start = i + key_open.len();
        let (key_end, Some(after_key)) =
            until(&mut find, key_start, range.end, &[key_close.as_str()])
        else {
            return Err((key_start, true, format!("{key_open} is not closed")));
        };
        let v = skip_ws(&text, after_key).min(range.end);
        if !text[v..range.end].starts_with(&value_open) {
            return Err((
                v,
                v >= range.end,
                format!("expected {value_open} after the key"),
            ));
        }
        let value_start = v + value_open.len();
        let (value_end, Some(after_value)) =
            until(&mut find, value_start, range.end, &[value_close.as_str()])
        else {
            return Err((value_start, true, format!("{value_open} is not closed")));
        };
        starts.push(value_start);
        fields.push((
            text[key_start..key_end].trim().to_owned(),
            Field::Text(text[value_start..value_end].to_owned()),
        ));
        i = after_value;
    }
}
