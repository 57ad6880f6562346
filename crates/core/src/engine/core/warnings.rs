//! The warnings a wake-up gives, after its transitions; those that would repeat with
//! every try (a failing reader, a broken lf) are given once.

use std::collections::HashSet;

use crate::event::Warning;

#[derive(Default)]
pub(super) struct Warnings {
    /// Given with the next wake-up's events.
    pending: Vec<Warning>,
    /// Messages given once already.
    told: HashSet<String>,
}

impl Warnings {
    pub(super) fn push(&mut self, warning: Warning) {
        self.pending.push(warning);
    }

    pub(super) fn extend(&mut self, warnings: impl IntoIterator<Item = Warning>) {
        self.pending.extend(warnings);
    }

    /// Warn of `message` unless it was given before.
    pub(super) fn once(&mut self, message: String) {
        if self.told.insert(message.clone()) {
            self.pending.push(Warning::new(None, message));
        }
    }

    /// The warnings to give now.
    pub(super) fn take(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.pending)
    }
}
