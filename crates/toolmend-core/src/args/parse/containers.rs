//! Opening, continuing and closing arrays and objects: commas, closers, ellipses and the
//! nesting stack, where most structural repairs are decided.

use super::keys::index_hash;
use super::numbers::lone_sign_len;
use super::{HOLE, Parser, Quote};
use crate::args::locate::json_extent;
use crate::args::nesting::Container;
use crate::error::{Code, Error};
use crate::repair::RepairKind;

impl<'a> Parser<'a> {
    pub(super) fn open(&mut self, kind: Container, at: usize) -> Result<(), Error> {
        self.push_frame(kind, at, false)?;
        self.tree_open(kind, self.sink.out.len());
        self.sink.out.push(match kind {
            Container::Array => b'[',
            Container::Object => b'{',
        });
        Ok(())
    }

    /// Opens again the container of `kind` that was closed too early by the bracket at
    /// `bracket` (`{"a": 1}, "b": 2}`, `{"a": [1], [2]}`): the bracket is taken out of the
    /// output and the container goes on where it left off.
    pub(super) fn reopen(&mut self, kind: Container, bracket: usize) -> Result<(), Error> {
        self.fix(RepairKind::ExtraBracket, bracket)?;
        self.sink.out.pop();
        // `{}, "b": 2}`: an empty container has no member for a comma to follow.
        let empty = matches!(self.sink.out.last(), Some(b'{' | b'['));
        self.push_frame(kind, bracket, !empty)?;
        self.tree_reopen(kind);
        Ok(())
    }

    /// A string element followed by a colon at `colon`. After other elements of an array that
    /// is a member's value (`{"a": [1, 2 "b": 3}`), the array's `]` was left out and the string
    /// is the object's next key; otherwise (`["key": "value"}]`) an object's `{` was left out
    /// before it (json_repair's readings of both).
    #[cold]
    fn member_in_array(&mut self, colon: usize) -> Result<bool, Error> {
        let first = matches!(
            self.sink.out.get(self.element_out.wrapping_sub(1)),
            Some(b'[')
        );
        if first || self.sink.scratch.nesting.parent() != Some(Container::Object) {
            return self.object_from_element(colon);
        }
        let at = self.element_at;
        // `[1, 2 "b": 3`: it was not a comma that was missing before the string.
        if self
            .sink
            .repairs
            .last()
            .is_some_and(|r| r.kind == RepairKind::MissingComma && r.offset == Some(at))
        {
            self.sink.repairs.pop();
        }
        self.fix(RepairKind::MissingBracket, at)?;
        let key = self.sink.out.split_off(self.element_out);
        let comma = self.sink.out.pop();
        debug_assert_eq!(comma, Some(b','), "the comma before a later element");
        self.close_frame();
        if self.sink.scratch.nesting.add_member() {
            self.sink.out.push(b',');
        }
        let start = self.sink.out.len();
        self.sink.out.extend_from_slice(&key);
        self.note_key(start, at, true);
        self.sink.out.push(b':');
        self.pos = colon + 1;
        Ok(true)
    }

    /// Makes the string element just written the first key of an object opened before it,
    /// whose `{` was left out; the colon is at `colon`. Returns `true`: a value comes next.
    fn object_from_element(&mut self, colon: usize) -> Result<bool, Error> {
        let at = self.element_at;
        self.push_frame(Container::Object, at, true)?;
        self.fix(RepairKind::MissingBracket, at)?;
        let start = self.element_out;
        self.tree_open(Container::Object, start);
        self.sink.out.insert(start, b'{');
        self.note_key(start + 1, at, true);
        self.sink.out.push(b':');
        self.pos = colon + 1;
        Ok(true)
    }

    /// Opens a level for a container whose bracket is (or would be) at `open`, unless that
    /// goes past `--max-nesting`.
    fn push_frame(&mut self, kind: Container, open: usize, nonempty: bool) -> Result<(), Error> {
        if self.sink.scratch.nesting.depth() >= self.max_nesting {
            return Err(Error::at(
                Code::TooDeep,
                open,
                format_args!("arrays and objects nested deeper than {}", self.max_nesting),
            ));
        }
        let keys_base = self.sink.scratch.keys.len();
        self.sink
            .scratch
            .nesting
            .push(kind, open, nonempty, keys_base);
        match kind {
            Container::Array => self.open_arrays += 1,
            Container::Object => self.open_objects += 1,
        }
        Ok(())
    }

