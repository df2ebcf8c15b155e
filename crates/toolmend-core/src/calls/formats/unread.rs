//! Which markers no call could be read from are errors: not one inside a span a format read
//! calls from (that format's markup), not a wrapper around another format's calls (it held
//! them), and not one overlapping a marker already taken as an error.
//!
//! Each question is answered from spans indexed once, in a logarithmic search: asking every
//! marker against every span made a reply of many such markers quadratic (250,000 repeated
//! GigaChat markers, 10 MB: 50 s; bench/HISTORY.md).

use std::collections::BTreeSet;
use std::ops::Range;

/// The spans the formats read calls from, each with the format that read it.
pub(super) struct ReadSpans<'f> {
    /// Sorted by start.
    spans: Vec<(Range<usize>, &'f str)>,
    /// `reach[i]`: the greatest end of `spans[..=i]`.
    reach: Vec<usize>,
    /// `least[i]`: the least end of `spans[i..]` and its format, and the least end of those
    /// of `spans[i..]` read by another format than that one (`usize::MAX` for none).
    least: Vec<(usize, &'f str, usize)>,
}

impl<'f> ReadSpans<'f> {
    pub(super) fn new(read_by: &[(&'f str, Range<usize>)]) -> Self {
        let mut spans: Vec<(Range<usize>, &'f str)> =
            read_by.iter().map(|(by, c)| (c.clone(), *by)).collect();
        spans.sort_by_key(|(c, _)| c.start);
        let reach = spans
            .iter()
            .scan(0, |most, (c, _)| {
                *most = c.end.max(*most);
                Some(*most)
            })
            .collect();
        let mut least = vec![(usize::MAX, "", usize::MAX); spans.len()];
        let mut best = (usize::MAX, "", usize::MAX);
        for (i, (c, by)) in spans.iter().enumerate().rev() {
            let (end, format, other) = best;
            best = if c.end < end {
                // The old least becomes the least of another format when this one's differs.
                (c.end, *by, if *by != format { end } else { other })
            } else if *by != format {
                (end, format, other.min(c.end))
            } else {
                best
            };
            least[i] = best;
        }
        ReadSpans {
            spans,
            reach,
            least,
        }
    }

    /// Whether the marker at `span`, found by format `name`, is inside a span a format read
    /// (starts in it), or holds whole a span another format read.
    pub(super) fn hold(&self, name: &str, span: &Range<usize>) -> bool {
        let starting_before = self.spans.partition_point(|(c, _)| c.start <= span.start);
        if starting_before > 0 && self.reach[starting_before - 1] > span.start {
            return true;
        }
        let from = self.spans.partition_point(|(c, _)| c.start < span.start);
        let Some(&(end, format, other)) = self.least.get(from) else {
            return false;
        };
        (if format != name { end } else { other }) <= span.end
    }
}

/// The spans already taken as errors, none overlapping another.
#[derive(Default)]
pub(super) struct Taken(BTreeSet<(usize, usize)>);

impl Taken {
    /// Takes `span` unless it overlaps one taken before; whether it was taken.
    pub(super) fn take(&mut self, span: &Range<usize>) -> bool {
        // Spans that do not overlap, sorted by start, are sorted by end too: the last one
        // starting before `span` ends has the furthest end of all those.
        let overlaps = self
            .0
            .range(..(span.end, 0))
            .next_back()
            .is_some_and(|&(_, end)| span.start < end);
        if !overlaps {
            self.0.insert((span.start, span.end));
        }
        !overlaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `hold` and `take` answer is what a scan over every span answers (the rules as
    /// they were written before the index), on random spans of three formats, some empty.
    #[test]
    fn answers_as_a_scan_of_every_span() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        let formats = ["a", "b", "c"];
        for _ in 0..400 {
            let room = 2 + next(40);
            let span = |next: &mut dyn FnMut(usize) -> usize| {
                let start = next(room);
                start..start + next(room / 2 + 1)
            };
            let read_by: Vec<(&str, Range<usize>)> = (0..next(8))
                .map(|_| (formats[next(3)], span(&mut next)))
                .collect();
            let unread: Vec<(&str, Range<usize>)> = (0..next(12))
                .map(|_| (formats[next(3)], span(&mut next)))
                .collect();
            let read = ReadSpans::new(&read_by);
            let mut taken = Taken::default();
            let mut errors: Vec<Range<usize>> = Vec::new();
            for (name, span) in &unread {
                let inside = read_by.iter().any(|(by, c)| {
                    (c.start <= span.start && span.start < c.end)
                        || (by != name && span.start <= c.start && c.end <= span.end)
                });
                assert_eq!(read.hold(name, span), inside, "{read_by:?} {name} {span:?}");
                if inside {
                    continue;
                }
                let again = errors
                    .iter()
                    .any(|s| s.start < span.end && span.start < s.end);
                assert_eq!(taken.take(span), !again, "{errors:?} {span:?}");
                if !again {
                    errors.push(span.clone());
                }
            }
        }
    }
}
