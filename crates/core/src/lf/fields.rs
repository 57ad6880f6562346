//! lf's fields of a record that the tray does not model, kept small: as the compact JSON
//! text they make (every one, for passing them on), with where in it the few the tray
//! reads are. A `serde_json` map of them was four fifths of a record (about 4 KB of a
//! session's 5 KB at ten thousand sessions); this is about a quarter of it.

use serde_json::{Map, Value};

/// The fields lf's module reads, as paths into lf's record (`workspace/worktree` is the
/// `worktree` of its `workspace`). Reading another one is adding it here, where
/// [`LfFields::raw`] finds it.
const READ: [&str; 11] = [
    "attention",
    "program_status",
    "work_path",
    "provider",
    "step",
    "step_index",
    "iteration",
    "run_id",
    "workspace/worktree",
    "terminal_ids",
    "agent_process_id",
];

/// Every field of lf's record the tray does not model, as lf sent them.
#[derive(Debug, Clone)]
pub(crate) struct LfFields {
    /// All of them, as a compact JSON object in the order of a `serde_json` map (by key),
    /// so they are written out as they were before they were kept as text.
    text: Box<str>,
    /// Where the value of each one in [`READ`] is in `text` (by its place in READ; an
    /// empty span where lf sent none): read from the text when asked rather than kept
    /// decoded beside it, which was about 400 bytes a session (a value and a string each).
    read: [Span; READ.len()],
    /// The strings among them that JSON escapes (a quote, a backslash, a control
    /// character), decoded: the text cannot be lent as they are. Usually none.
    unescaped: Box<[(u8, Box<str>)]>,
}

/// Where a value is in the text: `start..end`, empty where absent.
type Span = (u32, u32);

impl Default for LfFields {
    fn default() -> LfFields {
        LfFields::from_map(&Map::new())
    }
}

/// The same fields, whatever was read of them (which the text decides).
impl PartialEq for LfFields {
    fn eq(&self, other: &LfFields) -> bool {
        self.text == other.text
    }
}

impl Eq for LfFields {}

impl LfFields {
    pub(crate) fn from_map(map: &Map<String, Value>) -> LfFields {
        let mut text = Vec::new();
        let mut read = [(0, 0); READ.len()];
        write_object(&mut text, map, "", &mut read);
        let text = String::from_utf8(text).expect("serde_json writes UTF-8");
        let unescaped = (0u8..)
            .zip(read)
            .filter(|(_, (start, end))| text[*start as usize..*end as usize].contains('\\'))
            .filter_map(|(at, (start, end))| {
                let value: Value =
                    serde_json::from_str(&text[start as usize..end as usize]).ok()?;
                Some((at, value.as_str()?.into()))
            })
            .collect();
        LfFields {
            text: text.into_boxed_str(),
            read,
            unescaped,
        }
    }

    /// All of them as a map again: for writing them out, or changing one.
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        serde_json::from_str(&self.text).expect("the text was made from a map")
    }

    /// A field lf's module reads (one of [`READ`]) as the JSON text lf's value makes
    /// (compact), where lf sent it.
    pub(crate) fn raw(&self, path: &str) -> Option<&str> {
        let (start, end) = self.read[Self::place(path)?];
        (end > start).then(|| &self.text[start as usize..end as usize])
    }

    /// That field's value, decoded.
    pub(crate) fn value(&self, path: &str) -> Option<Value> {
        serde_json::from_str(self.raw(path)?).ok()
    }

    /// That field's string, where lf sent one.
    pub(crate) fn string(&self, path: &str) -> Option<&str> {
        let raw = self.raw(path)?;
        let quoted = raw.strip_prefix('"')?.strip_suffix('"')?;
        if !quoted.contains('\\') {
            return Some(quoted);
        }
        let at = u8::try_from(Self::place(path)?).ok()?;
        self.unescaped
            .iter()
            .find_map(|(read, string)| (*read == at).then_some(&**string))
    }

    /// Whether lf sent that field (`null` included).
    pub(crate) fn has(&self, path: &str) -> bool {
        self.raw(path).is_some()
    }

    fn place(path: &str) -> Option<usize> {
        let at = READ.iter().position(|read| *read == path);
        debug_assert!(at.is_some(), "{path} is read: name it in READ");
        at
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.as_ref() == "{}"
    }
}

