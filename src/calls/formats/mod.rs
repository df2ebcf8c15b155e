//! The table of call formats and the generic decoders it is built from.
//!
//! Most formats are described by their markers and the encoding of their body: a block
//! (`open … close`, the close optional at the end of the text), a prefix (no closer), or tagged
//! calls (`begin HEAD sep BODY end`, DeepSeek / Kimi / Step-3). Bodies are JSON call objects,
//! `<function=NAME>` tags (Qwen3-Coder XML, Functionary), GLM's `<arg_key>` pairs, `<invoke>`
//! XML (MiniMax-M2, DeepSeek DSML, Step-3) or Python calls. Harmony, Mistral, Functionary v3.2
//! and marker-less JSON have decoders of their own.

use std::ops::Range;

use serde_json::{Map, Value};

use super::pythonic::{Py, PyCall, PyError};
use super::scan::{
    Finder, Reasoning, bare_name, blank, find_str, ident_len, is_name_byte, is_valid_json,
    is_whole_json, json_extent, reasoning, remaining_text, skip_ws,
};
use super::{
    Args, Ctx, EnvelopeCheck, Field, Incomplete, Item, Out, Raw, Rejected, harmony, truncated,
};
use crate::args::{Concat, Target};
use crate::error::{Code, Error};
use crate::repair::Repair;

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

#[derive(Debug)]
pub(crate) enum Kind {
    /// `open BODY close`; the close may be missing at the end of the text.
    Block {
        open: &'static [&'static str],
        close: &'static [&'static str],
        body: Body,
    },
    /// `open BODY` (any of `open`): the body runs to the next open or the end; text after it
    /// stays text. A `lead` marker right before the open (whitespace between) is part of it.
    Prefix {
        open: &'static [&'static str],
        lead: &'static [&'static str],
        body: Body,
    },
    /// `open HEAD sep ARGS close` per call, inside optional section markers. HEAD is the name,
    /// or `function` with the name on the first line of ARGS; with `id_head` it is a call id
    /// `functions.NAME:INDEX` (Kimi K2), and a head of another shape names no tool.
    Tagged {
        open: &'static str,
        sep: &'static str,
        close: &'static str,
        section: &'static [&'static str],
        body: Body,
        id_head: bool,
    },
    Harmony,
    Hunyuan,
    Mistral,
    Functionary32,
    BarePythonic,
    Json,
}

#[derive(Debug)]
pub(crate) struct Spec {
    pub name: &'static str,
    pub models: &'static str,
    pub kind: Kind,
}

const fn block(open: &'static [&'static str], close: &'static [&'static str], body: Body) -> Kind {
    Kind::Block { open, close, body }
}

const JSON: Body = Body::Json { name_is_key: false };
const TOOL_CALL: &[&str] = &["<tool_call>"];
const TOOL_CALL_END: &[&str] = &["</tool_call>"];
const DEEPSEEK_SECTION: &[&str] = &[
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool_calls_begin｜>",
    "<｜tool calls begin｜>",
];

