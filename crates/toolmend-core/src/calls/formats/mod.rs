//! The table of call formats and the generic decoders it is built from.
//!
//! Most formats are described by their markers and the encoding of their body: a block
//! (`open … close`, the close optional at the end of the text), a prefix (no closer), or tagged
//! calls (`begin HEAD sep BODY end`, DeepSeek / Kimi / Step-3). Bodies are JSON call objects,
//! `<function=NAME>` tags (Qwen3-Coder XML, Functionary), GLM's `<arg_key>` pairs, `<invoke>`
//! XML (MiniMax-M2, DeepSeek DSML, Step-3) or Python calls. Harmony, Mistral, Functionary v3.2
//! and marker-less JSON have decoders of their own.

mod drivers;
mod hunyuan;
pub(crate) mod json;
pub(crate) mod mistral;
mod python;
mod text;
mod unread;
mod xml;

use std::ops::Range;

pub(crate) use drivers::Body;
use drivers::*;
pub(crate) use hunyuan::labelled_open;
use hunyuan::*;
pub(crate) use json::SERDE_DEPTH;
use json::*;
pub(crate) use json::{collect, encoded_arguments};
use mistral::*;
use python::*;
pub(crate) use text::CODE_FENCE;
use unread::{ReadSpans, Taken};

use super::scan::{
    Masked, Reasoning, blank, blank_in_place, is_whole_json, reasoning, remaining_text, skip_ws,
};
use super::{Ctx, Item, Out, harmony, truncated};
use crate::args::{Concat, Target};
use crate::error::{Code, Error};
use crate::repair::Repair;

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

impl Spec {
    /// Whether `--format auto` (and the stream, unless a format is forced) tries this format.
    /// `qwen3_coder` and `glm45` bodies are inside `<tool_call>`, where `hermes` already tells
    /// them from its JSON; alone they are for `--format`.
    pub(crate) fn in_auto(&self) -> bool {
        !matches!(self.name, "qwen3_coder" | "glm45")
    }
}

/// Whether a block's open marker is followed by the call's name up to `>` (`<function=NAME>`),
/// its arguments then running to the block's close, rather than by a body that names the call.
pub(crate) fn name_follows_open(marker: &str) -> bool {
    marker == "<function="
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
        models: "gpt-oss (<|channel|>commentary to=functions.NAME … <|call|>), also a reply that starts inside the header ( to=functions.NAME<|channel|>…)",
        kind: Kind::Harmony,
    },
    Spec {
        name: "deepseek_dsml",
        models: "DeepSeek V3.2 / V4 (<｜DSML｜function_calls> or <｜DSML｜tool_calls>, <｜DSML｜invoke> with parameter elements or one JSON object)",
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
        models: "Hunyuan HY3 / HY4 (<tool_calls><tool_call>NAME<tool_sep><arg_key>K</arg_key><arg_value>V</arg_value></tool_call>, HY4 tags labelled <tool_call:opensource>); values typed by the schema, else strings; values escaped once too often are decoded (unescape)",
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
        models: "GLM-4.5 / 4.6 / 4.7 (<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>); values escaped once too often are decoded (unescape)",
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
        models: "AI21 Jamba, Hunyuan-A13B, MiniMax-M1, ServiceNow Apriel (<tool_calls>JSON</tool_calls>)",
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
        name: "minicpm",
        models: "MiniCPM (<function name=\"NAME\"><param name=\"K\">V</param></function>), bare or in a wrapper",
        kind: block(&["<function name="], &["</function>"], Body::FunctionTags),
    },
    Spec {
        name: "functionary",
        models: "Functionary v3.1 (<function=NAME>JSON</function>), Llama on Groq (<function=NAME={JSON}</function>), bare Qwen3-Coder <function=…>",
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
        models: "Llama 3.2 pythonic, ToolACE ([f(a=1), g(b=2)] as the whole reply, list after list); after prose when --tools names every function (LFM2 without its markers)",
        kind: Kind::BarePythonic,
    },
    Spec {
        name: "json",
        models: "marker-less JSON: bare, fenced, {\"name\",\"arguments\"}, }{-glued, OpenAI / Anthropic shapes",
        kind: Kind::Json,
    },
];