    pub(super) fn top(&self) -> Container {
        self.sink
            .scratch
            .nesting
            .top()
            .map_or(Container::Array, |level| level.kind())
    }

    /// After `{` or a comma in an object: reads the next key and its colon (`true`), or the
    /// closing brace (`false`). `comma` is where the comma before it was, if any.
    pub(super) fn begin_member(&mut self, mut comma: Option<usize>) -> Result<bool, Error> {
        loop {
            let Some((at, byte)) = self.next_item(b'}', &mut comma)? else {
                return Ok(false);
            };
            match byte {
                b'[' if !self.strict && comma.is_some() && self.array_closed_early(at) => {
                    // `{"a": [1, 2], [3, 4], "b": 5}`: an array where a key should be, after
                    // a member whose value is an array: that array was closed too early, and
                    // its elements go on (json_repair's reading; it keeps every element).
                    let comma = comma.expect("checked above");
                    let bracket = self.src[..comma].trim_ascii_end().len() - 1;
                    self.reopen(Container::Array, bracket)?;
                    self.pos = at + 1;
                    return self.begin_element(None);
                }
                b'{' if !self.strict && self.object_in_array() => {
                    // `[{"i":1,{"i":2}]`: the next element starts before the object closed.
                    if let Some(comma) = comma {
                        self.fix(RepairKind::TrailingComma, comma)?;
                    }
                    self.fix(RepairKind::MissingBracket, at)?;
                    self.close_frame();
                    return Ok(false);
                }
                b'{' if !self.strict => {
                    // `{"a": 1, {"b": 2}}`: a brace where a key should be; its members are the
                    // object's own (json_repair's reading), and the brace that closes them
                    // closes the object.
                    self.fix(RepairKind::ExtraBracket, at)?;
                    self.pos += 1;
                }
                b'[' if !self.strict => {
                    // `{"a": 1, ["x"], "b": 2}`: an array where a key should be has no key to
                    // be the value of: it is left out, and recorded.
                    let end = json_extent(self.src, at).unwrap_or(self.src.len());
                    self.note_prose(at, end);
                    self.pos = end;
                }
                _ => {
                    self.key()?;
                    self.colon()?;
                    return Ok(true);
                }
            }
        }
    }

    /// After `[` or a comma in an array: positions at the next element (`true`), or reads the
    /// closing bracket (`false`).
    pub(super) fn begin_element(&mut self, mut comma: Option<usize>) -> Result<bool, Error> {
        loop {
            let Some((at, byte)) = self.next_item(b']', &mut comma)? else {
                return Ok(false);
            };
            match byte {
                b')' if !self.strict => {
                    // `()`, `(1,)`: a tuple, empty or with its comma.
                    self.close_paren(at, false)?;
                    return Ok(false);
                }
                b'-' | b'+' if !self.strict && lone_sign_len(&self.src[at..]).is_some() => {
                    // `[1, -]`, `[1, -` cut off: a sign with no digits is no number; the
                    // element is left out (json_repair's reading; not jsonrepair's `-0`).
                    self.fix(RepairKind::NumberFormat, at)?;
                    self.pos = at + lone_sign_len(&self.src[at..]).unwrap_or(1);
                    self.skip_ws()?;
                    if self.peek() == Some(b',') {
                        self.pos += 1;
                    }
                    comma = None;
                }
                _ => {
                    if self.sink.scratch.nesting.add_element() {
                        self.sink.out.push(b',');
                    }
                    self.element_out = self.sink.out.len();
                    self.element_at = at;
                    return Ok(true);
                }
            }
        }
    }

    /// What objects and arrays share after their opener or a comma: skips white space, stray
    /// commas and ellipses (updating `comma`, where the last comma was), and closes the
    /// container at its own `close` (a comma right before it was a trailing comma), at a
    /// closer of the other kind that closes it (see [`Parser::closer`]) or at the end of the
    /// input (`None`). Else the offset and byte of what comes next.
    #[inline(always)]
    fn next_item(
        &mut self,
        close: u8,
        comma: &mut Option<usize>,
    ) -> Result<Option<(usize, u8)>, Error> {
        loop {
            self.skip_ws()?;
            let at = self.pos;
            match self.peek() {
                None => {
                    self.close_at_end()?;
                    return Ok(None);
                }
                Some(byte) if byte == close => {
                    if let Some(comma) = *comma {
                        self.fix(RepairKind::TrailingComma, comma)?;
                    }
                    self.pos += 1;
                    self.close_frame();
                    return Ok(None);
                }
                Some(b',') if !self.strict => {
                    self.fix(RepairKind::ExtraComma, at)?;
                    self.pos += 1;
                    *comma = Some(at);
                }
                Some(b'.' | 0xE2) if !self.strict && self.ellipsis_at(at).is_some() => {
                    *comma = self.skip_ellipsis(at)?;
                }
                Some(byte @ (b'}' | b']')) if !self.strict => {
                    // The other kind's closer (the own one was matched above).
                    if self.closer(byte, at)? {
                        return Ok(None);
                    }
                }
                Some(byte) => return Ok(Some((at, byte))),
            }
        }
    }

