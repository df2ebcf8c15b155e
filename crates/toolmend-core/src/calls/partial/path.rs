//! Paths in the value being read: JSON pointers, the open path, snapshots.

use serde_json::Value;

use super::{Frame, Reader};

/// One segment of a path: a member's key or an element's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A JSON pointer (RFC 6901) for `path`.
pub(crate) fn pointer(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => push_key(&mut out, k),
            Seg::Index(i) => push_index(&mut out, *i),
        }
    }
    out
}

/// A pointer's segment for the key `k` (`~` and `/` escaped).
pub(super) fn push_key(out: &mut String, k: &str) {
    out.push('/');
    if k.bytes().any(|b| b == b'~' || b == b'/') {
        out.push_str(&k.replace('~', "~0").replace('/', "~1"));
    } else {
        out.push_str(k);
    }
}

/// A pointer's segment for the index `i`, written without the formatting machinery (it is
/// written for most `arguments` events).
pub(super) fn push_index(out: &mut String, mut i: usize) {
    out.push('/');
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (i % 10) as u8;
        i /= 10;
        if i == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}
impl Reader {
    /// The path from the whole value to the frame at `depth` of the stack (to the value being
    /// read in the top frame when `depth` is the stack's height).
    pub(crate) fn path_to(&self, depth: usize) -> Vec<Seg> {
        let mut path = Vec::with_capacity(depth);
        for frame in &self.stack[..depth.min(self.stack.len())] {
            match frame {
                Frame::Object { key: Some(k), .. } => path.push(Seg::Key(k.clone())),
                Frame::Object { key: None, .. } => break,
                Frame::Array(items) => path.push(Seg::Index(items.len())),
            }
        }
        path
    }

    /// The path from the whole value to the key the reader gave up at for being repeated
    /// (its first value is in the object on top of the stack).
    pub(crate) fn repeated_path(&self) -> Option<Vec<Seg>> {
        let key = self.repeated.as_ref()?;
        let top = self.stack.len().checked_sub(1)?;
        let mut path = self.path_to(top);
        path.push(Seg::Key(key.clone()));
        Some(path)
    }

    /// The path from the frame at `depth` to the deepest value still open (`[]`: that frame).
    pub(crate) fn open_path(&self, depth: usize) -> Vec<Seg> {
        let mut path = Vec::new();
        if depth >= self.stack.len() {
            return path;
        }
        for frame in &self.stack[depth..] {
            match frame {
                Frame::Object { key: Some(k), .. } => path.push(Seg::Key(k.clone())),
                Frame::Object { key: None, .. } => break,
                Frame::Array(items) => path.push(Seg::Index(items.len())),
            }
        }
        // `path` names the open child of each frame; keep only the children that exist.
        let open_frames = self.stack.len() - depth;
        let open_len = if self.open_string().is_some() {
            open_frames
        } else {
            open_frames - 1
        };
        path.truncate(open_len.min(path.len()));
        path
    }

    /// [`pointer()`] of [`Reader::open_path`], written without building the path.
    pub(crate) fn open_pointer(&self, depth: usize) -> String {
        let mut out = String::new();
        if depth >= self.stack.len() {
            return out;
        }
        // The open child of each frame, as far as it exists (see `open_path`).
        let open_frames = self.stack.len() - depth;
        let open_len = if self.open_string().is_some() {
            open_frames
        } else {
            open_frames - 1
        };
        for frame in self.stack[depth..].iter().take(open_len) {
            match frame {
                Frame::Object { key: Some(k), .. } => push_key(&mut out, k),
                Frame::Object { key: None, .. } => break,
                Frame::Array(items) => push_index(&mut out, items.len()),
            }
        }
        out
    }

    /// The container at `depth` of the stack as it stands, its open descendants included (an
    /// open string as far as it goes; a number or literal not yet ended is left out), and the
    /// path from it to the deepest value still open.
    pub(crate) fn snapshot(&self, depth: usize) -> Option<(Value, Vec<Seg>)> {
        if depth >= self.stack.len() || self.text_only() {
            return None;
        }
        let mut child = self
            .open_string()
            .map(|b| Value::String(String::from_utf8_lossy(b).into_owned()));
        for frame in self.stack[depth..].iter().rev() {
            let mut value = match frame {
                Frame::Object { map, .. } => Value::Object(map.clone()),
                Frame::Array(items) => Value::Array(items.clone()),
            };
            if let Some(c) = child.take() {
                match (&mut value, frame) {
                    (Value::Object(m), Frame::Object { key: Some(k), .. }) => {
                        m.insert(k.clone(), c);
                    }
                    (Value::Array(items), Frame::Array(_)) => items.push(c),
                    _ => {}
                }
            }
            child = Some(value);
        }
        child.map(|v| (v, self.open_path(depth)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::partial::tests::read;

    #[test]
    fn snapshots_hold_only_what_is_certain() {
        let (r, _) = read(r#"{"a": 12"#);
        assert_eq!(r.snapshot(0).unwrap().0, serde_json::json!({}));
        let (r, _) = read(r#"{"a": 12,"b": tr"#);
        assert_eq!(r.snapshot(0).unwrap().0, serde_json::json!({"a": 12}));
        let (r, _) = read(r#"{"a": 1, "bc"#);
        assert_eq!(
            r.snapshot(0).unwrap(),
            (serde_json::json!({"a": 1}), vec![])
        );
        let (r, _) = read(r#"{"a": {"b": ["x", "hel"#);
        let (value, path) = r.snapshot(0).unwrap();
        assert_eq!(value, serde_json::json!({"a": {"b": ["x", "hel"]}}));
        assert_eq!(pointer(&path), "/a/b/1");
        let (r, _) = read(r#"{"a": {"b": [1, 2"#);
        let (value, path) = r.snapshot(0).unwrap();
        assert_eq!(value, serde_json::json!({"a": {"b": [1]}}));
        assert_eq!(pointer(&path), "/a/b");
        let (r, _) = read(r#"{"a": "x\u00"#);
        assert_eq!(r.snapshot(0).unwrap().0, serde_json::json!({"a": "x"}));
    }

    #[test]
    fn the_open_pointer_is_the_pointer_of_the_open_path() {
        let text = r#"{"a/b": {"c~d": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "xy", {"": [[], "é"]}]}, "k": "v"}"#;
        let mut r = Reader::new();
        let mut pointers = std::collections::BTreeSet::new();
        for &b in text.as_bytes() {
            r.push(b);
            for depth in 0..=r.stack.len() {
                let open = r.open_pointer(depth);
                assert_eq!(open, pointer(&r.open_path(depth)), "at depth {depth}");
                pointers.insert(open);
            }
        }
        // Escaped keys, indexes of two digits, an empty key, and an open string.
        for p in ["/a~1b/c~0d/11", "/a~1b/c~0d/12//1", "/k"] {
            assert!(pointers.contains(p), "{p} in {pointers:?}");
        }
    }
}
