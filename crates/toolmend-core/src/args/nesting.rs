//! The stack of arrays and objects still open while the parser reads a document.
//!
//! An input nested millions deep (`[[[[…` never closed) holds one level per bracket for as long
//! as it is read, so a level is kept to one or a few bytes: a byte of flags, after the distance
//! from the enclosing container's opening bracket as a variable-length number (one byte under
//! 128), which is left out when the brackets are adjacent (`[[`). At 24 bytes a level (a struct per frame), 100 MB of brackets took 2.4 GB, and the
//! time went into the kernel zeroing those pages. The offset of a container's bracket is only
//! ever needed for the innermost one, which is kept decoded.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Container {
    Array,
    Object,
}

/// The flags of one open container (never the high bit: see [`Nesting::pop`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Level(u8);

impl Level {
    const OBJECT: u8 = 1;
    /// An array opened by `(` (a Python tuple): `)` closes it.
    const PAREN: u8 = 2;
    /// A member or element has been written.
    const NONEMPTY: u8 = 4;
    /// An object in which a key was repeated.
    const DUPLICATE: u8 = 8;
    /// An object whose keys are also in the parser's hash index (a large object).
    const INDEXED: u8 = 16;
    /// An array given a second element (a tuple's comma came): [`Level::INDEXED`]'s bit,
    /// which no array has.
    const MANY: u8 = 16;
    /// The enclosing container is an object.
    const IN_OBJECT: u8 = 32;
    /// The bracket is right after the enclosing one's: no distance is stored.
    const ADJACENT: u8 = 64;

    pub(crate) fn kind(self) -> Container {
        if self.0 & Level::OBJECT != 0 {
            Container::Object
        } else {
            Container::Array
        }
    }

    /// An array opened by `{` (a Python set): `}` closes it. No bit is free, so it is
    /// [`Level::PAREN`] with an object's [`Level::DUPLICATE`], which no tuple has.
    pub(crate) fn brace(self) -> bool {
        const BRACE: u8 = Level::PAREN | Level::DUPLICATE;
        self.0 & (Level::OBJECT | BRACE) == BRACE
    }

    pub(crate) fn paren(self) -> bool {
        self.0 & Level::PAREN != 0 && !self.brace()
    }

    /// An array that has had more than one element.
    pub(crate) fn many(self) -> bool {
        self.0 & (Level::OBJECT | Level::MANY) == Level::MANY
    }

    pub(crate) fn has_duplicate(self) -> bool {
        self.0 & Level::DUPLICATE != 0
    }

    pub(crate) fn indexed(self) -> bool {
        self.0 & Level::INDEXED != 0
    }
}

/// The open containers, innermost last.
#[derive(Default)]
pub(crate) struct Nesting {
    /// Per level: the varint distance from the parent's bracket (unless adjacent), then the
    /// flag byte.
    bytes: Vec<u8>,
    depth: usize,
    /// Offset of the innermost container's opening bracket (0 when none is open).
    open: usize,
    /// For each open object, outermost first: where its keys start in the parser's key list.
    key_bases: Vec<usize>,
}

/// A container taken off the stack.
pub(crate) struct Closed {
    pub(crate) level: Level,
    /// Where an object's keys start in the parser's key list.
    pub(crate) keys_base: usize,
}