/// Every format, most specific marker first: the order `--format auto` tries them in.
pub(crate) const TABLE: &[Spec] = &[
    Spec {
        name: "harmony",
        models: "gpt-oss (<|channel|>commentary to=functions.NAME … <|call|>)",
        kind: Kind::Harmony,
    },
    Spec {
        name: "deepseek_dsml",
        models: "DeepSeek V3.2 (<｜DSML｜function_calls> <｜DSML｜invoke>)",
        kind: block(
            &["<｜DSML｜function_calls>", "<｜DSML｜tool_calls>"],
            &["</｜DSML｜function_calls>", "</｜DSML｜tool_calls>"],
            Body::Invoke("｜DSML｜"),
        ),
    },
    Spec {
        name: "kimi_k2",
        models: "Kimi K2 (<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>); an id not NAME:INDEX names no tool (missing_field)",
        kind: Kind::Tagged {
            open: "<|tool_call_begin|>",
            sep: "<|tool_call_argument_begin|>",
            close: "<|tool_call_end|>",
            section: &["<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"],
            body: JSON,
            id_head: true,
        },
    },
    Spec {
        name: "step3",
        models: "StepFun Step-3 (<｜tool_call_begin｜> <steptml:invoke>)",
        kind: Kind::Tagged {
            open: "<｜tool_call_begin｜>",
            sep: "<｜tool_sep｜>",
            close: "<｜tool_call_end｜>",
            section: &["<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"],
            body: Body::Invoke("steptml:"),
            id_head: false,
        },
    },
    Spec {
        name: "deepseek",
        models: "DeepSeek V3 / R1 (function<｜tool▁sep｜>NAME + fenced JSON) and V3.1 (NAME<｜tool▁sep｜>JSON)",
        kind: Kind::Tagged {
            open: "<｜tool▁call▁begin｜>",
            sep: "<｜tool▁sep｜>",
            close: "<｜tool▁call▁end｜>",
            section: DEEPSEEK_SECTION,
            body: JSON,
            id_head: false,
        },
    },
    Spec {
        name: "minimax_m2",
        models: "MiniMax-M2 (<minimax:tool_call> <invoke name=…>)",
        kind: block(
            &["<minimax:tool_call>"],
            &["</minimax:tool_call>"],
            Body::Invoke(""),
        ),
    },
    Spec {
        name: "seed_oss",
        models: "ByteDance Seed-OSS (<seed:tool_call> <function=NAME>)",
        kind: block(
            &["<seed:tool_call>"],
            &["</seed:tool_call>"],
            Body::FunctionTags,
        ),
    },
    Spec {
        name: "longcat",
        models: "LongCat-Flash (<longcat_tool_call>JSON)",
        kind: block(&["<longcat_tool_call>"], &["</longcat_tool_call>"], JSON),
    },
    Spec {
        name: "hunyuan",
        models: "Hunyuan HY3 / HY4 (<tool_calls><tool_call>NAME<tool_sep><arg_key>K</arg_key><arg_value>V</arg_value></tool_call>, HY4 tags labelled <tool_call:opensource>); values typed by the schema, else strings",
        kind: Kind::Hunyuan,
    },
    Spec {
        name: "hermes",
        models: "Qwen2.5/3, QwQ, Hermes, Granite 3.1+ (<tool_call>JSON</tool_call>); with auto also Qwen3-Coder XML and GLM-4.5 inside <tool_call>",
        kind: block(TOOL_CALL, TOOL_CALL_END, Body::ToolCall),
    },
    Spec {
        name: "qwen3_coder",
        models: "Qwen3-Coder, Qwen3.5 (<tool_call><function=NAME><parameter=K>V</parameter>)",
        kind: block(TOOL_CALL, TOOL_CALL_END, Body::FunctionTags),
    },
    Spec {
        name: "glm45",
        models: "GLM-4.5 / 4.6 / 4.7 (<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>)",
        kind: block(TOOL_CALL, TOOL_CALL_END, Body::Glm),
    },
    Spec {
        name: "lfm2",
        models: "LiquidAI LFM2 (<|tool_call_start|>[f(a=1)]<|tool_call_end|>)",
        kind: block(
            &["<|tool_call_start|>"],
            &["<|tool_call_end|>"],
            Body::PythonicOrJson,
        ),
    },
    Spec {
        name: "llama4",
        models: "Llama 4 pythonic (<|python_start|>[f(a=1)]<|python_end|>)",
        kind: block(
            &["<|python_start|>"],
            &["<|python_end|>"],
            Body::PythonicOrJson,
        ),
    },
    Spec {
        name: "granite",
        models: "IBM Granite 3.0 (<|tool_call|>[JSON])",
        kind: Kind::Prefix {
            open: &["<|tool_call|>"],
            lead: &[],
            body: JSON,
        },
    },
    Spec {
        name: "mistral",
        models: "Mistral: [TOOL_CALLS][JSON array], [TOOL_CALLS]NAME{JSON}, [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{JSON}; stray words around the calls stay text",
        kind: Kind::Mistral,
    },
    Spec {
        name: "command_r",
        models: "Cohere Command R7B / A (<|START_ACTION|>[{tool_name, parameters}]<|END_ACTION|>)",
        kind: block(&["<|START_ACTION|>"], &["<|END_ACTION|>"], JSON),
    },
    Spec {
        name: "apertus",
        models: "Swiss AI Apertus (<|tools_prefix|>[{NAME: {…}}]<|tools_suffix|>)",
        kind: block(
            &["<|tools_prefix|>"],
            &["<|tools_suffix|>"],
            Body::Json { name_is_key: true },
        ),
    },
    Spec {
        name: "internlm2",
        models: "InternLM2 (<|action_start|><|plugin|>JSON<|action_end|>)",
        kind: block(&["<|action_start|><|plugin|>"], &["<|action_end|>"], JSON),
    },
    Spec {
        name: "gigachat3",
        models: "GigaChat 3 (<|message_sep|>function call<|role_sep|>JSON), GigaChat 3.1 (<|function_call|>JSON)",
        kind: Kind::Prefix {
            open: &["function call<|role_sep|>", "<|function_call|>"],
            lead: &["<|message_sep|>"],
            body: JSON,
        },
    },
    Spec {
        name: "nemotron",
        models: "NVIDIA Nemotron (<TOOLCALL>[JSON]</TOOLCALL>)",
        kind: block(&["<TOOLCALL>"], &["</TOOLCALL>"], JSON),
    },
    Spec {
        name: "jamba",
        models: "AI21 Jamba, Hunyuan-A13B, MiniMax-M1 (<tool_calls>JSON</tool_calls>)",
        kind: block(&["<tool_calls>"], &["</tool_calls>"], JSON),
    },
    Spec {
        name: "olmo3",
        models: "Olmo 3 (<function_calls>f(a=1)</function_calls>)",
        kind: block(
            &["<function_calls>"],
            &["</function_calls>"],
            Body::Pythonic,
        ),
    },
    Spec {
        name: "granite_20b",
        models: "granite-20b-functioncalling (<function_call> JSON)",
        kind: Kind::Prefix {
            open: &["<function_call>"],
            lead: &[],
            body: JSON,
        },
    },
    Spec {
        name: "functionary",
        models: "Functionary v3.1 (<function=NAME>JSON</function>), bare Qwen3-Coder <function=…>",
        kind: block(&["<function="], &["</function>"], Body::FunctionTags),
    },
    Spec {
        name: "functionary_v32",
        models: "Functionary v3.2 (>>>NAME\\nJSON)",
        kind: Kind::Functionary32,
    },
    Spec {
        name: "phi4",
        models: "Phi-4-mini, FireFunction v2 (functools[JSON])",
        kind: Kind::Prefix {
            open: &["functools"],
            lead: &[],
            body: JSON,
        },
    },
    Spec {
        name: "llama3",
        models: "Llama 3.x (<|python_tag|>JSON or NAME.call(…))",
        kind: Kind::Prefix {
            open: &["<|python_tag|>"],
            lead: &[],
            body: Body::PythonicOrJson,
        },
    },
    Spec {
        name: "functiongemma",
        models: "Google FunctionGemma (<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>)",
        kind: block(
            &["<start_function_call>"],
            &["<end_function_call>"],
            Body::Gemma("<escape>"),
        ),
    },
    Spec {
        name: "gemma4",
        models: "Gemma 4 (<|tool_call>call:NAME{k:<|\"|>v<|\"|>}<tool_call|>)",
        kind: block(&["<|tool_call>"], &["<tool_call|>"], Body::Gemma("<|\"|>")),
    },
    Spec {
        name: "pythonic",
        models: "Llama 3.2 pythonic, ToolACE ([f(a=1), g(b=2)] as the whole reply)",
        kind: Kind::BarePythonic,
    },
    Spec {
        name: "json",
        models: "marker-less JSON: bare, fenced, {\"name\",\"arguments\"}, }{-glued, OpenAI / Anthropic shapes",
        kind: Kind::Json,
    },
];

/// What scanning a reply found.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    pub items: Vec<Item>,
    pub text: Option<String>,
    pub reasoning: Vec<String>,
    pub repairs: Vec<Repair>,
    pub format: Option<&'static str>,
}

/// Scans a reply with the chosen format, or with each format in turn.
pub(crate) fn scan(text: &str, ctx: &Ctx<'_>) -> Scanned {
    let forced = ctx
        .options
        .format
        .as_deref()
        .filter(|f| *f != "auto")
        .and_then(|f| TABLE.iter().find(|s| s.name == f));
    // A reply that is one JSON object or array is read as JSON: markers and reasoning tags in
    // its strings are text (`{"tool": "f", "parameters": {"q": "<tool_call>"}}`).
    let whole_json = forced.is_none() && is_whole_json(text);
    // Markers inside the strings of JSON values are text in every format (see `mask`); a
    // whole-JSON reply is read as JSON alone, so it needs no mask.
    let strings = if whole_json {
        Vec::new()
    } else {
        super::mask::json_strings(text, ctx)
    };
    let mask = super::mask::Scope::new(text, strings);
    let harmony_first = match forced {
        Some(spec) => matches!(spec.kind, Kind::Harmony),
        None => !whole_json && harmony::detect(text),
    };
    if harmony_first {
        let out = harmony::scan(text, ctx);
        return Scanned {
            items: out.items,
            text: super::scan::join_parts(out.text.iter().flatten().map(String::as_str)),
            reasoning: out.reasoning,
            repairs: out.repairs,
            format: Some("harmony"),
        };
    }
    let thinking = if whole_json {
        Reasoning::default()
    } else {
        reasoning(text)
    };
    let visible = blank(text, &thinking.spans);
    mask.also(&visible);
    let mut chosen = (None, Out::default());
    // The first format whose markers were there but held nothing readable, if none finds calls.
    let mut unread = None;
    for spec in forced.map_or(TABLE, std::slice::from_ref) {
        // `hermes` already tells `<tool_call>` bodies apart; these two are for --format.
        let forced_only = matches!(spec.name, "qwen3_coder" | "glm45");
        if matches!(spec.kind, Kind::Harmony)
            || (forced.is_none() && forced_only)
            || (whole_json && !matches!(spec.kind, Kind::Json))
        {
            continue;
        }
        let out = run_spec(spec, &visible, ctx);
        if !out.items.is_empty() {
            chosen = (Some(spec.name), out);
            break;
        }
        if unread.is_none() && !out.unread.is_empty() {
            unread = Some((Some(spec.name), out));
        }
    }
    let (format, mut out) = match (chosen, unread) {
        ((None, _), Some(unread)) => unread,
        (chosen, _) => chosen,
    };
    if !out.unread.is_empty() {
        // A marker no call could be read from is an error, never silent text.
        for (item, span) in std::mem::take(&mut out.unread) {
            out.items.push(item);
            out.cut.push(span);
        }
        out.items.sort_by_key(Item::offset);
    }
    let mut cut = thinking.spans.clone();
    cut.append(&mut out.cut);
    Scanned {
        items: out.items,
        text: remaining_text(text, &mut cut),
        reasoning: thinking
            .parts
            .iter()
            .map(|r| text[r.clone()].to_owned())
            .collect(),
        repairs: out.repairs,
        format,
    }
}