    /// The length of an ellipsis (`...` or `…`) at `at`, if one is there.
    pub(super) fn ellipsis_at(&self, at: usize) -> Option<usize> {
        let s = &self.src[at..];
        if s.starts_with(b"...") {
            Some(3 + s[3..].iter().take_while(|&&b| b == b'.').count())
        } else if s.starts_with("\u{2026}".as_bytes()) {
            Some(3)
        } else {
            None
        }
    }

    /// Skips `...` (or `…`) standing for elided items, and the comma after it.
    fn skip_ellipsis(&mut self, at: usize) -> Result<Option<usize>, Error> {
        self.fix(RepairKind::Ellipsis, at)?;
        // `(..., 1)` is a tuple, not `1` in parentheses.
        self.sink.scratch.nesting.mark_many();
        self.pos = at + self.ellipsis_at(at).unwrap_or(3);
        self.skip_ws()?;
        if self.peek() == Some(b',') {
            self.pos += 1;
            return Ok(None);
        }
        Ok(None)
    }

    /// After a value inside a container: reads the comma and what follows it (`true` when a
    /// value is expected next), or the closing bracket (`false`).
    pub(super) fn after_value(&mut self) -> Result<bool, Error> {
        loop {
            self.skip_ws()?;
            let at = self.pos;
            let top = self.top();
            match self.peek() {
                None => {
                    self.close_at_end()?;
                    return Ok(false);
                }
                Some(b',') => {
                    self.pos += 1;
                    return match top {
                        Container::Object => self.begin_member(Some(at)),
                        Container::Array => self.begin_element(Some(at)),
                    };
                }
                Some(c @ (b'}' | b']')) => {
                    if self.closer(c, at)? {
                        return Ok(false);
                    }
                }
                Some(b')') if !self.strict && top == Container::Array => {
                    self.close_paren(at, true)?;
                    return Ok(false);
                }
                Some(b'.' | 0xE2) if !self.strict && self.ellipsis_at(at).is_some() => {
                    // `[1, 2 ...]`: the elision stands where a comma would.
                    self.skip_ellipsis(at)?;
                }
                Some(b':') if !self.strict && self.string_element_ended() => {
                    // A member where an element should be.
                    return self.member_in_array(at);
                }
                Some(b'{') if !self.strict && self.object_in_array() => {
                    // `[{"i":1{"i":2}]`: the next element starts before the object closed.
                    self.fix(RepairKind::MissingBracket, at)?;
                    self.close_frame();
                    return Ok(false);
                }
                Some(b'"')
                    if !self.strict
                        && matches!(
                            self.src.get(self.skip_spaces_from(at + 1)),
                            None | Some(b',' | b'}' | b']')
                        ) =>
                {
                    // `{"n": 12345", "m": 1}`: a quote closing a value that never opened one.
                    self.note_prose(at, at + 1);
                    self.pos = at + 1;
                }
                Some(b'+') if !self.strict => {
                    // `{"a": 1 + 2}`, `{"msg": "Hi " + name}`: an expression. Its first operand
                    // is the value; the rest cannot be evaluated and is recorded, not made a key.
                    let closer = match top {
                        Container::Object => b'}',
                        Container::Array => b']',
                    };
                    let rest = &self.src[at..];
                    let len = rest
                        .iter()
                        .position(|&b| b == b',' || b == closer || b == b'\n')
                        .unwrap_or(rest.len());
                    self.note_prose(at, at + len);
                    self.pos = at + len;
                }
                Some(_)
                    if !self.strict
                        && self.sink.out.last() == Some(&b'"')
                        && self.words_end_object(at).is_some() =>
                {
                    // `{"b": "data" AAAA }`: words after a string, up to the brace, are not a
                    // member (no colon): they are left out, and recorded (json_repair drops
                    // them too).
                    let end = self.words_end_object(at).unwrap_or(at);
                    self.note_prose(at, end);
                    self.pos = end;
                }
                Some(_)
                    if !self.strict && top == Container::Object && self.scalar_ends_item(at) =>
                {
                    // `{"b": "x" true}`: a second value where a member should be.
                    let len = self.src[at..]
                        .iter()
                        .position(|&b| matches!(b, b',' | b'}' | b']' | b'\n'))
                        .unwrap_or(self.src.len() - at);
                    self.note_prose(at, at + len);
                    self.pos = at + len;
                }
                Some(_) if !self.strict && self.starts_value(at) => {
                    self.fix(RepairKind::MissingComma, at)?;
                    return match top {
                        Container::Object => self.begin_member(None),
                        Container::Array => self.begin_element(None),
                    };
                }
                Some(_) => {
                    return Err(self.invalid(
                        at,
                        match top {
                            Container::Object => "expected ',' or '}'",
                            Container::Array => "expected ',' or ']'",
                        },
                    ));
                }
            }
        }
    }

