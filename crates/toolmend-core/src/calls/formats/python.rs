//! Python-style calls: `[f(a=1), g(b=2)]` as a body or as the whole reply.

use std::ops::Range;

use crate::calls::Ctx;
use crate::calls::pythonic::{Py, PyCall, PyError};
use crate::calls::scan::{ident_len, skip_ws};
use crate::calls::{Args, Field, Item, Out, Raw};
use crate::error::{Code, Error};
use crate::repair::{Repair, RepairKind};

/// Python calls: a `[…]` list, or one call per line.
pub(super) fn pythonic(text: &str, range: Range<usize>, out: &mut Out) -> Option<usize> {
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

/// Python calls read from the reply, as items.
pub(super) fn push_py_calls(calls: Vec<PyCall>, out: &mut Out) {
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
            repairs: {
                let mut repairs: Vec<Repair> = (call.sets.iter())
                    .map(|&at| Repair::at(RepairKind::SetLiteral, at))
                    .chain(
                        (call.line_breaks.iter())
                            .map(|&at| Repair::at(RepairKind::ControlCharacter, at)),
                    )
                    .collect();
                repairs.sort_by_key(|r| r.offset);
                repairs
            },
            ..Raw::default()
        }));
    }
}

/// `[f(a=1), …]` lists: at the start of the reply (after reasoning), each list right after
/// one read (`[f(a=1)] [g(b=2)]`), and, when a tools list names every function called, a
/// list after prose (`Let me check.[get_time(city="Paris")]`, as LFM2 writes without its
/// markers). Text around the lists stays text.
pub(super) fn bare_pythonic(text: &str, ctx: &Ctx<'_>, out: &mut Out) {
    let known = |calls: &[PyCall]| ctx.tools.is_some() && calls.iter().all(|c| ctx.knows(&c.name));
    // The bytes parsed from a list that is not read: a few times the reply, so a text of
    // many `[f(` stays linear.
    let mut budget = 2 * text.len() + (64 << 10);
    // Where a list may start without prose before it: the start, or right after a list.
    let mut lead = skip_ws(text, 0);
    let mut pos = lead;
    while pos < text.len() {
        let at = if Py::looks_like_list(text, lead) {
            lead
        } else if ctx.tools.is_some() {
            match memchr::memchr(b'[', &text.as_bytes()[pos..]) {
                Some(j) if Py::looks_like_list(text, pos + j) => pos + j,
                Some(j) => {
                    pos += j + 1;
                    continue;
                }
                None => return,
            }
        } else {
            return;
        };
        let after_prose = at != lead;
        let mut py = Py::new(text, at, text.len());
        match py.list() {
            Ok(calls) if !after_prose || known(&calls) => {
                push_py_calls(calls, out);
                out.cut.push(at..py.pos);
                lead = skip_ws(text, py.pos);
                pos = lead;
            }
            Err(PyError::Truncated) => {
                let name_at = skip_ws(text, at + 1);
                let n = ident_len(text, name_at);
                let name = &text[name_at..name_at + n];
                if after_prose && !ctx.tools.is_some_and(|_| ctx.knows(name)) {
                    return;
                }
                out.cut_off(
                    Some(name.to_owned()),
                    at,
                    "its Python call ends before it is closed",
                );
                out.cut.push(at..text.len());
                return;
            }
            _ => {
                let spent = py.pos.max(at + 1) - at;
                if budget < spent {
                    return;
                }
                budget -= spent;
                lead = usize::MAX;
                pos = at + 1;
            }
        }
    }
}