fn run_spec(spec: &Spec, text: &str, ctx: &Ctx<'_>) -> Out {
    let mut out = Out::default();
    match spec.kind {
        Kind::Block { open, close, body } => blocks(text, ctx, open, close, body, &mut out),
        Kind::Prefix { open, lead, body } => prefixes(text, ctx, open, lead, body, &mut out),
        Kind::Tagged {
            open,
            sep,
            close,
            section,
            body,
            id_head,
        } => {
            tagged(text, [open, sep, close], section, body, id_head, &mut out);
        }
        Kind::Hunyuan => hunyuan(text, ctx, &mut out),
        Kind::Mistral => mistral(text, ctx, &mut out),
        Kind::Functionary32 => functionary32(text, ctx, &mut out),
        Kind::BarePythonic => bare_pythonic(text, &mut out),
        Kind::Json => markerless(text, ctx, &mut out),
        Kind::Harmony => {}
    }
    out
}

fn blocks(text: &str, ctx: &Ctx<'_>, opens: &[&str], closes: &[&str], body: Body, out: &mut Out) {
    let mut find = Finder::new(text);
    let mut pos = 0;
    while let Some((start, open_len)) = find.find_any(pos, text.len(), opens) {
        let body_start = start + open_len;
        // A body that is valid JSON ends where that JSON does: markers in its strings are text.
        let at = skip_ws(text, body_start);
        let search = if text[at..].starts_with(['{', '[']) {
            ctx.json_extent(text, at, text.len())
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
        // `<function=` is itself the start of the body.
        let from = if opens == ["<function="] {
            start
        } else {
            body_start
        };
        if decode(text, ctx, body, from..body_end, closed, out).is_some() {
            out.cut.push(start..after);
            pos = after.max(body_start);
        } else if (closed || !mentioned(text, &text[start..body_start], start))
            && let Some(calls) = after_prose(text, ctx, body, body_start..body_end, out)
        {
            // The markers and the calls are cut; the stray words around the calls stay text.
            out.cut.extend([start..body_start, calls, body_end..after]);
            pos = after.max(body_start);
        } else if let Some(item) = unread(text, &text[start..body_start], start, body_end, closed) {
            out.unread.push((item, start..after));
            pos = after.max(body_start);
        } else {
            pos = body_start;
        }
    }
    if !out.items.is_empty() || !out.unread.is_empty() {
        // A closing marker written twice, or without its opening one, is markup too.
        cut_all(text, closes, out);
    }
}

/// Cuts every occurrence of `markers` out of the text: a format's own markers are never text.
fn cut_all<M: AsRef<str>>(text: &str, markers: &[M], out: &mut Out) {
    for marker in markers {
        let marker = marker.as_ref();
        let mut p = 0;
        while let Some(j) = find_str(&text[p..], marker) {
            out.cut.push(p + j..p + j + marker.len());
            p += j + marker.len();
        }
    }
}

/// Markers that are also words or plain tags a reply may mention (`<tool_call>` tags, the
/// functools module): they start a call only at the start of a line or before call-like
/// text. The others are special tokens, never written in prose.
const PLAIN_MARKERS: &[&str] = &[
    "<tool_call>",
    "<tool_calls>",
    "<TOOLCALL>",
    "<function_calls>",
    "<function_call>",
    "<function=",
    "functools",
    "[TOOL_CALLS]",
];

/// Whether the marker at `start` is only mentioned, for a body that does not start like a
/// call: in backticks, the word `functools`, or a plain marker in the middle of a line.
fn mentioned(text: &str, marker: &str, start: usize) -> bool {
    let line = text[..start].trim_end_matches([' ', '\t']);
    text[..start].ends_with('`')
        || marker == "functools"
        || (PLAIN_MARKERS.contains(&marker) && !(line.is_empty() || line.ends_with('\n')))
}

/// The error for a call marker at `start` whose body (to `body_end`) no decoder could read,
/// or `None` when the marker is only mentioned: in backticks, or a plain marker in the middle
/// of prose. A body that is empty to the end of the reply is a call cut off after its marker.
fn unread(text: &str, marker: &str, start: usize, body_end: usize, closed: bool) -> Option<Item> {
    let body = text[start + marker.len()..body_end].trim();
    let at_end = body.is_empty() && !closed && body_end == text.len();
    if body.is_empty() && !closed && !at_end {
        // The marker written twice: the next one starts the call.
        return None;
    }
    let call_like = body.starts_with(['{', '[', '<']) || body.starts_with("```");
    if (mentioned(text, marker, start) && !(call_like || at_end)) || marker == "functools" {
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

fn prefixes(text: &str, ctx: &Ctx<'_>, opens: &[&str], lead: &[&str], body: Body, out: &mut Out) {
    let mut find = Finder::new(text);
    let mut pos = 0;
    while let Some((at, len)) = find.find_any(pos, text.len(), opens) {
        let body_start = at + len;
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
                pos = end.max(body_start);
            }
            None if !mentioned(text, open, at)
                && let Some(calls) = after_prose(text, ctx, body, body_start..body_end, out) =>
            {
                out.cut.extend([start..body_start, calls.clone()]);
                pos = calls.end.max(body_start);
            }
            None => match unread(text, open, at, body_end, false) {
                Some(item) => {
                    out.unread.push((item, start..body_end));
                    pos = body_end.max(body_start);
                }
                None => pos = body_start,
            },
        }
    }
}

/// Decodes one body into `out.items`; returns where the decoded part ends, or `None` (having
/// added nothing) when the body holds no call, so the marker was only mentioned.
fn decode(
    text: &str,
    ctx: &Ctx<'_>,
    body: Body,
    range: Range<usize>,
    closed: bool,
    out: &mut Out,
) -> Option<usize> {
    let at = skip_ws(text, range.start).min(range.end);
    let rest = &text[at..range.end];
    match body {
        Body::Json { name_is_key } => json_seq(text, ctx, range, name_is_key, true, out),
        Body::ToolCall => {
            if rest.starts_with(['{', '[']) || rest.starts_with("```") {
                json_seq(text, ctx, range, false, true, out)
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
        Body::Pythonic => pythonic(text, range, out),
        Body::Gemma(quote) => gemma(text, range, quote, out),
        Body::PythonicOrJson => {
            let n = ident_len(text, at);
            if Py::looks_like_list(text, at) || (n > 0 && text[at + n..].starts_with(['(', '.'])) {
                pythonic(text, range, out)
            } else if rest.starts_with(['{', '[']) {
                json_seq(text, ctx, range, false, true, out)
            } else {
                None
            }
        }
    }
}

/// Where the first JSON value in `range` that holds calls starts, when stray words come
/// before it (`[TOOL_CALLS] Sure: [{…}]`): a value that is cut off counts (it is a cut-off
/// call); a complete one that holds no call is skipped whole, and a few are looked at.
fn call_json(text: &str, ctx: &Ctx<'_>, range: Range<usize>) -> Option<usize> {
    let bytes = &text.as_bytes()[..range.end];
    let mut i = range.start;
    for _ in 0..8 {
        let start = i + memchr::memchr2(b'{', b'[', &bytes[i..])?;
        let Some(end) = json_extent(&text[..range.end], start) else {
            return Some(start);
        };
        let mut mender = ctx.mender(Target::Any, Concat::First);
        let value = mender
            .mend(&text[start..end])
            .ok()
            .and_then(|m| serde_json::from_str::<Value>(&m.value()).ok());
        let mut raws = Vec::new();
        if value.is_some_and(|v| collect(v, false, true, &mut raws)) && !raws.is_empty() {
            return Some(start);
        }
        i = end;
    }
    None
}

/// Decodes a body whose JSON calls follow stray words; the words stay text. Returns the span
/// the calls took.
fn after_prose(
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

/// One or more JSON calls, separated by whitespace, `;` or `,` (or glued `}{`), possibly in
/// code fences. `marked`: the text is inside call markers, so a JSON value that is not a call
/// is an error rather than text.
fn json_seq(
    text: &str,
    ctx: &Ctx<'_>,
    range: Range<usize>,
    name_is_key: bool,
    marked: bool,
    out: &mut Out,
) -> Option<usize> {
    let mut i = range.start;
    let mut end = None;
    loop {
        i = skip_ws(text, i);
        while i < range.end && matches!(text.as_bytes()[i], b';' | b',') {
            i = skip_ws(text, i + 1);
        }
        if text[i..range.end].starts_with("```") {
            i = text[i..range.end]
                .find('\n')
                .map_or(range.end, |n| i + n + 1);
            end = Some(i);
            continue;
        }
        if i >= range.end || !text[i..].starts_with(['{', '[']) {
            break;
        }
        let (piece_end, complete) = match ctx.json_extent(text, i, range.end) {
            Some(e) => (e, true),
            None => (range.end, false),
        };
        json_piece(text, ctx, i..piece_end, complete, name_is_key, marked, out);
        i = piece_end;
        end = Some(i);
    }
    end
}

/// Decodes one JSON value holding calls.
fn json_piece(
    text: &str,
    ctx: &Ctx<'_>,
    range: Range<usize>,
    complete: bool,
    name_is_key: bool,
    marked: bool,
    out: &mut Out,
) {
    let piece = &text[range.clone()];
    let mut mender = ctx.mender(Target::Any, Concat::First);
    let mended = mender.mend(piece);
    let cut_off = !complete || mended.as_ref().is_ok_and(|m| truncated(m.repairs(), piece));
    if cut_off {
        // Name the call from what was written, healed only to read it.
        let mut lenient = crate::args::Mender::new(crate::args::Options {
            target: Target::Any,
            ..crate::args::Options::default()
        });
        let healed = lenient
            .mend(piece)
            .ok()
            .and_then(|m| ctx.value(&m.value()).ok());
        let mut raws = Vec::new();
        if let Some(v) = healed {
            collect(v, name_is_key, false, &mut raws);
        }
        json_cut_off(raws, range.start, out);
        return;
    }
    let mended = match mended {
        Ok(m) => m,
        Err(error) => {
            out.items.push(Item::failed(
                None,
                Error {
                    code: error.code,
                    message: format!("tool call JSON: {}", error.message),
                    offset: error.offset.map(|o| o + range.start),
                },
            ));
            return;
        }
    };
    let repairs: Vec<Repair> = mended
        .repairs()
        .iter()
        .cloned()
        .map(|mut r| {
            r.offset = r.offset.map(|o| o + range.start);
            r
        })
        .collect();
    let value = match ctx.value(&mended.value()) {
        Ok(v) => v,
        Err(error) => {
            out.items.push(Item::failed(
                None,
                Error {
                    message: format!("tool call JSON: {}", error.message),
                    offset: error.offset.map(|o| o + range.start),
                    ..error
                },
            ));
            return;
        }
    };
    let mut raws = Vec::new();
    let shaped = collect(value, name_is_key, false, &mut raws);
    if !shaped || raws.is_empty() {
        if marked {
            out.items.push(Item::failed(
                None,
                Error::at(
                    Code::MissingField,
                    range.start,
                    "tool call JSON has no tool name (\"name\" or \"tool\")",
                ),
            ));
        }
        return;
    }
    if raws.len() == 1 {
        raws[0].repairs.splice(0..0, repairs);
    } else {
        out.repairs.extend(repairs);
    }
    for mut raw in raws {
        raw.offset = range.start;
        out.items.push(Item::Call(raw));
    }
}

const NAME_KEYS: &[&str] = &["tool", "name", "tool_name", "function", "recipient_name"];
const ARG_KEYS: &[&str] = &["parameters", "arguments", "args", "input"];
const ID_KEYS: &[&str] = &["id", "tool_call_id", "call_id"];

/// The calls a JSON value holds, added to `raws`; false when some part is not call-shaped.
/// `loose`: a call needs only a name (inside call markers); otherwise marker-less JSON must
/// also carry an argument key or be the `{"tool", …}` envelope.
pub(crate) fn collect(
    value: Value,
    name_is_key: bool,
    strict_shape: bool,
    raws: &mut Vec<Raw>,
) -> bool {
    match value {
        Value::Array(items) => {
            // Every element is collected (no short circuit), then all must have been calls.
            let mut all = !items.is_empty();
            for item in items {
                all &= collect(item, name_is_key, strict_shape, raws);
            }
            all
        }
        Value::Object(map) => object_call(map, name_is_key, strict_shape, raws),
        _ => false,
    }
}

fn object_call(
    mut map: Map<String, Value>,
    name_is_key: bool,
    strict_shape: bool,
    raws: &mut Vec<Raw>,
) -> bool {
    for wrapper in ["tool_calls", "tool_call", "function_call"] {
        if matches!(map.get(wrapper), Some(Value::Array(_) | Value::Object(_))) {
            let inner = map.remove(wrapper).unwrap_or_default();
            let before = raws.len();
            let found = collect(inner, name_is_key, false, raws);
            if wrapper == "function_call" {
                encoded_arguments(&mut raws[before..]);
            }
            return found;
        }
    }
    if let Some(Value::Object(function)) = map.get("function") {
        // OpenAI: {"id", "type": "function", "function": {"name", "arguments"}}.
        let mut function = function.clone();
        if let Some(id) = ID_KEYS.iter().find_map(|k| map.get(*k)) {
            function.insert("id".into(), id.clone());
        }
        let before = raws.len();
        let found = object_call(function, false, false, raws);
        encoded_arguments(&mut raws[before..]);
        return found;
    }
    let name_key = NAME_KEYS
        .iter()
        .find(|k| matches!(map.get(**k), Some(Value::String(_))));
    let args_key = ARG_KEYS.iter().find(|k| map.contains_key(**k));
    let id = ID_KEYS.iter().find_map(|k| map.get(*k)).cloned();
    let envelope = Some(envelope_check(&map));
    let (name, args) = match (name_key, args_key) {
        (Some(nk), ak) => {
            if strict_shape && ak.is_none() && *nk != "tool" {
                return false;
            }
            let name = map.get(*nk).and_then(Value::as_str).map(str::to_owned);
            let args = ak.and_then(|k| map.remove(*k));
            (name, args)
        }
        (None, _) if name_is_key && map.len() == 1 => {
            let (name, args) = map.into_iter().next().unwrap_or_default();
            raws.push(Raw {
                name: Some(name),
                args: Args::Value(args),
                ..Raw::default()
            });
            return true;
        }
        // `{"tool": 7, "parameters": …}`: the envelope, with a tool of the wrong type.
        (None, _)
            if map.contains_key("tool")
                && (map.contains_key("parameters") || map.contains_key("terminate")) =>
        {
            (None, None)
        }
        _ => return false,
    };
    raws.push(Raw {
        name,
        id,
        args: args.map_or(Args::Missing, Args::Value),
        terminate: map.remove("terminate"),
        envelope,
        ..Raw::default()
    });
    true
}

/// `{"name": KNOWN_TOOL}` with no arguments (an id or `"type"` beside it at most): a call with
/// `parameters: {}`, as Ollama and others write a call to a tool that takes none. Only with
/// tools, naming one of them: without tools such JSON is too common in prose to be a call.
fn bare_known_call(value: &Value, ctx: &Ctx<'_>) -> Option<Raw> {
    let tools = ctx.tools?;
    let map = value.as_object()?;
    let (key, name) = map
        .iter()
        .find_map(|(k, v)| Some((k, v.as_str()?)).filter(|_| NAME_KEYS.contains(&k.as_str())))?;
    let only_a_name = map
        .keys()
        .all(|k| k == key || k == "type" || ID_KEYS.contains(&k.as_str()));
    if !only_a_name || tools.get(&bare_name(name).0).is_none() {
        return None;
    }
    Some(Raw {
        name: Some(name.to_owned()),
        id: ID_KEYS.iter().find_map(|k| map.get(*k)).cloned(),
        envelope: Some(envelope_check(map)),
        ..Raw::default()
    })
}

/// OpenAI writes `arguments` as JSON text: that string is the wire form, not a repair.
pub(crate) fn encoded_arguments(raws: &mut [Raw]) {
    for raw in raws {
        if let Args::Value(Value::String(text)) = &mut raw.args {
            raw.args = Args::Encoded(std::mem::take(text));
        }
    }
}

/// Why an object is not the envelope, read strictly and as the loop reads it.
fn envelope_check(map: &Map<String, Value>) -> EnvelopeCheck {
    EnvelopeCheck {
        strict: envelope_problem(map),
        any_shape: any_shape_envelope_problem(map),
    }
}

/// Why an object is not the `{"tool": string, "parameters": object, "terminate": boolean}`
/// envelope, if it is not.
fn envelope_problem(map: &Map<String, Value>) -> Option<Error> {
    type Check = fn(&Value) -> bool;
    let fields: [(&str, Check, &str); 3] = [
        ("tool", Value::is_string, "a string"),
        ("parameters", Value::is_object, "an object"),
        ("terminate", Value::is_boolean, "true or false"),
    ];
    for (field, check, want) in fields {
        match map.get(field) {
            None => {
                return Some(Error::whole(
                    Code::MissingField,
                    format!("tool call has no \"{field}\" (--require-terminate)"),
                ));
            }
            Some(v) if !check(v) => {
                return Some(Error::whole(
                    Code::WrongType,
                    format!("\"{field}\" must be {want}, found {}", super::kind_of(v)),
                ));
            }
            Some(_) => {}
        }
    }
    None
}

/// Why an object is not an envelope the loop accepts, if it is not: a tool name under any key
/// `calls` reads one from (`tool`, `name` …), its parameters under any argument key (an object,
/// or JSON text that `arguments` decodes and reports), and `terminate` (true or false).
fn any_shape_envelope_problem(map: &Map<String, Value>) -> Option<Error> {
    let missing = |field: &str| {
        Some(Error::whole(
            Code::MissingField,
            format!("tool call has no \"{field}\""),
        ))
    };
    let wrong = |field: &str, want: &str, found: &Value| {
        Some(Error::whole(
            Code::WrongType,
            format!(
                "\"{field}\" must be {want}, found {}",
                super::kind_of(found)
            ),
        ))
    };
    let field = |keys: &[&'static str]| keys.iter().find_map(|k| Some((*k, map.get(*k)?)));
    match field(NAME_KEYS) {
        None => return missing("tool"),
        Some((key, name)) if !name.is_string() => return wrong(key, "a string", name),
        Some(_) => {}
    }
    match field(ARG_KEYS) {
        None => return missing("parameters"),
        Some((key, args)) if !(args.is_object() || args.is_string()) => {
            return wrong(key, "an object", args);
        }
        Some(_) => {}
    }
    match map.get("terminate") {
        None => missing("terminate"),
        Some(t) if !t.is_boolean() => wrong("terminate", "true or false", t),
        Some(_) => None,
    }
}

/// GLM writes the name right after `<tool_call>`, then a newline, `<arg_key>` or the close;
/// `<tool_call> tags` in prose is a mention.
fn looks_like_glm(body: &str) -> bool {
    let n = body.bytes().take_while(|b| is_name_byte(*b)).count();
    if n == 0 || body[..n].ends_with(['.', ':', '-']) {
        return false;
    }
    let after = &body[n..];
    after.is_empty()
        || after.starts_with(['\n', '\r'])
        || after.starts_with("<arg_key>")
        || after.starts_with("</tool_call>")
}

/// The text between `from` and the first of `ends` (within `limit`): `(end, found)`.
fn until(
    find: &mut Finder<'_>,
    from: usize,
    limit: usize,
    ends: &[&str],
) -> (usize, Option<usize>) {
    match find.find_any(from, limit, ends) {
        Some((i, len)) => (i, Some(i + len)),
        None => (limit, None),
    }
}

/// One leading and one trailing newline stripped, as Qwen3-Coder writes values.
fn xml_value(raw: &str) -> String {
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
fn gemma(text: &str, range: Range<usize>, quote: &str, out: &mut Out) -> Option<usize> {
    let mut pos = range.start;
    let mut any = false;
    while let Some(i) = find_str(&text[pos..range.end], "call:") {
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
        match gemma_args(&text[..range.end], brace, quote) {
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
fn gemma_args(text: &str, brace: usize, quote: &str) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let mut json = Vec::new();
    // For each open container, whether it is an object (its entries start with a key).
    let mut stack: Vec<bool> = Vec::new();
    let mut at_key = false;
    let mut j = brace;
    while j < bytes.len() {
        if text[j..].starts_with(quote) {
            let s = j + quote.len();
            let len = find_str(&text[s..], quote)?;
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
                if at_key || !literal {
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

fn function_tags(text: &str, range: Range<usize>, closed: bool, out: &mut Out) -> Option<usize> {
    let mut find = Finder::new(text);
    let mut pos = range.start;
    let mut any = false;
    while let Some(i) = find_str(&text[pos..range.end], "<function=") {
        let start = pos + i;
        let name_start = start + "<function=".len();
        let Some(gt) = text[name_start..range.end].find('>') else {
            out.cut_off(None, start, "it ends inside its <function=…> tag");
            return Some(range.end);
        };
        let name = text[name_start..name_start + gt]
            .trim()
            .trim_matches(['"', '\'']);
        if name.is_empty() || !name.bytes().all(is_name_byte) {
            pos = name_start;
            continue;
        }
        any = true;
        let content_start = name_start + gt + 1;
        let (content_end, after) = until(&mut find, content_start, range.end, &["</function>"]);
        let complete = after.is_some() || closed;
        function_body(text, name, start, content_start..content_end, complete, out);
        pos = after.unwrap_or(range.end);
    }
    any.then_some(range.end)
}

fn function_body(
    text: &str,
    name: &str,
    offset: usize,
    range: Range<usize>,
    complete: bool,
    out: &mut Out,
) {
    let at = skip_ws(text, range.start).min(range.end);
    let content = &text[at..range.end];
    let incomplete = |message: &str| {
        Item::Incomplete(Incomplete {
            tool: Some(bare_name(name).0),
            id: None,
            offset,
            message: message.to_owned(),
        })
    };
    if content.starts_with(['{', '[']) {
        // Functionary v3.1: the arguments are JSON; their end decides completeness.
        out.items.push(Item::Call(Raw {
            name: Some(name.to_owned()),
            args: Args::Text(content.trim_end().to_owned()),
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
    while let Some(i) = find_str(&text[pos..range.end], "<parameter=") {
        let key_start = pos + i + "<parameter=".len();
        let Some(gt) = text[key_start..range.end].find('>') else {
            out.items
                .push(incomplete("it ends inside a <parameter=…> tag"));
            return;
        };
        let key = text[key_start..key_start + gt]
            .trim()
            .trim_matches(['"', '\'']);
        let value_start = key_start + gt + 1;
        let (value_end, after) = until(
            &mut find,
            value_start,
            range.end,
            &["</parameter>", "<parameter=", "</function>"],
        );
        let closed_tag = after.is_some_and(|a| text[value_end..a].starts_with("</parameter>"));
        fields.push((
            key.to_owned(),
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
fn glm(text: &str, range: Range<usize>, closed: bool, out: &mut Out) -> Option<usize> {
    let lead =
        text[range.clone()].len() - text[range.clone()].trim_start_matches(['\n', '\r']).len();
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
    let mut pos = at + n;
    while let Some(i) = find_str(&text[pos..range.end], "<arg_key>") {
        let key_start = pos + i + "<arg_key>".len();
        let (key_end, after_key) = until(&mut find, key_start, range.end, &["</arg_key>"]);
        let value_open = after_key.map(|a| skip_ws(text, a));
        let value = value_open
            .filter(|&v| text[v..range.end].starts_with("<arg_value>"))
            .map(|v| {
                let vs = v + "<arg_value>".len();
                let (ve, after) = until(&mut find, vs, range.end, &["</arg_value>"]);
                (vs..ve, after.unwrap_or(range.end))
            });
        let key = text[key_start..key_end].trim().to_owned();
        match value {
            Some((span, after)) => {
                fields.push((key, Field::TextOrJson(text[span].to_owned())));
                pos = after;
            }
            None => {
                fields.push((key, Field::Value(Value::Null)));
                pos = after_key.unwrap_or(range.end);
            }
        }
    }
    out.items.push(Item::Call(Raw {
        name: Some(name.to_owned()),
        args: Args::Fields(fields),
        offset: range.start,
        ..Raw::default()
    }));
    Some(range.end)
}

/// The value of attribute `key` in a tag's text (`name="x"`, `name='x'` or `name=x`).
fn attr(tag: &str, key: &str) -> Option<String> {
    let mut pos = 0;
    while let Some(i) = find_str(&tag[pos..], key) {
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
fn invokes(
    text: &str,
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
    while let Some(i) = find_str(&text[pos..range.end], &open) {
        let start = pos + i;
        let Some(gt) = text[start..range.end].find('>') else {
            out.cut_off(None, start, "it ends inside its <invoke> tag");
            return Some(range.end);
        };
        let tag = &text[start + open.len()..start + gt];
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
        while let Some(j) = find_str(&text[p..content_end], &p_open) {
            let tag_start = p + j + p_open.len();
            let Some(gt) = text[tag_start..content_end].find('>') else {
                break;
            };
            let tag = &text[tag_start..tag_start + gt];
            let key = attr(tag, "name").unwrap_or_default();
            let is_json = attr(tag, "string").is_some_and(|s| s == "false");
            let value_start = tag_start + gt + 1;
            let (value_end, after) =
                until(&mut find, value_start, content_end, &[p_close.as_str()]);
            let value = xml_value(&text[value_start..value_end]);
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
        out.items.push(Item::Call(Raw {
            name: Some(name),
            args: Args::Fields(fields),
            offset: start,
            ..Raw::default()
        }));
        pos = after.unwrap_or(range.end);
    }
    any.then_some(range.end)
}

/// Python calls: a `[…]` list, or one call per line.
fn pythonic(text: &str, range: Range<usize>, out: &mut Out) -> Option<usize> {
    let at = skip_ws(text, range.start).min(range.end);
    let mut py = Py::new(text, at, range.end);
    let result = if text[at..range.end].starts_with('[') {
        py.list()
    } else {
        let mut calls = Vec::new();
        loop {
            py.pos = skip_ws(text, py.pos).min(range.end);
            if py.pos >= range.end {
                break Ok(calls);
            }
            let before = py.pos;
            match py.call() {
                Ok(call) => calls.push(call),
                // Tokens after the calls (`<|eom_id|>`) end them.
                Err(PyError::Syntax(..)) if !calls.is_empty() => {
                    py.pos = before;
                    break Ok(calls);
                }
                Err(e) => break Err(e),
            }
        }
    };
    match result {
        Ok(calls) if calls.is_empty() => None,
        Ok(calls) => {
            push_py_calls(calls, out);
            Some(py.pos)
        }
        Err(PyError::Truncated) => {
            let n = ident_len(
                text,
                skip_ws(text, at + usize::from(text[at..].starts_with('['))),
            );
            let name_at = skip_ws(text, at + usize::from(text[at..].starts_with('[')));
            out.cut_off(
                (n > 0).then(|| text[name_at..name_at + n].to_owned()),
                at,
                "its Python call ends before it is closed",
            );
            Some(range.end)
        }
        Err(PyError::Syntax(offset, what)) => {
            out.items.push(Item::failed(
                None,
                Error::at(
                    Code::InvalidJson,
                    offset,
                    format!("not a Python call with literal arguments: {what}"),
                ),
            ));
            Some(range.end)
        }
    }
}

/// A JSON call cut off at `offset`: the first call read from what is there names the tool.
fn json_cut_off(raws: Vec<Raw>, offset: usize, out: &mut Out) {
    let first = raws.into_iter().next();
    out.items.push(Item::Incomplete(Incomplete {
        tool: first
            .as_ref()
            .and_then(|r| r.name.as_deref())
            .map(|n| bare_name(n).0),
        id: first.and_then(|r| r.id),
        offset,
        message: "its JSON ends before it is closed".into(),
    }));
}

/// Python calls read from the reply, as items.
fn push_py_calls(calls: Vec<PyCall>, out: &mut Out) {
    for call in calls {
        out.items.push(Item::Call(Raw {
            name: Some(call.name),
            args: Args::Fields(
                call.args
                    .into_iter()
                    .map(|(k, v)| (k, Field::Value(v)))
                    .collect(),
            ),
            offset: call.start,
            ..Raw::default()
        }));
    }
}

/// `[f(a=1), …]` as the whole reply (after reasoning); text after the list stays text.
fn bare_pythonic(text: &str, out: &mut Out) {
    let at = skip_ws(text, 0);
    if !Py::looks_like_list(text, at) {
        return;
    }
    let mut py = Py::new(text, at, text.len());
    match py.list() {
        Ok(calls) => {
            push_py_calls(calls, out);
            out.cut.push(at..py.pos);
        }
        Err(PyError::Truncated) => {
            let name_at = skip_ws(text, at + 1);
            let n = ident_len(text, name_at);
            out.cut_off(
                Some(text[name_at..name_at + n].to_owned()),
                at,
                "its Python call ends before it is closed",
            );
            out.cut.push(at..text.len());
        }
        Err(PyError::Syntax(..)) => {}
    }
}

/// Whether a Kimi K2 call id is `functions.NAME:INDEX` (or `NAME:INDEX`).
fn is_call_id(head: &str) -> bool {
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
fn tagged(
    text: &str,
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
            if let Some(item) = unread(text, marker, start, body_end, next.is_some()) {
                out.unread.push((item, start..end));
            }
        }
    }
}

/// The JSON inside a markdown code fence, or the text as it is.
fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// The label and the end of a Hunyuan tag whose name ended at `i`: `>` (HY3) or `:LABEL>`
/// (HY4 writes `<tool_call:opensource>`).
fn hy_tag(text: &str, i: usize) -> Option<(&str, usize)> {
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
fn hunyuan(text: &str, ctx: &Ctx<'_>, out: &mut Out) {
    let mut pos = 0;
    let mut labels: Vec<&str> = Vec::new();
    while let Some(i) = find_str(&text[pos..], "<tool_call") {
        let start = pos + i;
        let name_end = start + "<tool_call".len();
        if text[name_end..].starts_with('s') {
            // A `<tool_calls>` section holding JSON is Jamba's: markers in its strings are text.
            pos = match hy_tag(text, name_end + 1) {
                Some((_, end)) if text[skip_ws(text, end)..].starts_with(['[', '{']) => {
                    let at = skip_ws(text, end);
                    ctx.json_extent(text, at, text.len())
                        .filter(|&e| is_valid_json(&text[at..e]))
                        .unwrap_or(end)
                }
                _ => name_end,
            };
            continue;
        }
        let Some((label, tag_end)) = hy_tag(text, name_end) else {
            pos = name_end;
            continue;
        };
        let close = format!("</tool_call{label}>");
        let section_open = format!("<tool_calls{label}>");
        let section_close = format!("</tool_calls{label}>");
        let sep = format!("<tool_sep{label}>");
        let next_open =
            find_str(&text[tag_end..], &text[start..tag_end]).map_or(text.len(), |j| tag_end + j);
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
        let at = skip_ws(text, tag_end).min(body_end);
        let n = text[at..body_end]
            .bytes()
            .take_while(|b| is_name_byte(*b))
            .count();
        let mut args_at = skip_ws(text, at + n).min(body_end);
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
            json_seq(text, ctx, at..body_end, false, true, out);
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
            args_at = skip_ws(text, args_at + sep.len()).min(body_end);
        }
        if text[args_at..body_end].starts_with(['{', '[']) {
            let args = text[args_at..body_end].trim_end();
            if !complete && json_extent(args, 0).is_none() {
                out.items.push(incomplete());
            } else {
                out.items.push(Item::Call(Raw {
                    name: Some(name.to_owned()),
                    args: Args::Text(args.to_owned()),
                    offset: start,
                    ..Raw::default()
                }));
            }
            continue;
        }
        match hy_pairs(text, args_at..body_end, label) {
            Ok(fields) if complete => out.items.push(Item::Call(Raw {
                name: Some(name.to_owned()),
                args: Args::Fields(fields),
                offset: start,
                ..Raw::default()
            })),
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

/// Hunyuan's `<arg_key>K</arg_key><arg_value>V</arg_value>` pairs in `range` (tags with
/// `label`). The error: where, whether the text ended first, and what was expected.
fn hy_pairs(
    text: &str,
    range: Range<usize>,
    label: &str,
) -> Result<Vec<(String, Field)>, (usize, bool, String)> {
    let [key_open, key_close, value_open, value_close] =
        ["<arg_key", "</arg_key", "<arg_value", "</arg_value"].map(|t| format!("{t}{label}>"));
    let mut find = Finder::new(text);
    let mut fields = Vec::new();
    let mut i = range.start;
    loop {
        i = skip_ws(text, i).min(range.end);
        if i >= range.end {
            return Ok(fields);
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
        let v = skip_ws(text, after_key).min(range.end);
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
        fields.push((
            text[key_start..key_end].trim().to_owned(),
            Field::Text(text[value_start..value_end].to_owned()),
        ));
        i = after_value;
    }
}

/// Mistral: `[TOOL_CALLS]` then a JSON array (pre-v11), `NAME{json}` (v11) or
/// `NAME[ARGS]{json}` with an optional `[CALL_ID]id` (v13). Stray words between the marker and
/// the calls (and after them) stay text; a marker followed by nothing readable is an error.
fn mistral(text: &str, ctx: &Ctx<'_>, out: &mut Out) {
    const MARK: &str = "[TOOL_CALLS]";
    let mut pos = 0;
    while let Some(i) = find_str(&text[pos..], MARK) {
        let start = pos + i;
        let after = start + MARK.len();
        let segment_end = find_str(&text[after..], MARK).map_or(text.len(), |j| after + j);
        let at = skip_ws(text, after).min(segment_end);
        pos = after;
        if text[at..].starts_with(['[', '{']) {
            if let Some(end) = json_seq(text, ctx, at..segment_end, false, true, out) {
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
            && ["[CALL_ID]", "[ARGS]"]
                .iter()
                .any(|t| text[j..segment_end].starts_with(t))
        {
            if let Some(rest) = text[j..segment_end].strip_prefix("[CALL_ID]") {
                let m = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
                id = Some(Value::String(rest[..m].to_owned()));
                j += "[CALL_ID]".len() + m;
            } else {
                j += "[ARGS]".len();
            }
            tagged = true;
        }
        let args_at = skip_ws(text, j).min(segment_end);
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
                && let Some(rest) = text[end..segment_end].strip_prefix("[CALL_ID]")
            {
                let m = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
                id = Some(Value::String(rest[..m].to_owned()));
                end += "[CALL_ID]".len() + m;
            }
            out.text_call(name, id, &text[args_at..args_end], start..end);
            pos = end.max(after);
            continue;
        }
        if n > 0 && skip_ws(text, j) >= segment_end {
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
        if let Some(json_at) = call_json(text, ctx, at..segment_end)
            && let Some(end) = json_seq(text, ctx, json_at..segment_end, false, true, out)
        {
            out.cut.extend([start..after, json_at..end]);
            pos = end.max(after);
            continue;
        }
        // `NAME {json}`: v11 with a space before the arguments.
        let k = skip_ws(text, j).min(segment_end);
        if n > 0 && k > j && !name.ends_with([':', '.', '-']) && text[k..].starts_with('{') {
            let end = json_extent(&text[..segment_end], k).unwrap_or(segment_end);
            out.text_call(name, id, &text[k..end], start..end);
            pos = end.max(after);
            continue;
        }
        if let Some(item) = unread(text, MARK, start, segment_end, false) {
            out.unread.push((item, start..segment_end));
            pos = segment_end.max(after);
        }
    }
}

/// Functionary v3.2: `>>>NAME\n{json}` per call; `>>>all\n` (or a leading `all\n`) starts text.
fn functionary32(text: &str, ctx: &Ctx<'_>, out: &mut Out) {
    let _ = ctx;
    let mut pos = 0;
    let mut any = false;
    let mut cuts = Vec::new();
    while let Some(i) = find_str(&text[pos..], ">>>") {
        let start = pos + i;
        let name_at = start + 3;
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
        if name == "all" {
            cuts.push(start..body_start);
            pos = body_start;
            continue;
        }
        let body_end = find_str(&text[body_start..], ">>>").map_or(text.len(), |j| body_start + j);
        let at = skip_ws(text, body_start).min(body_end);
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
        out.items.push(Item::Call(Raw {
            name: Some(name.to_owned()),
            args,
            offset: start,
            ..Raw::default()
        }));
    }
    if any {
        let lead = skip_ws(text, 0);
        if text[lead..].starts_with("all\n") {
            cuts.push(lead..lead + 4);
        }
        out.cut.extend(cuts);
    }
}

/// Marker-less JSON: call-shaped objects or arrays anywhere in the text, bare or fenced.
/// With tools, one that is not the whole reply counts only when it names a known tool.
fn markerless(text: &str, ctx: &Ctx<'_>, out: &mut Out) {
    let bytes = text.as_bytes();
    let mut i = 0;
    // Each bracket that never closes costs a pass to the end of the text; a few are looked
    // at (the call cut off at the end among them), then the scan stops, so work stays linear.
    let mut unclosed = 0;
    // A complete value that cannot be read is looked into (a call may sit inside broken
    // JSON), which hands each value nested in it to the mender again: on `[[[…]]]` nested past
    // --max-nesting that was a pass per bracket. The bytes looked into again are capped at a
    // few times the reply; past that, such a value is skipped whole.
    let mut budget = 2 * text.len() + (64 << 10);
    let mut unreadable = |start: usize, end: usize, complete: bool| {
        if complete && budget < end - start {
            return end;
        }
        if complete {
            budget -= end - start;
        }
        start + 1
    };
    while let Some(j) = memchr::memchr2(b'{', b'[', &bytes[i..]) {
        let start = i + j;
        let (end, complete) = match ctx.json_extent(text, start, text.len()) {
            Some(e) => (e, true),
            None if unclosed == 8 => break,
            None => {
                unclosed += 1;
                (text.len(), false)
            }
        };
        let piece = &text[start..end];
        let mut mender = ctx.mender(Target::Any, Concat::First);
        let mended = match mender.mend(piece) {
            Ok(mended) => mended,
            // Nesting past the limit is refused, not read as text: a call nested that deep
            // must not vanish from the reply.
            Err(error) if error.code == Code::TooDeep && complete => {
                out.items.push(Item::failed(
                    None,
                    Error {
                        message: format!("tool call JSON: {}", error.message),
                        offset: error.offset.map(|o| o + start),
                        ..error
                    },
                ));
                out.cut.push(start..end);
                i = end;
                continue;
            }
            Err(_) => {
                i = unreadable(start, end, complete);
                continue;
            }
        };
        let cut_off = !complete || truncated(mended.repairs(), piece);
        let repairs = mended.repairs().to_vec();
        let Ok(value) = ctx.value(&mended.value()) else {
            i = unreadable(start, end, complete);
            continue;
        };
        let mut raws = Vec::new();
        let shaped = match bare_known_call(&value, ctx) {
            Some(raw) => {
                raws.push(raw);
                true
            }
            None => collect(value, false, true, &mut raws) && !raws.is_empty(),
        };
        if !shaped {
            // A complete value that is not a call: skip it whole (a call is never inside one
            // that is not a call wrapper, and wrappers were looked into).
            i = if complete { end } else { start + 1 };
            continue;
        }
        let (span, whole) = fenced_span(text, start, end);
        let attempt = whole || raws.iter().any(|r| r.terminate.is_some());
        if !attempt
            && !raws
                .iter()
                .all(|r| r.name.as_deref().is_some_and(|n| ctx.knows(n)))
        {
            i = end;
            continue;
        }
        if cut_off {
            json_cut_off(raws, start, out);
            out.cut.push(span);
            return;
        }
        let repairs: Vec<Repair> = repairs
            .into_iter()
            .map(|mut r| {
                r.offset = r.offset.map(|o| o + start);
                r
            })
            .collect();
        if raws.len() == 1 {
            raws[0].repairs = repairs;
        } else {
            out.repairs.extend(repairs);
        }
        for mut raw in raws {
            raw.offset = start;
            out.items.push(Item::Call(raw));
        }
        out.cut
            .push(span.start..closing_markers_after(text, span.end));
        i = end;
    }
}

/// The end of the closing call markers (`</tool_call>`, …) right after `end`, whitespace
/// between: JSON a format's opening marker was left out of (templates write it) ends with them.
fn closing_markers_after(text: &str, mut end: usize) -> usize {
    loop {
        let at = skip_ws(text, end);
        let close = TABLE.iter().find_map(|spec| match spec.kind {
            Kind::Block { close, .. } => close.iter().find(|c| text[at..].starts_with(**c)),
            _ => None,
        });
        match close {
            Some(c) => end = at + c.len(),
            None => return end,
        }
    }
}

/// The span of a JSON value with the code fence around it, if any, and whether it is the
/// whole text.
fn fenced_span(text: &str, start: usize, end: usize) -> (Range<usize>, bool) {
    let before = text[..start].trim_end();
    let after = text[end..].trim_start();
    let mut span = start..end;
    // A fence right before, but for its tag: found without searching the text before it
    // (an `rfind` per value made a reply of many calls quadratic).
    let untagged = before.trim_end_matches(|c: char| c.is_ascii_alphanumeric());
    let fence_before = untagged.ends_with("```").then(|| untagged.len() - 3);
    if let Some(fs) = fence_before
        && after.starts_with("```")
    {
        span = fs..(text.len() - after.len() + 3);
    }
    let whole = text[..span.start].trim().is_empty() && text[span.end..].trim().is_empty();
    (span, whole)
}