    pub(super) fn starts_value(&self, at: usize) -> bool {
        let s = &self.src[at..];
        match s[0] {
            b'{' | b'[' | b'"' | b'\'' | b'-' | b'+' | b'_' | b'$' => true,
            b if b.is_ascii_alphanumeric() => true,
            _ => Quote::opening(s).is_some(),
        }
    }

    /// Handles a closing bracket `c` at `at`. Returns `true` when it closed the open
    /// container, `false` when it was a stray bracket that was skipped.
    fn closer(&mut self, c: u8, at: usize) -> Result<bool, Error> {
        // `}` ends a Python set read as an array.
        if c == b'}'
            && self.top() == Container::Array
            && self
                .sink
                .scratch
                .nesting
                .top()
                .is_some_and(|level| level.brace())
        {
            self.pos += 1;
            self.close_frame();
            return Ok(true);
        }
        let wanted = if c == b'}' {
            Container::Object
        } else {
            Container::Array
        };
        if self.top() == wanted {
            self.pos += 1;
            self.close_frame();
            return Ok(true);
        }
        let open_of_kind = match wanted {
            Container::Object => self.open_objects,
            Container::Array => self.open_arrays,
        };
        if open_of_kind > 0 {
            self.fix(RepairKind::MismatchedBracket, at)?;
            let parent_is_object = self.sink.scratch.nesting.parent() == Some(Container::Object);
            if wanted == Container::Object && parent_is_object && self.key_follows(at + 1) {
                // `{"a": [1, 2}, "b": 4}`: more members follow, so the brace was written for
                // the array's `]` (json_repair's reading; closing the object too would leave
                // `"b"` outside it).
                self.pos += 1;
            }
            // Otherwise `{"a": [1, 2}`: the brace closes the array it skipped, then the object.
            self.close_frame();
            Ok(true)
        } else {
            self.fix(RepairKind::ExtraBracket, at)?;
            self.pos += 1;
            Ok(false)
        }
    }

