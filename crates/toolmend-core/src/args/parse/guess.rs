//! The look-ahead guesses that decide what a broken byte meant (a closing quote or an inner one,
//! the end of a value or prose). Each looks a bounded distance, so the parse stays linear.

use super::Parser;
use super::keys::is_bare_key_byte;
use crate::args::nesting::Container;

impl<'a> Parser<'a> {
    /// In an object, after a comma before `at`: whether the member before the comma has an
    /// array for its value, closed just before the comma.
    pub(super) fn array_closed_early(&self, at: usize) -> bool {
        let before = self.src[..at].trim_ascii_end();
        let Some(before) = before.strip_suffix(b",") else {
            return false;
        };
        before.trim_ascii_end().ends_with(b"]") && self.sink.out.last() == Some(&b']')
    }

    /// Whether the last key of the open object appeared earlier in it.
    pub(super) fn last_key_repeats(&self) -> bool {
        // Without a repeat noted no key is compared (nor looked at where it is not placed
        // yet: see `place_keys`).
        if !self
            .sink
            .scratch
            .nesting
            .top()
            .is_some_and(|level| level.has_duplicate())
        {
            return false;
        }
        let keys = &self.sink.scratch.keys[self.sink.scratch.nesting.keys_base()..];
        let Some((last, earlier)) = keys.split_last() else {
            return false;
        };
        let key = &self.sink.out[last.start..last.end];
        earlier
            .iter()
            .any(|e| &self.sink.out[e.start..e.end] == key)
    }

    /// Whether the open container is an object directly inside an array.
    pub(super) fn object_in_array(&self) -> bool {
        let nesting = &self.sink.scratch.nesting;
        nesting.top().map(|level| level.kind()) == Some(Container::Object)
            && nesting.parent() == Some(Container::Array)
    }

    /// Whether `, key:` follows at `at` (past spaces): a member of an object comes next.
    pub(super) fn key_follows(&self, at: usize) -> bool {
        let comma = self.skip_spaces_from(at);
        if self.src.get(comma) != Some(&b',') {
            return false;
        }
        let key = self.skip_spaces_from(comma + 1);
        let ahead = &self.src[key..(key + 128).min(self.src.len())];
        let end = match ahead.first() {
            Some(&q @ (b'"' | b'\'')) => ahead[1..].iter().position(|&b| b == q).map(|i| i + 2),
            Some(&b) if is_bare_key_byte(b) => ahead.iter().position(|&b| !is_bare_key_byte(b)),
            _ => None,
        };
        end.is_some_and(|end| self.src.get(self.skip_spaces_from(key + end)) == Some(&b':'))
    }

    /// Whether a quote that ends at `after` inside a double-quoted key is part of the key: no
    /// colon follows it, and a later quote with a colon after it comes before anything that
    /// ends a member. The look ahead is bounded.
    pub(super) fn key_quote_is_inner(&self, after: usize) -> bool {
        if self.src.get(self.skip_spaces_from(after)) == Some(&b':') {
            return false;
        }
        let end = (after + 64).min(self.src.len());
        for p in after..end {
            match self.src[p] {
                b'"' if self.src.get(self.skip_spaces_from(p + 1)) == Some(&b':') => return true,
                b',' | b':' | b'{' | b'}' | b'[' | b']' | b'\n' => return false,
                _ => {}
            }
        }
        false
    }

    /// Where a quoted key (`"b":`) starts after bare words at `at` (`COMMENT "b": 2`), if it
    /// does. The look ahead is bounded.
    pub(super) fn stray_words_before_key(&self, at: usize) -> Option<usize> {
        if self.strict || !is_bare_key_byte(self.src[at]) {
            return None;
        }
        let end = (at + 64).min(self.src.len());
        let mut p = at;
        while p < end && (is_bare_key_byte(self.src[p]) || self.src[p] == b' ') {
            p += 1;
        }
        let words = &self.src[at..p];
        (p < end && words.ends_with(b" ") && self.src[p] == b'"' && self.quoted_key_at(p))
            .then_some(p)
    }

    /// When the double quote at `quote` opens a member's key (`"b": ...`) and only spaces
    /// separate it from a comma in the string's unwritten text `src[run..quote]`: that comma.
    pub(super) fn unclosed_before_member(&self, run: usize, quote: usize) -> Option<usize> {
        if self.src[quote] != b'"' || self.top() != Container::Object {
            return None;
        }
        let before = self.src[run..quote].trim_ascii_end();
        if before.last() != Some(&b',') {
            return None;
        }
        let ahead = &self.src[quote + 1..(quote + 65).min(self.src.len())];
        let close = ahead.iter().position(|&b| b == b'"' || b == b'\n')?;
        let key = &ahead[..close];
        let is_key = ahead[close] == b'"'
            && !key.is_empty()
            && key
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let next = self.skip_spaces_from(quote + 1 + close + 1);
        (is_key && self.src.get(next) == Some(&b':')).then_some(run + before.len() - 1)
    }