/// The markers that open calls or call sections and are special tokens, never plain tags or
/// words a model may write in prose or thought (`<|tool_calls_section_begin|>`,
/// `<｜DSML｜function_calls>`, `<minimax:tool_call>`, not `<tool_call>` or `functools`).
pub(crate) fn call_tokens() -> &'static [&'static str] {
    static TOKENS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    TOKENS.get_or_init(|| {
        let mut tokens: Vec<&'static str> = Vec::new();
        for spec in TABLE {
            let opens: Vec<&'static str> = match spec.kind {
                Kind::Block { open, .. } | Kind::Prefix { open, .. } => open.to_vec(),
                Kind::Tagged { open, section, .. } => section
                    .iter()
                    .copied()
                    .filter(|m| !m.contains("end"))
                    .chain([open])
                    .collect(),
                _ => Vec::new(),
            };
            for marker in opens {
                let special = marker.starts_with("<|")
                    || marker.starts_with("<｜")
                    || marker.contains(":tool_call>");
                if special && !PLAIN_MARKERS.contains(&marker) && !tokens.contains(&marker) {
                    tokens.push(marker);
                }
            }
        }
        tokens
    })
}

/// What scanning a reply found.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    pub items: Vec<Item>,
    pub text: Option<String>,
    pub reasoning: Vec<String>,
    pub repairs: Vec<Repair>,
    pub format: Option<&'static str>,
}

