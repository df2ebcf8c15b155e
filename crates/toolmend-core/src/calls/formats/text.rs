//! Text helpers the format decoders share: scanning to a set of end markers, code fences,
//! cutting markers out of the text.

use crate::calls::Out;
use crate::calls::scan::{Finder, Masked, find_str};

/// A Markdown code fence, which may hold a call's JSON.
pub(crate) const CODE_FENCE: &str = "```";

/// Cuts every occurrence of `markers` out of the text: a format's own markers are never text.
pub(super) fn cut_all<M: AsRef<str>>(text: Masked<'_>, markers: &[M], out: &mut Out) {
    for marker in markers {
        let marker = marker.as_ref();
        let mut p = 0;
        while let Some(j) = find_str(text.sub(p..), marker) {
            out.cut.push(p + j..p + j + marker.len());
            p += j + marker.len();
        }
    }
}

/// The text between `from` and the first of `ends` (within `limit`): `(end, found)`.
pub(super) fn until(
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

/// The JSON inside a markdown code fence, or the text as it is.
pub(super) fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}