    /// Whether the next line starts a member (`"key":`) of the open object or an element
    /// (`"text",`) of the open array. The look ahead is bounded.
    pub(super) fn item_follows(&self, newline: usize) -> bool {
        let ahead = &self.src[newline..(newline + 160).min(self.src.len())];
        let start = ahead.len() - ahead.trim_ascii_start().len();
        let Some(rest) = ahead[start..].strip_prefix(b"\"") else {
            return false;
        };
        let Some(close) = rest.iter().position(|&b| b == b'"' || b == b'\n') else {
            return false;
        };
        if rest[close] != b'"' || close == 0 {
            return false;
        }
        let next = rest[close + 1..].trim_ascii_start().first().copied();
        match self.sink.scratch.nesting.top().map(|level| level.kind()) {
            Some(Container::Object) => next == Some(b':'),
            Some(Container::Array) => matches!(next, None | Some(b',' | b']')),
            None => false,
        }
    }

    /// Whether a quote that ends at `after` is inside the string rather than closing it: it
    /// closes when what follows (past spaces) can follow a string. Valid JSON always closes.
    fn quote_is_inner(&self, after: usize) -> bool {
        let next = self.skip_spaces_from(after);
        match self.src.get(next) {
            None => false,
            // `"say "x"", ...`: of two quotes in a row, the second closes the string when
            // what follows it can follow a string; then the first is inside it.
            Some(b'"' | b'\'') => {
                let after_second = self.skip_spaces_from(next + 1);
                matches!(
                    self.src.get(after_second),
                    None | Some(b',' | b'}' | b']' | b':' | b'\n' | b'\r')
                )
            }
            // A value's string is never followed by a colon: `"{"inner": 1}"` holds one. In
            // an array, a string followed by a colon and a value is a key whose object lost its
            // `{` (`["key": "value"}]`), unless the string opened like JSON text.
            Some(b':') => !self.key_in_array(after - 1, next),
            // `"say "x", then "y""`: in an object, a comma must lead to a member; a bare word
            // that is not a key means the comma is the string's own.
            Some(b',') => self.prose_follows_comma(next + 1),
            Some(b'`') if self.src[next..].starts_with(b"```") => false,
            // `"[LINK]("https://x")"`: a parenthesis with a quote after it is text.
            Some(b')') => self.src.get(self.skip_spaces_from(next + 1)) == Some(&b'"'),
            Some(b'}' | b']' | b'\n' | b'\r' | b'+' | b'/' | b'#' | b';' | b'{' | b'[') => false,
            // `["a" 2]`, `{"b": "x" true}`: a whole number or literal that ends the item
            // means a comma is missing after a closed string; `"say "hi" there"` holds words,
            // but in an array `"a" b]` is two elements.
            Some(_) => !self.scalar_ends_item(next) && !self.bare_element_follows(next),
        }
    }

    /// Whether the value just written is a string element of the open array. (After a nested
    /// container, `element_out` is stale, but the output then ends with its bracket.)
    pub(super) fn string_element_ended(&self) -> bool {
        self.top() == Container::Array
            && self.sink.out.get(self.element_out) == Some(&b'"')
            && self.sink.out.last() == Some(&b'"')
    }

    /// Whether the string closed by the quote at `quote`, followed by a colon at `colon`, is an
    /// array element that is really a key: it is directly in an array, it is the string's first
    /// quote, its text does not open like JSON, and a value follows the colon.
    #[cold]
    fn key_in_array(&self, quote: usize, colon: usize) -> bool {
        if self.top() != Container::Array || self.sink.scratch.nesting.is_empty() {
            return false;
        }
        let open = self.element_at;
        let text = &self.src[open + 1..quote];
        let value = self.skip_spaces_from(colon + 1);
        matches!(self.src.get(open), Some(b'"' | b'\''))
            && !text.is_empty()
            && memchr::memchr3(b'"', b'{', b'[', text).is_none()
            && !text.contains(&b'\\')
            && value < self.src.len()
            && self.starts_value(value)
    }

    /// In an object, where bare words after a space at `at` end when they run to its closing
    /// brace with no colon or quote among them. The look ahead is bounded.
    pub(super) fn words_end_object(&self, at: usize) -> Option<usize> {
        if self.top() != Container::Object || self.sink.scratch.nesting.is_empty() {
            return None;
        }
        let at = self.after_space(at)?;
        let (ahead, len) = self.words_at(at);
        let words = ahead[..len].trim_ascii_end();
        (!words.is_empty() && ahead.get(len) == Some(&b'}')).then_some(at + words.len())
    }