/// Scans a reply with the chosen format, or with each format in turn. `known_whole_json`: the
/// reply was read as one JSON value already (it is not checked again).
pub(crate) fn scan(text: &str, ctx: &Ctx<'_>, known_whole_json: bool) -> Scanned {
    let forced = ctx
        .options
        .format
        .as_deref()
        .filter(|f| *f != "auto")
        .and_then(|f| TABLE.iter().find(|s| s.name == f));
    // A reply that is one JSON object or array is read as JSON: markers and reasoning tags in
    // its strings are text (`{"tool": "f", "parameters": {"q": "<tool_call>"}}`).
    let whole_json = forced.is_none() && (known_whole_json || is_whole_json(text));
    // Markers inside the strings of JSON values are text in every format (see `mask`); a
    // whole-JSON reply is read as JSON alone, so it needs no mask.
    let strings = if whole_json {
        Vec::new()
    } else {
        super::mask::json_strings(text, ctx)
    };
    let masked = Masked::new(text, &strings);
    let harmony_first = match forced {
        Some(spec) => matches!(spec.kind, Kind::Harmony),
        None => !whole_json && harmony::detect(masked),
    };
    if harmony_first {
        let (out, text_at) = harmony::scan(masked, ctx);
        let mut scanned = Scanned {
            items: out.items,
            text: None,
            reasoning: out.reasoning,
            repairs: out.repairs,
            format: Some("harmony"),
        };
        let mut parts = Vec::new();
        for (part, at) in out.text.into_iter().flatten().zip(text_at) {
            // A message's text may hold calls of another format: they are calls too.
            match at {
                Some(at) if forced.is_none() && !harmony::detect(Masked::plain(&part)) => {
                    let inner = scan(&part, ctx, false);
                    parts.extend(inner.text);
                    scanned.reasoning.extend(inner.reasoning);
                    scanned
                        .repairs
                        .extend(inner.repairs.into_iter().map(|r| shifted(r, at)));
                    scanned
                        .items
                        .extend(inner.items.into_iter().map(|item| item.shifted(at)));
                }
                _ => parts.push(part),
            }
        }
        scanned.items.sort_by_key(Item::offset);
        scanned.text = super::scan::join_parts(parts.iter().map(String::as_str));
        return scanned;
    }
    let thinking = if whole_json {
        Reasoning::default()
    } else {
        reasoning(masked, call_tokens())
    };
    // The blanked copies are as long as the reply: its strings are masked in them too.
    let mut visible = blank(text, &thinking.spans);
    // Every format is tried, each on the text the formats before it left: a reply may mix
    // them (a Hermes call, then `[TOOL_CALLS]…`), and none of its calls may fall into the
    // text. The format named is the first (most specific) that found a call.
    let mut format = None;
    let mut out = Out::default();
    // Markers no call could be read from, each with the format that found it.
    let mut unread = Vec::new();
    let mut sources = 0;
    // The spans each format read.
    let mut read_by: Vec<(&str, Range<usize>)> = Vec::new();
    for spec in forced.map_or(TABLE, std::slice::from_ref) {
        // `hermes` already tells `<tool_call>` bodies apart; these two are for --format.
        if matches!(spec.kind, Kind::Harmony)
            || (forced.is_none() && !spec.in_auto())
            || (whole_json && !matches!(spec.kind, Kind::Json))
        {
            continue;
        }
        let mut found = run_spec(spec, Masked::new(&visible, &strings), ctx);
        // A call of this format around what a format before it read (a marker inside its
        // arguments that the mask could not hide: their JSON is broken) owns those bytes: the
        // items read inside it are dropped, and it is read again with its text whole, never
        // with blanks where that marker was.
        if let Some(enclosing) = enclosing(&found.cut, &read_by) {
            give_back(&enclosing, text, &mut visible, &mut out, &mut read_by);
            // Each format's spans are together, in the table's order.
            let mut names: Vec<&str> = read_by.iter().map(|(name, _)| *name).collect();
            names.dedup();
            sources = names.len();
            format = read_by.first().map(|(name, _)| *name);
            found = run_spec(spec, Masked::new(&visible, &strings), ctx);
        }
        unread.extend(
            std::mem::take(&mut found.unread)
                .into_iter()
                .map(|u| (spec.name, u)),
        );
        // (A format may read markup and find no call in it: `[]` in call markers.)
        if found.items.is_empty() && found.cut.is_empty() {
            continue;
        }
        format.get_or_insert(spec.name);
        sources += 1;
        // What this format read is no longer there for the formats after it.
        blank_in_place(&mut visible, &found.cut);
        out.items.append(&mut found.items);
        read_by.extend(found.cut.iter().map(|c| (spec.name, c.clone())));
        out.cut.append(&mut found.cut);
        out.repairs.append(&mut found.repairs);
        // Only white space left: the formats after this one would find nothing in it.
        if skip_ws(&visible, 0) == visible.len() {
            break;
        }
    }
    // A marker no call could be read from is an error, never silent text; one inside what
    // another format read is that format's markup, and a wrapper around another format's
    // calls held them.
    let mut errors = Vec::new();
    if !unread.is_empty() {
        // Indexed only when there is a marker to ask about (most replies have none).
        let (read, mut taken) = (ReadSpans::new(&read_by), Taken::default());
        for (name, (item, span)) in unread {
            if !read.hold(name, &span) && taken.take(&span) {
                format.get_or_insert(name);
                errors.push((item, span));
            }
        }
    }
    // Items of one format come in the reply's order; those of several are merged into it.
    if sources > 1 || !errors.is_empty() {
        for (item, span) in errors {
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

/// The spans of `cut` that hold a span an earlier format read (`read_by`), if any.
fn enclosing(cut: &[Range<usize>], read_by: &[(&str, Range<usize>)]) -> Option<Vec<Range<usize>>> {
    if read_by.is_empty() {
        return None;
    }
    let holds = |outer: &Range<usize>| {
        read_by
            .iter()
            .any(|(_, inner)| outer.start < inner.start && inner.end <= outer.end)
    };
    let found: Vec<Range<usize>> = cut.iter().filter(|c| holds(c)).cloned().collect();
    (!found.is_empty()).then_some(found)
}

/// Undoes what the formats before read inside `spans`: their items, markup and repairs there
/// are dropped, and the reply's bytes are put back in `visible`.
fn give_back(
    spans: &[Range<usize>],
    text: &str,
    visible: &mut String,
    out: &mut Out,
    read_by: &mut Vec<(&str, Range<usize>)>,
) {
    let inside = |at: usize| spans.iter().any(|s| s.contains(&at));
    let within = |r: &Range<usize>| spans.iter().any(|s| s.start <= r.start && r.end <= s.end);
    let mut bytes = std::mem::take(visible).into_bytes();
    for (_, span) in read_by.iter().filter(|(_, r)| within(r)) {
        bytes[span.clone()].copy_from_slice(&text.as_bytes()[span.clone()]);
    }
    // The reply's own bytes, over blanks at char boundaries: UTF-8 again.
    *visible = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    read_by.retain(|(_, r)| !within(r));
    out.cut.retain(|r| !within(r));
    out.items.retain(|item| !inside(item.offset()));
    out.repairs.retain(|r| !r.offset.is_some_and(inside));
}

/// `repair` with its offset moved by `by` bytes.
fn shifted(mut repair: Repair, by: usize) -> Repair {
    repair.offset = repair.offset.map(|o| o + by);
    repair
}

fn run_spec(spec: &Spec, text: Masked<'_>, ctx: &Ctx<'_>) -> Out {
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
        Kind::BarePythonic => bare_pythonic(&text, ctx, &mut out),
        Kind::Json => markerless(&text, ctx, &mut out),
        Kind::Harmony => {}
    }
    out
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
    // Where the last call read ended.
    let mut last_call_end: Option<usize> = None;
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
                // A broken call, then a whole one on a later line: the broken one is an
                // error when it is a call, and the whole one is read.
                // A stray `{` in prose before it is text.
                if let Some(next) = whole_call_after(text, ctx, start, text.len()) {
                    if call_shaped(&text[start..next], ctx) {
                        broken_call(text, ctx, start..next, out);
                        out.cut.push(start..next);
                        i = next;
                    } else {
                        i = start + 1;
                    }
                    continue;
                }
                (text.len(), false)
            }
        };
        let piece = &text[start..end];
        let mut mender = ctx.value_mender(Target::Any, Concat::First);
        let mended = match mender.mend_value(piece) {
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
        let cut_off = !complete || truncated(mended.repairs, piece);
        let repairs = mended.repairs.to_vec();
        let Ok(mut value) = mended.value else {
            i = unreadable(start, end, complete);
            continue;
        };
        let glued = json::glued_members(&mut value, piece, &repairs);
        let mut raws = Vec::new();
        let shaped = match bare_known_call(&value, ctx) {
            Some(raw) => {
                raws.push(raw);
                true
            }
            None => collect(value, false, true, &mut raws) && !raws.is_empty(),
        };
        if let (Some(glued), [raw]) = (glued, raws.as_mut_slice()) {
            raw.dropped.push(serde_json::Value::Object(glued));
        }
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
        // `{…}; {…}`: a `;` or `,` alone between two calls (Llama 3's parallel calls without
        // `<|python_tag|>`) separates them; it is no text.
        if let Some(last) = last_call_end
            && matches!(text[last..span.start].trim(), ";" | ",")
        {
            out.cut.push(last..span.start);
        }
        let call_end = closing_markers_after(text, span.end);
        out.cut.push(span.start..call_end);
        last_call_end = Some(call_end);
        i = end;
    }
}

/// Whether `piece` (JSON that does not close) reads, healed, as a call with a name: a stray
/// `{` in prose is none.
fn call_shaped(piece: &str, ctx: &Ctx<'_>) -> bool {
    let mut lenient = crate::args::Mender::new(crate::args::Options {
        target: Target::Any,
        ..crate::args::Options::default()
    })
    .building_values();
    let Some(value) = lenient
        .mend_value(piece)
        .ok()
        .filter(|built| built.deepest <= ctx.options.max_nesting)
        .and_then(|built| built.value.ok())
    else {
        return false;
    };
    let mut raws = Vec::new();
    collect(value, false, true, &mut raws)
        && raws
            .iter()
            .any(|r| r.name.as_deref().is_some_and(|n| ctx.knows(n)))
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
