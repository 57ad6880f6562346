//! lf's last list as the client keeps it: each record under a fingerprint of the bytes lf
//! printed for it. A new list is split into its elements' bytes ([`super::elements`]),
//! each fingerprinted, and only those with a fingerprint the last list did not have are
//! decoded; the others are the very same shared record. So a list of ten thousand
//! sessions in which one changed decodes one, keeps no copy of lf's text, and the engine
//! compares and keeps the rest by pointer.
//!
//! A list after a change is mostly the last one in the same order, so an element is first
//! looked for where the last list had it (or one further on, when one before it went);
//! only an element found in neither place is looked up among all of the last list's, by
//! an index made once per list and only then.

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

type Index = HashMap<Fingerprint, usize, foldhash::fast::RandomState>;

/// The records of the last list with their fingerprints, in lf's order. A record is a pure
/// function of its text (the machine is the tray's to set and always `None` here), so a
/// hit needs no check.
#[derive(Debug, Default)]
pub(crate) struct LastList {
    // foldhash: ~10 GB/s on 1–2 KB elements, so fingerprinting a list of ten thousand
    // costs about a millisecond (std's SipHash reads at a third of the speed).
    seeds: [foldhash::quality::RandomState; 2],
    in_order: Vec<(Fingerprint, Arc<SessionRecord>)>,
    /// What its records repeat, held once, for a record decoded anew to share.
    repeats: Repeats,
}

/// One list being decoded against the last: its records and problems so far, and what
/// becomes the last list once every page is in.
pub(crate) struct NextList {
    pub records: Vec<Arc<SessionRecord>>,
    pub problems: Vec<String>,
    kept: Vec<(Fingerprint, Arc<SessionRecord>)>,
    /// Where in the last list the next element is looked for first: after the last one
    /// found there.
    cursor: usize,
    /// Every fingerprint of the last list and where it is, made at the first element not
    /// found in its place.
    index: Option<Index>,
    repeats: Repeats,
}

impl LastList {
    /// A list to decode against this one.
    pub(crate) fn next(&self) -> NextList {
        NextList {
            records: Vec::with_capacity(self.in_order.len()),
            problems: Vec::new(),
            kept: Vec::with_capacity(self.in_order.len()),
            cursor: 0,
            index: None,
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

    /// Where the last list has the element of this fingerprint: at the cursor or just
    /// after it (the one before went), else wherever the index says.
    fn find(&self, print: Fingerprint, next: &mut NextList) -> Option<usize> {
        let at = next.cursor;
        let here = |i: usize| self.in_order.get(i).is_some_and(|(p, _)| *p == print);
        if here(at) {
            return Some(at);
        }
        if here(at + 1) {
            return Some(at + 1);
        }
        let index = next.index.get_or_insert_with(|| {
            let mut index =
                Index::with_capacity_and_hasher(self.in_order.len(), Default::default());
            index.extend(self.in_order.iter().enumerate().map(|(i, (p, _))| (*p, i)));
            index
        });
        index.get(&print).copied()
    }

    /// One element of a list into `next`: this list's record where its bytes did not
    /// change, else decoded (or a problem naming it). Refused when it is not JSON.
    pub(crate) fn take(&self, item: &[u8], next: &mut NextList) -> Result<(), String> {
        let print = self.fingerprint(item);
        let record = match self.find(print, next) {
            Some(at) => {
                next.cursor = at + 1;
                Arc::clone(&self.in_order[at].1)
            }
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
        next.kept.push((print, record));
        Ok(())
    }
}

impl NextList {
    /// The list is whole: what it kept becomes the last list.
    pub(crate) fn finish(self, last: &mut LastList) -> (Vec<Arc<SessionRecord>>, Vec<String>) {
        last.in_order = self.kept;
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
        assert_eq!(last.in_order.len(), 2);
        let mut broken = last.next();
        let err = last
            .page(format!("[{A},{b2},{{\"id\" 1}}]").as_bytes(), &mut broken)
            .unwrap_err();
        assert!(err.starts_with("lf printed invalid JSON"), "{err}");
        assert_eq!(last.in_order.len(), 2, "the last list is left as it was");
        assert!(last.page(b"{", &mut last.next()).is_err());
        let (third, _) = list(&mut last, &[format!("[{A},{b2}]")]);
        assert!(Arc::ptr_eq(&third[0], &second[0]) && Arc::ptr_eq(&third[1], &second[1]));
    }

    fn element(id: usize, state: &str) -> String {
        format!(r#"{{"id":"s{id}","state":"{state}","title":"T{id}"}}"#)
    }

    /// Each element of `ids` (the state `active` unless `changed` names it) as one list.
    fn take_list(last: &mut LastList, ids: &[usize], changed: &[usize]) -> NextList {
        let mut next = last.next();
        for &id in ids {
            let state = if changed.contains(&id) {
                "waiting"
            } else {
                "active"
            };
            last.take(element(id, state).as_bytes(), &mut next).unwrap();
        }
        next
    }

    #[test]
    fn elements_that_came_went_or_moved_are_found_wherever_they_are() {
        let mut last = LastList::default();
        let ids: Vec<usize> = (0..20).collect();
        let (first, _) = take_list(&mut last, &ids, &[]).finish(&mut last);
        let same = |records: &[Arc<SessionRecord>], id: usize| {
            let old = first.iter().find(|r| r.id == format!("s{id}"));
            old.is_some_and(|old| records.iter().any(|r| Arc::ptr_eq(r, old)))
        };
        // The same list, and the same with one changed in place: found where they were,
        // with no index made.
        let next = take_list(&mut last, &ids, &[]);
        assert!(next.index.is_none());
        let next = take_list(&mut last, &ids, &[7]);
        assert!(next
            .records
            .iter()
            .zip(&first)
            .all(|(a, b)| Arc::ptr_eq(a, b) != (a.id == "s7")));
        assert_eq!(next.records[7].state.as_str(), "waiting");
        // One gone, one come at the front, a block of three gone, one moved from the end
        // to the front: every unchanged element is still the same record.
        let shapes: [Vec<usize>; 4] = [
            ids.iter().copied().filter(|&i| i != 4).collect(),
            [99].into_iter().chain(ids.iter().copied()).collect(),
            ids.iter()
                .copied()
                .filter(|i| !(5..8).contains(i))
                .collect(),
            [19].into_iter().chain(0..19).collect(),
        ];
        for shape in shapes {
            let next = take_list(&mut last, &shape, &[]);
            let records = &next.records;
            assert_eq!(records.len(), shape.len());
            for (record, &id) in records.iter().zip(&shape) {
                assert_eq!(record.id, format!("s{id}"), "in the new list's order");
                assert_eq!(id != 99, same(records, id), "s{id} shared, s99 decoded");
            }
        }
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