    /// Whether the `{` at `at`, a value inside a container, opens a Python set literal
    /// (`{1, 2, 3}`, `{"a", "b"}`, `{3}`): members of one token each (a string or a bare
    /// word), separated by commas, no colon, nothing nested, closed by `}` within a few KiB; a
    /// lone string (`{"x"}`) is a key missing its value, as two tokens with no comma between
    /// (`{"x" 1}`) are a missing colon, and a first string with other values after it
    /// (`{"a", 1}`) is a pair with a comma for its colon. Only the set's own bytes are looked at, so reading
    /// stays linear.
    pub(super) fn set_literal(&self, at: usize) -> bool {
        if self.strict || self.sink.scratch.nesting.depth() == 0 {
            return false;
        }
        let src = self.src;
        let limit = src.len().min(at + 4096);
        let (mut members, mut strings) = (0, 0);
        let mut first_string = false;
        // Whether a member was read since the last comma.
        let mut after_member = false;
        let mut i = at + 1;
        while i < limit {
            match src[i] {
                b' ' | b'\t' | b'\n' | b'\r' => i += 1,
                b',' if after_member => {
                    after_member = false;
                    i += 1;
                }
                // Strings with other values after a first string are pairs written with
                // commas for colons (`{"a", 1, "b", 2}`), not a set.
                b'}' => {
                    let pairs = first_string && strings < members;
                    return !pairs && (members > 1 || (members == 1 && strings == 0));
                }
                _ if after_member => return false,
                q @ (b'"' | b'\'') => {
                    i += 1;
                    while i < limit && src[i] != q {
                        i += if src[i] == b'\\' { 2 } else { 1 };
                    }
                    if i >= limit {
                        return false;
                    }
                    i += 1;
                    first_string |= members == 0;
                    (members, strings, after_member) = (members + 1, strings + 1, true);
                }
                b if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.' | b'_') => {
                    let word = i;
                    while i < limit
                        && (src[i].is_ascii_alphanumeric()
                            || matches!(src[i], b'-' | b'+' | b'.' | b'_'))
                    {
                        i += 1;
                    }
                    // A number or a literal: a bare name is no value of a set.
                    let literal = matches!(
                        &src[word..i],
                        b"true" | b"false" | b"null" | b"True" | b"False" | b"None"
                    );
                    if !(literal || matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.')) {
                        return false;
                    }
                    (members, after_member) = (members + 1, true);
                }
                _ => return false,
            }
        }
        false
    }

    /// `)` closing the open array (right `after_value`, or after `(` or a comma): the end of
    /// a tuple, or (`[1, 2)`) a mismatched bracket. As in Python, parentheses around one value
    /// with no comma are no tuple: `(1)` is `1`, `({"a": 1})` the object; `(1,)` and `()` are
    /// tuples.
    fn close_paren(&mut self, at: usize, after_value: bool) -> Result<(), Error> {
        let level = self.sink.scratch.nesting.top();
        let paren = level.is_some_and(|level| level.paren());
        if !paren {
            self.fix(RepairKind::MismatchedBracket, at)?;
        }
        self.pos = at + 1;
        if paren && after_value && !level.is_some_and(|level| level.many()) {
            self.unwrap_paren();
        } else {
            self.close_frame();
        }
        Ok(())
    }

    /// Closes the open array of a `(x)` as `x`: its `[` becomes a [`HOLE`] (taken out when the
    /// value ends, so that no offset into the output moves now), no `]` is written, and the
    /// value built is its one element.
    #[cold]
    #[inline(never)]
    fn unwrap_paren(&mut self) {
        let frame = self.sink.scratch.nesting.pop().expect("an open container");
        debug_assert!(frame.level.paren(), "a tuple's array");
        self.tree_unwrap();
        self.open_arrays -= 1;
        let scratch = &mut self.sink.scratch;
        let bracket = scratch.paren_outs.pop().expect("the tuple's bracket");
        self.sink.out[bracket] = HOLE;
        scratch.holes += 1;
    }

    /// The input ended with containers open: close them all (recorded once).
    fn close_at_end(&mut self) -> Result<(), Error> {
        if self.strict {
            return Err(self.invalid(self.src.len(), "unexpected end of input"));
        }
        let open = self.sink.scratch.nesting.open().unwrap_or(self.pos);
        self.fix(RepairKind::UnterminatedContainer, open)?;
        while !self.sink.scratch.nesting.is_empty() {
            self.close_frame();
        }
        Ok(())
    }

    pub(super) fn close_frame(&mut self) {
        let frame = self.sink.scratch.nesting.pop().expect("an open container");
        if frame.level.paren() {
            self.sink.scratch.paren_outs.pop();
        }
        self.tree_close(frame.level.kind(), frame.keys_base);
        match frame.level.kind() {
            Container::Array => {
                self.open_arrays -= 1;
                self.sink.out.push(b']');
            }
            Container::Object => {
                self.open_objects -= 1;
                // The index is cleared first: its entries are found by the keys' text at the
                // offsets in `keys`, which merging duplicates rewrites (an object of more than
                // LINEAR_KEYS keys with a duplicate sliced past the output, or left stale
                // entries for the next object at this depth).
                if frame.level.indexed() {
                    let depth = self.sink.scratch.nesting.depth() + 1;
                    for entry in &self.sink.scratch.keys[frame.keys_base..] {
                        let hash = index_hash(&self.sink.out[entry.start..entry.end]);
                        self.sink.scratch.key_index.remove(&(depth, hash));
                    }
                }
                if frame.level.has_duplicate() {
                    self.merge_duplicates(frame.keys_base);
                }
                self.sink.scratch.keys.truncate(frame.keys_base);
                if frame.keys_base <= self.sink.scratch.unplaced_base {
                    self.sink.scratch.unplaced = 0;
                }
                self.sink.out.push(b'}');
            }
        }
    }
}
