//! The markers a stream looks for in the reply's text, taken from the one format table.

use crate::calls::formats::mistral::{ARROWS, MISTRAL_OPEN};
use crate::calls::formats::{Body, Kind, TABLE, name_follows_open};
use crate::calls::scan::{REASONING, reasoning_closes};

/// What a marker starts.
#[derive(Debug, Clone, Copy)]
pub(super) enum Action {
    /// A reasoning block of this kind (index in `REASONING`).
    Think(usize),
    /// The close of a reasoning block.
    Unthink,
    /// A block or prefix format: its body follows.
    Body(Body),
    /// `open NAME sep ARGS` (Kimi K2, DeepSeek).
    Tagged(&'static str),
    /// `[TOOL_CALLS]`.
    Mistral,
    /// `<function=NAME>`, the arguments then running to the block's close.
    Function(&'static str),
    /// `>>>NAME\n`.
    Arrows,
}

/// The markers a stream looks for, by first byte and longest first among those, and which
/// bytes can start one.
pub(super) struct Markers {
    pub(super) list: Vec<(&'static [u8], Action)>,
    /// Where the markers that start with each byte begin in `list` (they end where the next
    /// byte's begin): [`Markers::at`] looks at those alone.
    from: [u16; 257],
    pub(super) first: [bool; 256],
    pub(super) markerless: bool,
    /// Bytes that start nothing in text (neither a marker nor, marker-less, JSON).
    pub(super) plain: [bool; 256],
}

impl Markers {
    pub(super) fn new(format: Option<&str>) -> Markers {
        let forced = format.filter(|f| *f != "auto");
        let mut list: Vec<(&'static [u8], Action)> = Vec::new();
        for (i, (open, _)) in REASONING.iter().enumerate() {
            list.push((open.as_bytes(), Action::Think(i)));
        }
        for close in reasoning_closes() {
            list.push((close.as_bytes(), Action::Unthink));
        }
        let mut markerless = false;
        for spec in TABLE {
            if forced.is_some_and(|f| f != spec.name) || (forced.is_none() && !spec.in_auto()) {
                continue;
            }
            let mut add = |marker: &'static str, action: Action| {
                if !list.iter().any(|(m, _)| *m == marker.as_bytes()) {
                    list.push((marker.as_bytes(), action));
                }
            };
            match spec.kind {
                Kind::Block { open, close, body } => {
                    for marker in open {
                        if name_follows_open(marker) {
                            add(marker, Action::Function(close[0]));
                        } else {
                            add(marker, Action::Body(body));
                        }
                    }
                }
                Kind::Prefix { open, body, .. } => {
                    for marker in open {
                        add(marker, Action::Body(body));
                    }
                }
                Kind::Tagged {
                    open,
                    sep,
                    body: Body::Json { .. },
                    ..
                } => add(open, Action::Tagged(sep)),
                Kind::Mistral => add(MISTRAL_OPEN, Action::Mistral),
                Kind::Functionary32 => add(ARROWS, Action::Arrows),
                Kind::Json => markerless = true,
                _ => {}
            }
        }
        list.sort_by_key(|(m, _)| (m[0], std::cmp::Reverse(m.len())));
        let mut first = [false; 256];
        let mut from = [0u16; 257];
        for (i, (m, _)) in list.iter().enumerate() {
            let b = usize::from(m[0]);
            if !first[b] {
                first[b] = true;
                from[b] = u16::try_from(i).unwrap_or(u16::MAX);
            }
        }
        // `from[b]..from[b + 1]`: the markers that start with `b` (none when `b` starts none).
        from[256] = u16::try_from(list.len()).unwrap_or(u16::MAX);
        for b in (0..256).rev() {
            if !first[b] {
                from[b] = from[b + 1];
            }
        }
        let mut plain = [false; 256];
        for (b, plain) in plain.iter_mut().enumerate() {
            *plain = !(first[b] || (markerless && b == usize::from(b'{')));
        }
        Markers {
            list,
            from,
            first,
            markerless,
            plain,
        }
    }

    /// The marker at the start of `rest` (not empty): `Ok(Some)` when one is there in full,
    /// `Err` when `rest` may still become one. Only those that start with its first byte can.
    pub(super) fn at(&self, rest: &[u8]) -> Result<Option<(usize, Action)>, ()> {
        let Some(&b) = rest.first() else {
            return sequence_at(&self.list, rest);
        };
        let (start, end) = (self.from[usize::from(b)], self.from[usize::from(b) + 1]);
        sequence_at(&self.list[usize::from(start)..usize::from(end)], rest)
    }
}

/// Where the last look for a marker at an offset of the reply stopped, when more bytes could
/// still make one ([`Markers::at_memo`]): the offset, how many bytes were compared, and which
/// of the markers that start with its byte (bit `i`: the `i`th) matched them all.
#[derive(Debug, Default)]
pub(super) struct Partial {
    at: usize,
    seen: usize,
    left: u64,
}

impl Markers {
    /// [`Markers::at`] of `rest`, the reply from offset `at` (which only grows): the markers
    /// that matched the bytes the last look there saw (`memo`) are compared from where it
    /// stopped. A marker fed a byte at a time was compared from its start at every byte,
    /// against every marker that starts the same way (a `<`: most of them).
    pub(super) fn at_memo(
        &self,
        at: usize,
        rest: &[u8],
        memo: &mut Partial,
    ) -> Result<Option<(usize, Action)>, ()> {
        let Some(&b) = rest.first() else {
            return self.at(rest);
        };
        let (start, end) = (self.from[usize::from(b)], self.from[usize::from(b) + 1]);
        let list = &self.list[usize::from(start)..usize::from(end)];
        if list.is_empty() || list.len() > 64 {
            return sequence_at(list, rest);
        }
        let (mut left, seen) = if memo.at == at && memo.seen > 0 && memo.seen <= rest.len() {
            (memo.left, memo.seen)
        } else {
            (u64::MAX >> (64 - list.len()), 0)
        };
        // Those that still match (each matched the bytes seen before), then, as
        // `sequence_at` decides, the first (longest) of them that is whole, unless one before
        // it may still come.
        let mut partial = false;
        let mut found = None;
        let mut bits = left;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let (m, tag) = list[i];
            let upto = m.len().min(rest.len());
            // A byte at a time, as in `sequence_at` (most calls compare one byte).
            if seen < upto
                && m[seen..upto]
                    .iter()
                    .zip(&rest[seen..upto])
                    .any(|(a, b)| a != b)
            {
                left &= !(1 << i);
            } else if rest.len() < m.len() {
                partial |= found.is_none();
            } else if found.is_none() {
                found = Some((m.len(), tag));
            }
        }
        if partial {
            *memo = Partial {
                at,
                seen: rest.len(),
                left,
            };
            return Err(());
        }
        Ok(found)
    }
}

/// Which of `list`'s byte sequences (longest first) is at the start of `rest`: `Ok(Some)` with
/// its length and tag when one is there in full, `Err` when `rest` may still become one (a
/// prefix of one, and no longer one whole), `Ok(None)` when none can.
pub(super) fn sequence_at<M: AsRef<[u8]>, T: Copy>(
    list: &[(M, T)],
    rest: &[u8],
) -> Result<Option<(usize, T)>, ()> {
    let mut partial = false;
    for (m, tag) in list {
        let m = m.as_ref();
        // Compared a byte at a time: markers are short and most differ within a few
        // bytes (a call to memcmp per marker cost more, with the start of a marker
        // looked at again at every byte of a small chunk).
        let common = m.iter().zip(rest).take_while(|(a, b)| a == b).count();
        if common < m.len().min(rest.len()) {
            continue;
        }
        if rest.len() >= m.len() {
            return if partial {
                Err(())
            } else {
                Ok(Some((m.len(), *tag)))
            };
        }
        partial = true;
    }
    if partial { Err(()) } else { Ok(None) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For the markers of every format (and of all at once), texts that are, begin with, or
    /// part from a marker (or two that share a start), each looked at as it grows a byte at a
    /// time: `at_memo` finds what `at` finds at every length.
    #[test]
    fn at_memo_finds_what_at_finds_as_the_text_grows() {
        let formats = std::iter::once(None).chain(TABLE.iter().map(|spec| Some(spec.name)));
        let mut looks = 0;
        for format in formats {
            let markers = Markers::new(format);
            let mut texts: Vec<Vec<u8>> = Vec::new();
            for (m, _) in &markers.list {
                for (n, _) in &markers.list {
                    // One marker, then another (or its own bytes again) from each byte on.
                    for cut in 1..=m.len() {
                        let mut text = m[..cut].to_vec();
                        text.extend_from_slice(n);
                        texts.push(text);
                    }
                }
                let mut text = m.to_vec();
                text.push(b'x');
                texts.push(text);
            }
            for text in &texts {
                let mut memo = Partial::default();
                // Offset 7 stands for where in the reply the text starts.
                for len in 1..=text.len() {
                    let rest = &text[..len];
                    let (a, b) = (markers.at(rest), markers.at_memo(7, rest, &mut memo));
                    let same = match (a, b) {
                        (Ok(Some((x, _))), Ok(Some((y, _)))) => x == y,
                        (Ok(None), Ok(None)) | (Err(()), Err(())) => true,
                        _ => false,
                    };
                    assert!(same, "{format:?} {:?}", String::from_utf8_lossy(rest));
                    looks += 1;
                    if b.is_ok() {
                        // The scan moves on from the offset.
                        break;
                    }
                }
            }
        }
        assert!(looks > 1000, "{looks}");
    }
}