impl Nesting {
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.key_bases.clear();
        self.depth = 0;
        self.open = 0;
    }

    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.depth == 0
    }

    /// The innermost open container.
    #[inline]
    pub(crate) fn top(&self) -> Option<Level> {
        self.bytes.last().map(|&flags| Level(flags))
    }

    /// The kind of the container the innermost one is in, if any.
    pub(crate) fn parent(&self) -> Option<Container> {
        let in_object = self.top()?.0 & Level::IN_OBJECT != 0;
        match (self.depth, in_object) {
            (0 | 1, _) => None,
            (_, true) => Some(Container::Object),
            (_, false) => Some(Container::Array),
        }
    }

    /// The offset of the innermost open container's bracket.
    pub(crate) fn open(&self) -> Option<usize> {
        (self.depth > 0).then_some(self.open)
    }

    /// Where the innermost object's keys start (0 when no object is open).
    pub(crate) fn keys_base(&self) -> usize {
        self.key_bases.last().copied().unwrap_or(0)
    }

    /// Opens a container whose bracket is at `open`; `nonempty` when it already has members
    /// (one reopened after being closed too early).
    #[inline]
    pub(crate) fn push(&mut self, kind: Container, open: usize, nonempty: bool, keys_base: usize) {
        let mut flags = 0;
        if self.top().is_some_and(|l| l.kind() == Container::Object) {
            flags |= Level::IN_OBJECT;
        }
        if kind == Container::Object {
            flags |= Level::OBJECT;
            self.key_bases.push(keys_base);
        }
        if nonempty {
            flags |= Level::NONEMPTY;
        }
        // Brackets only come later in the text, but wrapping keeps any order exact.
        let mut distance = (open as u64).wrapping_sub(self.open as u64);
        if distance == 1 && self.depth > 0 {
            self.bytes.push(flags | Level::ADJACENT);
        } else if distance < 0x80 {
            self.bytes.extend_from_slice(&[distance as u8, flags]);
        } else {
            while distance >= 0x80 {
                self.bytes.push(distance as u8 | 0x80);
                distance >>= 7;
            }
            self.bytes.extend_from_slice(&[distance as u8, flags]);
        }
        self.depth += 1;
        self.open = open;
    }

    /// Closes the innermost container.
    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<Closed> {
        let level = Level(self.bytes.pop()?);
        let end = self.bytes.len();
        let distance = if level.0 & Level::ADJACENT != 0 {
            1
        } else if end == 1 || self.bytes[end - 2] & 0x80 == 0 {
            // One byte (the one before it is the parent's flags, or nothing).
            let distance = self.bytes[end - 1];
            self.bytes.truncate(end - 1);
            u64::from(distance)
        } else {
            // The distance's last byte has the high bit clear, its earlier bytes have it set,
            // and the byte before them is the parent's flags (high bit clear) or nothing.
            let mut start = end - 1;
            while start > 0 && self.bytes[start - 1] & 0x80 != 0 {
                start -= 1;
            }
            let distance = self.bytes[start..end]
                .iter()
                .rev()
                .fold(0u64, |d, &b| d << 7 | u64::from(b & 0x7F));
            self.bytes.truncate(start);
            distance
        };
        self.depth -= 1;
        self.open = (self.open as u64).wrapping_sub(distance) as usize;
        let keys_base = match level.kind() {
            Container::Object => self.key_bases.pop().expect("an open object's keys"),
            Container::Array => 0,
        };
        Some(Closed { level, keys_base })
    }

    fn set(&mut self, flag: u8) {
        if let Some(flags) = self.bytes.last_mut() {
            *flags |= flag;
        }
    }

    /// Counts a member or element of the innermost container; whether it had one before.
    #[inline]
    pub(crate) fn add_member(&mut self) -> bool {
        match self.bytes.last_mut() {
            Some(flags) => {
                let before = *flags & Level::NONEMPTY != 0;
                *flags |= Level::NONEMPTY;
                before
            }
            None => false,
        }
    }

    /// Counts an element of the innermost container, an array; whether it had one before.
    /// Its second marks it [`Level::MANY`] (`NONEMPTY` shifted there: no branch).
    #[inline]
    pub(crate) fn add_element(&mut self) -> bool {
        const _: () = assert!(Level::NONEMPTY << 2 == Level::MANY);
        match self.bytes.last_mut() {
            Some(flags) => {
                let before = *flags & Level::NONEMPTY;
                *flags |= Level::NONEMPTY | before << 2;
                before != 0
            }
            None => false,
        }
    }

    /// Marks the innermost container [`Level::MANY`] if it is an array: items were elided
    /// in it (`(..., 1)`), so it holds more than one.
    pub(crate) fn mark_many(&mut self) {
        if self
            .top()
            .is_some_and(|level| level.kind() == Container::Array)
        {
            self.set(Level::MANY);
        }
    }

    pub(crate) fn mark_paren(&mut self) {
        self.set(Level::PAREN);
    }

    /// Marks the open array as opened by `{` (see [`Level::brace`]).
    pub(crate) fn mark_brace(&mut self) {
        self.set(Level::PAREN | Level::DUPLICATE);
    }

    pub(crate) fn mark_duplicate(&mut self) {
        self.set(Level::DUPLICATE);
    }

    pub(crate) fn mark_indexed(&mut self) {
        self.set(Level::INDEXED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_come_back_with_their_brackets_and_flags() {
        let mut nesting = Nesting::default();
        // Distances of none (adjacent), one byte, several bytes, the widest, and a bracket
        // before its parent's.
        let opens = [0, 1, 2, 300, 70_000, 70_001, 70_002, usize::MAX, 5, 5, 6];
        for (i, &open) in opens.iter().enumerate() {
            let kind = if i % 3 == 0 {
                Container::Object
            } else {
                Container::Array
            };
            nesting.push(kind, open, i % 2 == 1, i * 10);
            if i % 4 == 0 {
                nesting.mark_duplicate();
            }
        }
        assert_eq!(nesting.depth(), opens.len());
        for (i, &open) in opens.iter().enumerate().rev() {
            assert_eq!(nesting.open(), Some(open));
            let parent = (i > 0).then(|| match (i - 1) % 3 {
                0 => Container::Object,
                _ => Container::Array,
            });
            assert_eq!(nesting.parent(), parent);
            assert_eq!(nesting.add_member(), i % 2 == 1);
            let closed = nesting.pop().unwrap();
            assert_eq!(closed.level.kind() == Container::Object, i % 3 == 0);
            assert_eq!(closed.level.has_duplicate(), i % 4 == 0);
            if i % 3 == 0 {
                assert_eq!(closed.keys_base, i * 10);
            }
        }
        assert!(nesting.is_empty() && nesting.pop().is_none() && nesting.open().is_none());
    }

    #[test]
    fn a_level_of_adjacent_brackets_takes_one_byte() {
        let mut nesting = Nesting::default();
        for open in 0..1000 {
            nesting.push(Container::Array, open, false, 0);
        }
        // The first bracket's distance is from the start of the text.
        assert_eq!(nesting.bytes.len(), 1001);
        assert!(!nesting.add_member());
        assert!(nesting.add_member());
    }
}
