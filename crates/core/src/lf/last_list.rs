//! lf's last list as the client keeps it: each record under the exact text lf printed
//! for it. A new list decodes only the elements whose text changed and hands out the very
//! same shared record for the others, so a list of ten thousand sessions in which one
//! changed decodes one, and the engine compares and keeps the rest by pointer.

use std::collections::HashMap;
use std::sync::Arc;

use super::record::{decode_element, split_list, SessionRecord};

/// The records of the last list by their text. A record is a pure function of its text
/// (the machine is the tray's to set and always `None` here), so a hit needs no check.
#[derive(Debug, Default)]
pub(crate) struct LastList {
    // foldhash, randomly seeded: the keys are whole records (1–2 KB each), which std's
    // SipHash reads at a third of the speed; lookups compare the full text, so a
    // collision costs time, never a wrong record.
    by_text: HashMap<Box<str>, Arc<SessionRecord>, foldhash::fast::RandomState>,
}

/// One list being decoded against the last: its records and problems so far, and what
/// becomes the last list once every page is in.
#[derive(Default)]
pub(crate) struct NextList {
    pub records: Vec<Arc<SessionRecord>>,
    pub problems: Vec<String>,
    kept: LastList,
}

impl LastList {
    /// Decode one page of a list into `next`, taking from this one every element whose
    /// text did not change; the page's cursor comes back.
    pub(crate) fn page(
        &mut self,
        bytes: &[u8],
        next: &mut NextList,
    ) -> Result<Option<String>, String> {
        let (items, cursor) = split_list(bytes)?;
        next.records.reserve(items.len());
        // Room for the page up front: growing would hash every record's text again.
        next.kept.by_text.reserve(items.len());
        for item in items {
            let (text, record) = match self.by_text.remove_entry(item.get()) {
                Some(kept) => kept,
                None => match decode_element(item) {
                    Ok(mut record) => {
                        // Which machine a record is on is the tray's to say, never lf's.
                        record.machine = None;
                        (Box::from(item.get()), Arc::new(record))
                    }
                    Err(problem) => {
                        next.problems.push(problem);
                        continue;
                    }
                },
            };
            next.records.push(Arc::clone(&record));
            next.kept.by_text.insert(text, record);
        }
        Ok(cursor)
    }
}

impl NextList {
    /// The list is whole: what it kept becomes the last list.
    pub(crate) fn finish(self, last: &mut LastList) -> (Vec<Arc<SessionRecord>>, Vec<String>) {
        *last = self.kept;
        (self.records, self.problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"id":"a","state":"active","title":"A","attention":"none"}"#;
    const B: &str = r#"{"id":"b","state":"waiting","title":"B","machine":"elsewhere"}"#;

    fn list(last: &mut LastList, pages: &[String]) -> (Vec<Arc<SessionRecord>>, Vec<String>) {
        let mut next = NextList::default();
        for page in pages {
            last.page(page.as_bytes(), &mut next).unwrap();
        }
        next.finish(last)
    }

    #[test]
    fn unchanged_elements_are_shared_and_changed_ones_decoded() {
        let mut last = LastList::default();
        let (first, problems) = list(&mut last, &[format!("[{A},{B}]")]);
        assert!(problems.is_empty());
        assert_eq!(first[1].machine, None, "lf does not say the machine");
        let b2 = B.replace("waiting", "active");
        let (second, _) = list(
            &mut last,
            &[
                format!(r#"{{"entries":[{A}],"next":"b"}}"#),
                format!("[{b2},{{\"id\":\"c\"}}]"),
            ],
        );
        assert!(
            Arc::ptr_eq(&first[0], &second[0]),
            "the unchanged record is the same one"
        );
        assert_eq!(second[1].state.as_str(), "active");
        assert_eq!(
            second.len(),
            2,
            "the element without a state is a problem, not a record"
        );
        // What a fresh decode gives, field for field, the shared one gives too.
        let fresh: SessionRecord = serde_json::from_str(A).unwrap();
        assert_eq!(*second[0], fresh);
        // The last list is this one: B's old text is forgotten, and a bad page loses nothing.
        assert_eq!(last.by_text.len(), 2);
        assert!(last.page(b"{", &mut NextList::default()).is_err());
    }
}