/// `map` as `serde_json::to_string` writes it (compact, by key), noting where the values
/// of [`READ`]'s paths under `path` are.
fn write_object(out: &mut Vec<u8>, map: &Map<String, Value>, path: &str, read: &mut [Span]) {
    out.push(b'{');
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key).expect("a string always writes");
        out.push(b':');
        let start = out.len();
        let descends = |name: &str| below(name, path, key).is_some_and(|r| r.starts_with('/'));
        match value {
            Value::Object(inner) if READ.iter().any(|name| descends(name)) => {
                let here = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}/{key}")
                };
                write_object(out, inner, &here, read)
            }
            _ => serde_json::to_writer(&mut *out, value).expect("a value always writes"),
        }
        let named = READ
            .iter()
            .position(|name| below(name, path, key) == Some(""));
        if let Some(at) = named {
            read[at] = (start as u32, out.len() as u32);
        }
    }
    out.push(b'}');
}

/// What is left of a path of [`READ`] after `path` and then `key` (`""` where it names
/// that very field), if it goes through them.
fn below<'r>(read: &'r str, path: &str, key: &str) -> Option<&'r str> {
    let rest = if path.is_empty() {
        read
    } else {
        read.strip_prefix(path)?.strip_prefix('/')?
    };
    rest.strip_prefix(key)
}

/// `Arc<LfFields>` as the map it is on the wire, flattened into the record: the text is
/// written out as its fields, not as one string.
pub(crate) mod wire {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Map;

    use super::LfFields;

    pub fn serialize<S: Serializer>(fields: &Arc<LfFields>, to: S) -> Result<S::Ok, S::Error> {
        fields.to_map().serialize(to)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Arc<LfFields>, D::Error> {
        Map::deserialize(from).map(|map| Arc::new(LfFields::from_map(&map)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_is_read_is_found_and_everything_is_kept() {
        let sent = json!({
            "attention": "waiting", "agent_process_id": null, "zeta": [1, {"b": "ü\"x"}],
            "workspace": {"worktree": "/src/app", "branch": "main"}, "alpha": 1.5,
            "step_index": 2, "terminal_ids": ["T-1"],
        });
        let map = sent.as_object().unwrap();
        let fields = LfFields::from_map(map);
        assert_eq!(fields.string("attention"), Some("waiting"));
        assert_eq!(
            fields.value("agent_process_id"),
            Some(Value::Null),
            "sent as null"
        );
        assert!(fields.has("agent_process_id") && fields.string("agent_process_id").is_none());
        assert_eq!(fields.raw("provider"), None, "not sent");
        assert!(!fields.has("provider"));
        assert_eq!(fields.string("workspace/worktree"), Some("/src/app"));
        assert_eq!(fields.raw("step_index"), Some("2"));
        assert_eq!(fields.value("terminal_ids"), Some(json!(["T-1"])));
        assert_eq!(&fields.to_map(), map);
        // Written as the map was: by key, compact.
        assert_eq!(
            fields.text.as_ref(),
            serde_json::to_string(map).unwrap().as_str()
        );
        assert!(!fields.is_empty() && LfFields::default().is_empty());
        assert_eq!(LfFields::from_map(&fields.to_map()), fields);
    }

    /// A string JSON escapes is read as lf meant it, not as its escaped text.
    #[test]
    fn escaped_strings_read_as_sent() {
        let sent = json!({
            "provider": "co\"dex", "workspace": {"branch": "x", "worktree": "C:\\src\n"},
            "work_path": "plain",
        });
        let fields = LfFields::from_map(sent.as_object().unwrap());
        assert_eq!(fields.string("provider"), Some("co\"dex"));
        assert_eq!(fields.string("workspace/worktree"), Some("C:\\src\n"));
        assert_eq!(fields.string("work_path"), Some("plain"));
        assert_eq!(
            fields.text.as_ref(),
            serde_json::to_string(&sent).unwrap().as_str()
        );
    }
}
