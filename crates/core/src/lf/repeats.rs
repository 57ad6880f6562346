//! What lf's list repeats from record to record, held once: the lists of buttons it
//! offers (the same few, by state, on every session) and the words of the command that
//! opens a session (all of them but its id). At 10 000 sessions a copy of these in every
//! record was about 800 bytes a session.

use std::collections::HashSet;
use std::sync::Arc;

use super::record::{Action, SessionRecord};

type Set<T> = HashSet<Arc<T>, foldhash::fast::RandomState>;

/// One of each list of buttons and each word the records of a list hold.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    actions: Set<[Action]>,
    words: Set<str>,
}

impl Repeats {
    /// A newly decoded `record` holding, in place of its own, an equal list of buttons or
    /// word that this or `held` (the last list's) holds; what is new is noted here.
    pub(crate) fn share(&mut self, held: &Repeats, record: &mut SessionRecord) {
        if let Some(actions) = &record.actions {
            record.actions = Some(one_of(&mut self.actions, &held.actions, actions));
        }
        if record.open_argv.is_empty() {
            return;
        }
        record.open_argv = record
            .open_argv
            .iter()
            .map(|word| {
                // The id is the record's own: kept, not noted.
                if **word == *record.id {
                    Arc::clone(word)
                } else {
                    one_of(&mut self.words, &held.words, word)
                }
            })
            .collect();
    }

    /// What the next list brought, beside this list's, less what no record holds now.
    pub(crate) fn absorb(&mut self, next: Repeats) {
        self.actions.extend(next.actions);
        self.words.extend(next.words);
        self.actions
            .retain(|actions| Arc::strong_count(actions) > 1);
        self.words.retain(|word| Arc::strong_count(word) > 1);
    }
}

/// The one equal to `value` that `new` or `held` holds, else `value`, noted in `new`.
fn one_of<T: ?Sized + Eq + std::hash::Hash>(
    new: &mut Set<T>,
    held: &Set<T>,
    value: &Arc<T>,
) -> Arc<T> {
    match new.get(&**value).or_else(|| held.get(&**value)) {
        Some(one) => Arc::clone(one),
        None => {
            new.insert(Arc::clone(value));
            Arc::clone(value)
        }
    }
}