    /// Whether the quote of a value's string that ends at `after` closes it. `first`: no quote
    /// inside the string came before it; only then are words after it read as the next element
    /// (`["value1" value2", "value3"]`) or as stray text before the object's brace (`"data"
    /// AAAA }`), since after an inner quote (`"say "hi" there"`) they are the string's own.
    pub(super) fn value_quote_closes(&self, after: usize, first: bool) -> bool {
        !self.quote_is_inner(after)
            || first
                && (self.words_end_object(after).is_some()
                    || self.quoted_word_follows(after)
                    || self.bare_key_follows(after))
    }

    /// In an object, whether an unquoted key and its colon follow at `at` after a space:
    /// `{b: 'hello' c: True}` is two members with the comma left out. Only for a string's first
    /// quote (after an inner one, `"say "hi" note: x"`, the words are the string's own); a
    /// scheme (`http://`) is text. The look ahead is bounded.
    fn bare_key_follows(&self, at: usize) -> bool {
        if self.top() != Container::Object || self.sink.scratch.nesting.is_empty() {
            return false;
        }
        let Some(at) = self.after_space(at) else {
            return false;
        };
        let ahead = &self.src[at..(at + 64).min(self.src.len())];
        let len = ahead
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-'))
            .count();
        if len == 0 || len == ahead.len() || ahead[0].is_ascii_digit() || ahead[0] == b'-' {
            return false;
        }
        let colon = self.skip_spaces_from(at + len);
        self.src.get(colon) == Some(&b':') && self.src.get(colon + 1) != Some(&b'/')
    }

    /// In an array, whether bare words at `at` run to the closing bracket (with no quote among
    /// them; before a comma they may still be the string's own). The look ahead is bounded.
    fn bare_element_follows(&self, at: usize) -> bool {
        if self.top() != Container::Array || self.sink.scratch.nesting.is_empty() {
            return false;
        }
        let (ahead, len) = self.words_at(at);
        len > 0 && ahead.get(len) == Some(&b']')
    }

    /// In an array, whether a word with a stray closing quote, before a comma or the bracket,
    /// follows at `at` after a space: `["value1" value2", "value3"]` holds three elements
    /// (json_repair's reading). The look ahead is bounded.
    fn quoted_word_follows(&self, at: usize) -> bool {
        if self.top() != Container::Array || self.sink.scratch.nesting.is_empty() {
            return false;
        }
        let Some(at) = self.after_space(at) else {
            return false;
        };
        let (ahead, len) = self.words_at(at);
        len > 0
            && ahead.get(len) == Some(&b'"')
            && matches!(
                self.src.get(self.skip_spaces_from(at + len + 1)),
                Some(b',' | b']')
            )
    }

    /// Whether a number or `true`/`false`/`null` at `at` is followed (past spaces) by what ends
    /// an item: a comma, a closing bracket, a line break or the end. Bounded look ahead.
    pub(super) fn scalar_ends_item(&self, at: usize) -> bool {
        let ahead = &self.src[at..(at + 64).min(self.src.len())];
        let len = ahead
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
            .count();
        let token = &ahead[..len];
        let scalar = matches!(token, b"true" | b"false" | b"null")
            || (token
                .first()
                .is_some_and(|b| b.is_ascii_digit() || *b == b'-')
                && token[1..]
                    .iter()
                    .all(|&b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+')));
        if !scalar || (len == ahead.len() && at + len < self.src.len()) {
            return false;
        }
        let next = self.skip_spaces_from(at + len);
        matches!(
            self.src.get(next),
            None | Some(b',' | b'}' | b']' | b'\n' | b'\r')
        )
    }

    /// In an object, whether the text after a comma at `at - 1` is a word that is not a key
    /// (no colon after it). The look ahead is bounded.
    // Inlined in both callers: out of line, the quoted-string path's calls cost 0.06% more
    // instructions on the bench corpus (callgrind).
    #[inline(always)]
    pub(super) fn prose_follows_comma(&self, at: usize) -> bool {
        if self.top() != Container::Object {
            return false;
        }
        let start = self.skip_spaces_from(at);
        let ahead = &self.src[start..(start + 64).min(self.src.len())];
        let word = ahead
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
            .count();
        if word == 0 || word == ahead.len() {
            return false;
        }
        // `b:` is a key, and so is `b":` (its opening quote missing), and `NOTE "b":` is a
        // stray word before one.
        if self.stray_words_before_key(start).is_some() {
            return false;
        }
        let mut after = self.skip_spaces_from(start + word);
        if self.src.get(after) == Some(&b'"') {
            after = self.skip_spaces_from(after + 1);
        }
        self.src.get(after) != Some(&b':')
    }

    /// Whether `"key":` starts at `at`. Bounded look ahead.
    pub(super) fn quoted_key_at(&self, at: usize) -> bool {
        let ahead = &self.src[at + 1..(at + 65).min(self.src.len())];
        let Some(close) = ahead.iter().position(|&b| b == b'"' || b == b'\n') else {
            return false;
        };
        ahead[close] == b'"' && self.src.get(self.skip_spaces_from(at + 2 + close)) == Some(&b':')
    }
}
