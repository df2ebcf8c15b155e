//! Which call of a server's stream each piece of a call continues: by its id, its index, and
//! what the call was given so far (the rules of [`super::Deltas`]).

/// Which call of the stream each piece of a server's call continues.
#[derive(Debug, Default)]
pub(super) struct CallKeys {
    /// `tool_calls` were given: `function_call` repeats them.
    pub(super) tool_calls: bool,
    /// Call ids seen, with their call's key in the stream.
    ids: Vec<(String, usize)>,
    /// Indexes (OpenAI `tool_calls[].index`, Anthropic block index, Responses
    /// `output_index`) seen, with their call's key.
    indexes: Vec<(usize, usize)>,
    /// What each key's call was given so far.
    pub(super) calls: Vec<Given>,
}

/// What the pieces of one call gave so far.
#[derive(Debug, Default)]
pub(super) struct Given {
    pub(super) name: String,
    /// The bytes of its arguments that came (some: its name is whole).
    pub(super) arguments: usize,
    /// Its arguments came whole.
    pub(super) whole: bool,
}

impl CallKeys {
    /// The key of the call started at `index`, if one was.
    pub(super) fn started(&self, index: Option<usize>) -> Option<usize> {
        let index = index?;
        self.indexes
            .iter()
            .find(|(i, _)| *i == index)
            .map(|&(_, k)| k)
    }

    /// The stream key of a piece: that of its id if seen, else of its index if seen, else a
    /// new call's. A piece with a name at an index whose call is named is a new call when it
    /// has an id not seen (Gemini's OpenAI-compatible stream gives no index, each piece read
    /// at its place in `tool_calls`; some proxies give every call index 0), or when that call
    /// has arguments already (its name was whole) and the piece names another tool or brings
    /// whole arguments (Ollama sends each call whole). A new id without a name continues the
    /// call at its index (servers that change a call's id after its first piece), and so does
    /// a piece that names the same tool again.
    pub(super) fn key(
        &mut self,
        index: Option<usize>,
        id: Option<&str>,
        name: Option<&str>,
        whole: bool,
    ) -> usize {
        let id = id.filter(|id| !id.is_empty());
        let by_id = id.and_then(|id| self.ids.iter().find(|(i, _)| i == id).map(|&(_, k)| k));
        let named = name.filter(|n| !n.is_empty());
        let by_index = self.started(index).filter(|&k| {
            let given = &self.calls[k];
            let another = named.is_some()
                && !given.name.is_empty()
                && (id.is_some()
                    || (given.arguments > 0
                        && (whole || given.whole || named != Some(&given.name))));
            by_id.is_some() || !another
        });
        let key = by_id.or(by_index).unwrap_or_else(|| {
            self.calls.push(Given::default());
            self.calls.len() - 1
        });
        if let Some(id) = id
            && by_id.is_none()
        {
            self.ids.push((id.to_owned(), key));
        }
        if let Some(index) = index {
            match self.indexes.iter_mut().find(|(i, _)| *i == index) {
                Some(entry) => entry.1 = key,
                None => self.indexes.push((index, key)),
            }
        }
        key
    }
}
