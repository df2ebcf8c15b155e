//! Python-style calls: `[f(a=1), g(b=2)]` as a body or as the whole reply.

use std::ops::Range;

use crate::calls::pythonic::{Py, PyCall, PyError};
use crate::calls::scan::{ident_len, skip_ws};
use crate::calls::{Args, Field, Item, Out, Raw};
use crate::error::{Code, Error};

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
            ..Raw::default()
        }));
    }
}

/// `[f(a=1), …]` as the whole reply (after reasoning); text after the list stays text.
pub(super) fn bare_pythonic(text: &str, out: &mut Out) {
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
