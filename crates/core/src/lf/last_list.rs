//! lf's last list as the client keeps it: each record under a fingerprint of the bytes lf
//! printed for it. A new list is split into its elements' bytes ([`super::elements`]),
//! each fingerprinted, and only those with a fingerprint the last list did not have are
//! decoded; the others are the very same shared record. So a list of ten thousand
//! sessions in which one changed decodes one, keeps no copy of lf's text, and the engine
//! compares and keeps the rest by pointer.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use super::record::{decode_element, split_list, SessionRecord, Undecoded};
use super::repeats::Repeats;

/// 128 bits of an element's bytes, from two independently and randomly seeded hashes (the
/// length is hashed in too). A record is taken by its fingerprint alone, so two different
/// texts must never share one: by chance that is one in 2^128 per pair (10^4 records
/// against 10^4 new ones a list, a list a second, for a century, stays under 10^-19), and
/// on purpose it needs the seeds, which are made at start and never leave the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Fingerprint(u64, u64);

/// The records of the last list by their fingerprint. A record is a pure function of its
/// text (the machine is the tray's to set and always `None` here), so a hit needs no check.
#[derive(Debug, Default)]
pub(crate) struct LastList {
    // foldhash: ~10 GB/s on 1–2 KB elements, so fingerprinting a list of ten thousand
    // costs about a millisecond (std's SipHash reads at a third of the speed).
    seeds: [foldhash::quality::RandomState; 2],
    by_print: HashMap<Fingerprint, Arc<SessionRecord>, foldhash::fast::RandomState>,
    /// What its records repeat, held once, for a record decoded anew to share.
    repeats: Repeats,
}

/// One list being decoded against the last: its records and problems so far, and what
/// becomes the last list once every page is in.
pub(crate) struct NextList {
    pub records: Vec<Arc<SessionRecord>>,
    pub problems: Vec<String>,
    kept: HashMap<Fingerprint, Arc<SessionRecord>, foldhash::fast::RandomState>,
    repeats: Repeats,
}

impl LastList {
    /// A list to decode against this one.
    pub(crate) fn next(&self) -> NextList {
        NextList {
            records: Vec::new(),
            problems: Vec::new(),
            // Room for a list as long as the last up front: growing would hash every
            // fingerprint again.
            kept: HashMap::with_capacity_and_hasher(self.by_print.len(), Default::default()),
            repeats: Repeats::default(),
        }
    }

    fn fingerprint(&self, bytes: &[u8]) -> Fingerprint {
        Fingerprint(self.seeds[0].hash_one(bytes), self.seeds[1].hash_one(bytes))
    }

    /// Decode one page of a list into `next`, taking from this one every element whose
    /// bytes did not change; the page's cursor comes back. A page with an element that
    /// is not JSON is refused whole, as one that is not a list is.
    pub(crate) fn page(
        &mut self,
        bytes: &[u8],
        next: &mut NextList,
    ) -> Result<Option<String>, String> {
        let (items, cursor) = split_list(bytes)?;
        next.records.reserve(items.len());
        for item in items {
            self.take(item, next)?;
        }
        Ok(cursor)
    }

    /// One element of a list into `next`: this list's record where its bytes did not
    /// change, else decoded (or a problem naming it). Refused when it is not JSON.
    pub(crate) fn take(&self, item: &[u8], next: &mut NextList) -> Result<(), String> {
        let print = self.fingerprint(item);
        let record = match self.by_print.get(&print) {
            Some(kept) => Arc::clone(kept),
            None => match decode_element(item) {
                Ok(mut record) => {
                    // Which machine a record is on is the tray's to say, never lf's.
                    record.machine = None;
                    next.repeats.share(&self.repeats, &mut record);
                    Arc::new(record)
                }
                Err(Undecoded::Problem(problem)) => {
                    next.problems.push(problem);
                    return Ok(());
                }
                // The last list is left as it was, to be the next one's again.
                Err(Undecoded::Invalid(broken)) => return Err(broken),
            },
        };
        next.records.push(Arc::clone(&record));
        next.kept.insert(print, record);
        Ok(())
    }
}

impl NextList {
    /// The list is whole: what it kept becomes the last list.
    pub(crate) fn finish(self, last: &mut LastList) -> (Vec<Arc<SessionRecord>>, Vec<String>) {
        last.by_print = self.kept;
        last.repeats.absorb(self.repeats);
        (self.records, self.problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"id":"a","state":"active","title":"A","attention":"none"}"#;
    const B: &str = r#"{"id":"b","state":"waiting","title":"B","machine":"elsewhere"}"#;

    fn list(last: &mut LastList, pages: &[String]) -> (Vec<Arc<SessionRecord>>, Vec<String>) {
        let mut next = last.next();
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
        assert_eq!(last.by_print.len(), 2);
        let mut broken = last.next();
        let err = last
            .page(format!("[{A},{b2},{{\"id\" 1}}]").as_bytes(), &mut broken)
            .unwrap_err();
        assert!(err.starts_with("lf printed invalid JSON"), "{err}");
        assert_eq!(last.by_print.len(), 2, "the last list is left as it was");
        assert!(last.page(b"{", &mut last.next()).is_err());
        let (third, _) = list(&mut last, &[format!("[{A},{b2}]")]);
        assert!(Arc::ptr_eq(&third[0], &second[0]) && Arc::ptr_eq(&third[1], &second[1]));
    }

    /// Records offering the same buttons hold one list of them, and the words of their
    /// commands one of each but the id, within a list and from the last list to the next;
    /// different ones stay apart.
    #[test]
    fn what_records_repeat_is_held_once() {
        let open =
            r#"{"kind":"open","label":"Open here","help":"Open it","unavailable_reason":null}"#;
        let with = |id: &str, actions: &str| {
            format!(
                r#"{{"id":"{id}","state":"active","actions":[{actions}],"open_argv":["/bin/lf","connect","{id}"]}}"#
            )
        };
        let mut last = LastList::default();
        let (first, _) = list(
            &mut last,
            &[format!("[{},{}]", with("a", open), with("b", open))],
        );
        let actions = |r: &SessionRecord| r.actions.clone().unwrap();
        assert!(Arc::ptr_eq(&actions(&first[0]), &actions(&first[1])));
        assert!(Arc::ptr_eq(&first[0].open_argv[0], &first[1].open_argv[0]));
        assert!(Arc::ptr_eq(&first[0].open_argv[1], &first[1].open_argv[1]));
        assert_eq!(
            (&*first[0].open_argv[2], &*first[1].open_argv[2]),
            ("a", "b")
        );
        let closed = open.replace("null", r#""closed""#);
        let (second, _) = list(
            &mut last,
            &[format!(
                "[{},{},{}]",
                with("a", open),
                with("b", &closed),
                with("c", open)
            )],
        );
        assert!(
            Arc::ptr_eq(&actions(&second[2]), &actions(&first[0])),
            "from the last list"
        );
        assert!(Arc::ptr_eq(&second[2].open_argv[0], &first[0].open_argv[0]));
        assert_eq!(
            actions(&second[1])[0].unavailable_reason.as_deref(),
            Some("closed")
        );
        assert_ne!(actions(&second[1]), actions(&second[0]));
        let fresh: SessionRecord = serde_json::from_str(&with("c", open)).unwrap();
        assert_eq!(*second[2], fresh);
    }
}
