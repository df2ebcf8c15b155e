//! gpt-oss Harmony: messages `<|start|>assistant<|channel|>CHANNEL [to=RECIPIENT]
//! [<|constrain|>json]<|message|>CONTENT<|end|>|<|call|>|<|return|>`.
//!
//! A message with a recipient (`to=functions.NAME`, before or after the channel) is a call, on
//! whatever channel (gpt-oss addresses tools from `analysis` too). Without one, `analysis` is
//! reasoning and `final` and `commentary` are text. `<|call|>` is a stop token and is often
//! missing: a call with no terminator is complete when its JSON is.

use super::scan::{Finder, Masked, find_str};
use super::{Args, Ctx, Item, Out, Raw};
use crate::bytes::offset_in;

pub(crate) const MESSAGE: &str = "<|message|>";
pub(crate) const ENDS: &[&str] = &[
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<|start|>",
    "<|channel|>",
];

/// Whether the text is written in Harmony.
pub(crate) fn detect(text: Masked<'_>) -> bool {
    // `find_str`, not `contains`: markers inside JSON strings are text.
    let has = |marker| find_str(text, marker).is_some();
    has("<|channel|>") || (has(MESSAGE) && (has("<|start|>") || has("to=functions.")))
}

/// The messages of a Harmony reply, and for each part of `out.text` where its content starts
/// in the reply when it is a message's content as written (`None` for text between messages).
pub(crate) fn scan(text: Masked<'_>, _ctx: &Ctx<'_>) -> (Out, Vec<Option<usize>>) {
    let mut out = Out::default();
    let mut texts = Vec::new();
    let mut text_at = Vec::new();
    let mut find = Finder::new(text);
    let mut pos = 0;
    loop {
        let Some(i) = find_str(text.sub(pos..), MESSAGE) else {
            let rest = strip_markers(&text[pos..]);
            if !rest.trim().is_empty() {
                texts.push(rest);
                text_at.push(None);
            }
            break;
        };
        let m = pos + i;
        let segment = text.sub(pos..m);
        let mut header_start = ["<|start|>", "<|channel|>"]
            .iter()
            .filter_map(|k| find_str(segment, k))
            .min()
            .unwrap_or(0);
        // A reply that starts inside the header (the prompt ended with `<|start|>assistant`):
        // ` to=functions.NAME<|channel|>commentary …`; the recipient before the channel is
        // the header's, not text.
        let before = segment[..header_start].trim_start();
        let before = before
            .strip_prefix("assistant")
            .unwrap_or(before)
            .trim_start();
        if before.starts_with("to=") && !before.contains('\n') {
            header_start = segment.len() - segment.trim_start().len();
        }
        let orphan = strip_markers(&segment[..header_start]);
        if !orphan.trim().is_empty() {
            texts.push(orphan);
            text_at.push(None);
        }
        let header = segment.sub(header_start..);
        let content_start = m + MESSAGE.len();
        let (content_end, terminator) = match find.find_any(content_start, text.len(), ENDS) {
            Some((e, len)) => (e, Some(&text[e..e + len])),
            None => (text.len(), None),
        };
        let content = &text[content_start..content_end];
        let channel = word_after(header, "<|channel|>");
        match word_after(header, "to=") {
            Some(recipient) => {
                let name = recipient.strip_prefix("functions.").unwrap_or(recipient);
                if terminator.is_none() && content.trim().is_empty() {
                    out.cut_off(
                        Some(name.to_owned()),
                        pos + header_start,
                        "it ends before its arguments",
                    );
                } else {
                    out.items.push(Item::Call(Raw {
                        name: Some(name.to_owned()),
                        args: Args::Text(content.trim().to_owned()),
                        args_at: offset_in(&text, content.trim()),
                        offset: pos + header_start,
                        ..Raw::default()
                    }));
                }
            }
            None if channel == Some("analysis") => out.reasoning.push(content.trim().to_owned()),
            None => {
                texts.push(content.trim().to_owned());
                text_at.push(Some(
                    content_start + content.len() - content.trim_start().len(),
                ));
            }
        }
        // `<|start|>` and `<|channel|>` open the next header; the others end this message.
        pos = match terminator {
            Some(t @ ("<|end|>" | "<|call|>" | "<|return|>")) => content_end + t.len(),
            _ => content_end,
        };
    }
    out.text = Some(texts);
    (out, text_at)
}

/// The word after `key` in a header (`<|channel|>commentary`, `to=functions.x`).
fn word_after<'h>(header: Masked<'h>, key: &str) -> Option<&'h str> {
    let at = find_str(header, key)? + key.len();
    let rest = &header.as_str()[at..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(rest.len());
    Some(&rest[..end]).filter(|w| !w.is_empty())
}

fn strip_markers(text: &str) -> String {
    let mut out = text.to_owned();
    for marker in [
        "<|start|>assistant",
        "<|start|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
    ] {
        out = out.replace(marker, "");
    }
    out.trim().to_owned()
}
