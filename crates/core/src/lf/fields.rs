//! lf's fields of a record that the tray does not model, kept small: as the compact JSON
//! text they make (every one, for passing them on), beside the few the tray reads,
//! decoded once. A `serde_json` map of them was four fifths of a record (about 4 KB of a
//! session's 5 KB at ten thousand sessions); this is about a quarter of it.

use serde_json::{Map, Value};

/// The fields lf's module reads, as paths into lf's record (`workspace/worktree` is the
/// `worktree` of its `workspace`). Reading another one is adding it here, where
/// [`LfFields::get`] finds it.
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
    /// The ones in [`READ`] that lf sent, by their place in it, in its order: only
    /// those, as a record carries about half of them (a slot for each was 350 bytes a
    /// session, most of them empty).
    read: Box<[(u8, Value)]>,
}

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
        let text = serde_json::to_string(map).expect("a JSON map always renders");
        let read = (0u8..)
            .zip(READ)
            .filter_map(|(at, path)| {
                let mut parts = path.split('/');
                let first = map.get(parts.next()?);
                let value = parts.fold(first, |value, part| value?.get(part))?;
                Some((at, value.clone()))
            })
            .collect();
        LfFields {
            text: text.into_boxed_str(),
            read,
        }
    }

    /// All of them as a map again: for writing them out, or changing one.
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        serde_json::from_str(&self.text).expect("the text was made from a map")
    }

    /// A field lf's module reads (one of [`READ`]), where lf sent it.
    pub(crate) fn get(&self, path: &str) -> Option<&Value> {
        let at = READ.iter().position(|read| *read == path);
        debug_assert!(at.is_some(), "{path} is read: name it in READ");
        let at = u8::try_from(at?).ok()?;
        self.read
            .iter()
            .find_map(|(read, value)| (*read == at).then_some(value))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.as_ref() == "{}"
    }
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
        });
        let map = sent.as_object().unwrap();
        let fields = LfFields::from_map(map);
        assert_eq!(fields.get("attention"), Some(&json!("waiting")));
        assert_eq!(
            fields.get("agent_process_id"),
            Some(&Value::Null),
            "sent as null"
        );
        assert_eq!(fields.get("provider"), None, "not sent");
        assert_eq!(fields.get("workspace/worktree"), Some(&json!("/src/app")));
        assert_eq!(&fields.to_map(), map);
        // Written as the map was: by key, compact.
        assert_eq!(
            fields.text.as_ref(),
            serde_json::to_string(map).unwrap().as_str()
        );
        assert!(!fields.is_empty() && LfFields::default().is_empty());
        assert_eq!(LfFields::from_map(&fields.to_map()), fields);
    }
}
