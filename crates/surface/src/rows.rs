//! The window's rows as its page holds them, so that a change sends the page what changed:
//! the rows whose session or whose desk state changed, and where every row now goes as
//! runs of the rows the page already has. A whole board is ~600 bytes a session (6 MB at
//! 10 000) and took the page a 50–104 ms frame to read; a change of one session is a row
//! and a few runs. The page names the board it holds when it asks for the next; any other
//! name (a page reloaded or opened again, an answer lost on the way) gets the whole board,
//! so no page ever builds on rows it does not have.

use std::collections::HashMap;
use std::sync::Arc;

use lf_tray_core::history;
use lf_tray_core::permission::Request;
use lf_tray_core::SessionRecord;

use crate::board;
use crate::view::View;
use crate::window::{row, where_it_runs, Place, Reach, SessionView};

/// What the page was last given: its number, and each row's place and what it was made of.
#[derive(Debug, Default)]
pub struct Rows {
    /// The number of the board last given; 0 before the first.
    given: u64,
    reach: Option<Reach>,
    /// By the address of the record the row was made of: a record lf printed unchanged is
    /// the engine's same `Arc`, found without making its key. Each entry holds its record,
    /// so no other record can take its address while it is here.
    made: HashMap<usize, Made>,
    /// The address each session's key was last made from: a session read again.
    keys: HashMap<String, usize>,
}

/// What a row was made of, to tell whether it would read the same now. Holding the record
/// keeps at most the list before the last alive, only while a page is.
#[derive(Debug)]
struct Made {
    at: usize,
    key: String,
    record: Arc<SessionRecord>,
    inputs: Inputs,
}

/// What a row reads of the desk and of where its session runs.
#[derive(Debug, PartialEq)]
struct Inputs {
    since: Option<i64>,
    dismissed: bool,
    request: Option<Request>,
    runs_in: Option<String>,
}

impl Inputs {
    fn of(
        desk: &View,
        key: &str,
        record: &SessionRecord,
        reach: Reach,
        runs_in: &impl Fn(&SessionRecord) -> Option<String>,
    ) -> Inputs {
        Inputs {
            since: desk.waiting_since(key),
            dismissed: desk.dismissed(key),
            request: desk.request(key).cloned(),
            runs_in: where_it_runs(record, reach, runs_in),
        }
    }
}

/// One board's rows, as [`Rows::rows`] makes them.
#[derive(Debug)]
pub struct Given {
    /// The board's number: the page names it when it asks for the next one.
    pub number: u64,
    /// Every row in order when `order` is `None`; else the rows that changed.
    pub rows: Vec<SessionView>,
    /// Where each row now goes, from the page's list.
    pub order: Option<Vec<Place>>,
}

impl Rows {
    /// The rows for a page that holds board `held` (`None`: none), and remember them as
    /// given. `runs_in` as for [`crate::window::views`].
    pub fn rows(
        &mut self,
        held: Option<u64>,
        desk: &View,
        sessions: &[Arc<SessionRecord>],
        reach: Reach,
        runs_in: impl Fn(&SessionRecord) -> Option<String>,
    ) -> Given {
        // A whole board when the page holds another one than the one given last (or none),
        // or every row reads differently (the setting of Go to terminal changed).
        let whole = self.given == 0 || held != Some(self.given) || self.reach != Some(reach);
        if whole {
            self.forget();
        }
        let ordered = board::ordered(sessions, |r| desk.waiting_since(&history::key(r)));
        let mut made = HashMap::with_capacity(ordered.len());
        let mut rows = Vec::new();
        let mut order = Order::default();
        for (at, (group, record)) in ordered.into_iter().enumerate() {
            let address = Arc::as_ptr(record) as usize;
            let known = self.made.remove(&address).or_else(|| {
                // Not this record: the same session read again, if the page has it.
                let was = *self.keys.get(&history::key(record))?;
                self.made.remove(&was)
            });
            let (key, before) = match known {
                Some(was) => (was.key, Some((was.at, was.record, was.inputs))),
                None => (history::key(record), None),
            };
            let inputs = Inputs::of(desk, &key, record, reach, &runs_in);
            let moved = match before {
                Some((was_at, was, read)) if was == *record && read == inputs => {
                    order.held(was_at);
                    !Arc::ptr_eq(&was, record)
                }
                before => {
                    order.added(&key);
                    let runs_in = inputs.runs_in.clone();
                    rows.push(row(desk, key.clone(), group, record, reach, runs_in));
                    before.is_none_or(|(_, was, _)| !Arc::ptr_eq(&was, record))
                }
            };
            if moved {
                self.keys.insert(key.clone(), address);
            }
            let record = Arc::clone(record);
            made.insert(
                address,
                Made {
                    at,
                    key,
                    record,
                    inputs,
                },
            );
        }
        // What is left was not listed: gone from the page's list.
        for (address, gone) in self.made.drain() {
            if self.keys.get(&gone.key) == Some(&address) {
                self.keys.remove(&gone.key);
            }
        }
        self.made = made;
        self.reach = Some(reach);
        self.given += 1;
        Given {
            number: self.given,
            rows,
            order: (!whole).then_some(order.places),
        }
    }

    /// Forget what was given: the page is gone.
    pub fn forget(&mut self) {
        self.made = HashMap::new();
        self.keys = HashMap::new();
        self.reach = None;
    }
}

/// The new order as runs of the page's list and new keys.
#[derive(Default)]
struct Order {
    places: Vec<Place>,
}

impl Order {
    fn held(&mut self, at: usize) {
        if let Some(Place::Held(from, count)) = self.places.last_mut() {
            if *from + *count == at {
                *count += 1;
                return;
            }
        }
        self.places.push(Place::Held(at, 1));
    }

    fn added(&mut self, key: &str) {
        self.places.push(Place::New(key.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;
    use lf_tray_core::{Kind, State};

    /// The page's side: its list after a board, from the list it held.
    fn apply(held: &[SessionView], given: &Given) -> Vec<String> {
        let changed: HashMap<&str, &SessionView> =
            given.rows.iter().map(|r| (r.key.as_str(), r)).collect();
        let Some(order) = &given.order else {
            return given.rows.iter().map(|r| r.key.clone()).collect();
        };
        let mut keys = Vec::new();
        for place in order {
            match place {
                Place::Held(from, count) => {
                    keys.extend(held[*from..from + count].iter().map(|r| r.key.clone()))
                }
                Place::New(key) => {
                    assert!(changed.contains_key(key.as_str()), "{key} without its row");
                    keys.push(key.clone());
                }
            }
        }
        keys
    }

    fn listed(records: &[SessionRecord]) -> Vec<Arc<SessionRecord>> {
        records.iter().cloned().map(Arc::new).collect()
    }

    fn keys(views: &[SessionView]) -> Vec<String> {
        views.iter().map(|v| v.key.clone()).collect()
    }

    fn active(id: &str, created: i64) -> SessionRecord {
        let mut r = record(id, Kind::Interactive, State::Active);
        r.created_at = Some(created);
        r
    }

    #[test]
    fn a_change_sends_its_row_and_the_rest_as_runs_of_what_the_page_holds() {
        let mut records: Vec<SessionRecord> =
            (0..50).map(|i| active(&format!("s{i:02}"), i)).collect();
        let desk = View::default();
        let mut rows = Rows::default();
        let first = rows.rows(None, &desk, &listed(&records), Reach::Off, |_| None);
        assert_eq!(first.rows.len(), 50);
        assert_eq!(
            first.order, None,
            "a page with nothing gets every row in order"
        );
        let full = crate::window::views(&desk, &records, Reach::Off, |_| None);
        assert_eq!(keys(&first.rows), keys(&full));

        // Nothing changed: no row, one run.
        let same = rows.rows(
            Some(first.number),
            &desk,
            &listed(&records),
            Reach::Off,
            |_| None,
        );
        assert!(same.rows.is_empty());
        assert_eq!(same.order, Some(vec![Place::Held(0, 50)]));

        // One session waits now: its row, moved to the top, and the others as they were.
        records[20] = record("s20", Kind::Ask, State::Waiting);
        assert_eq!(board::Group::of(&records[20]), board::Group::Waiting);
        let changed = rows.rows(
            Some(same.number),
            &desk,
            &listed(&records),
            Reach::Off,
            |_| None,
        );
        assert_eq!(keys(&changed.rows), ["s20"]);
        assert_eq!(
            changed.order,
            Some(vec![
                Place::New("s20".into()),
                Place::Held(0, 29),
                Place::Held(30, 20)
            ])
        );
        let now = crate::window::views(&desk, &records, Reach::Off, |_| None);
        assert_eq!(apply(&full, &changed), keys(&now));
        assert!(serde_json::to_string(&changed.order).unwrap().len() < 40);
    }

    #[test]
    fn a_page_that_holds_another_board_gets_the_whole_one() {
        let records: Vec<SessionRecord> = (0..5).map(|i| active(&format!("s{i}"), i)).collect();
        let desk = View::default();
        let mut rows = Rows::default();
        let first = rows.rows(None, &desk, &listed(&records), Reach::Off, |_| None);
        let second = rows.rows(
            Some(first.number),
            &desk,
            &listed(&records),
            Reach::Off,
            |_| None,
        );
        assert!(second.order.is_some());
        // A reloaded page, one whose answer was lost, one of another window.
        for held in [None, Some(first.number), Some(second.number + 7)] {
            let again = rows.rows(held, &desk, &listed(&records), Reach::Off, |_| None);
            assert_eq!((again.rows.len(), &again.order), (5, &None), "{held:?}");
        }
        // Another reach reads every row differently.
        let last = rows.rows(None, &desk, &listed(&records), Reach::Off, |_| None);
        let other = rows.rows(
            Some(last.number),
            &desk,
            &listed(&records),
            Reach::Button,
            |_| None,
        );
        assert_eq!(other.order, None);
        // And once the page is gone, the next one starts whole.
        rows.forget();
        let after = rows.rows(
            Some(other.number),
            &desk,
            &listed(&records),
            Reach::Button,
            |_| None,
        );
        assert_eq!(after.order, None);
    }

    /// Random lists changed at random, the desk's marks too: after each board the page's
    /// list is the window's order, and every row it holds reads as a fresh one would.
    #[test]
    fn the_page_always_holds_what_a_whole_board_would_say() {
        let mut seed: u64 = 47;
        let mut next = |below: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % below
        };
        let states = [State::Ready, State::Waiting, State::Active, State::Closed];
        let mut records: Vec<SessionRecord> =
            (0..40).map(|i| active(&format!("s{i:02}"), i)).collect();
        let mut desk = View::default();
        let mut rows = Rows::default();
        let mut page: Vec<SessionView> = Vec::new();
        let mut number = None;
        let mut shared: Vec<Arc<SessionRecord>> = Vec::new();
        let (mut sent, mut listed_rows) = (0, 0);
        for _ in 0..300 {
            for _ in 0..next(4) {
                match next(5) {
                    0 => {
                        let id = format!("n{}", next(1_000));
                        if !records.iter().any(|r| r.id == id) {
                            records.push(active(&id, next(50) as i64));
                        }
                    }
                    1 if !records.is_empty() => {
                        records.remove(next(records.len() as u64) as usize);
                    }
                    2 if !records.is_empty() => {
                        let i = next(records.len() as u64) as usize;
                        records[i].state = states[next(4) as usize].clone();
                        records[i].title = format!("T{}", next(3));
                    }
                    3 if !records.is_empty() => {
                        let key = records[next(records.len() as u64) as usize].id.clone();
                        desk.since.insert(key, next(100) as i64);
                    }
                    _ if !records.is_empty() => {
                        let key = records[next(records.len() as u64) as usize].id.clone();
                        if !desk.dismissed.remove(&key) {
                            desk.dismissed.insert(key);
                        }
                    }
                    _ => {}
                }
            }
            // The engine's list: a record unchanged is mostly the same `Arc` as before (lf
            // printed it unchanged), sometimes a new one of the same value (read again).
            let list: Vec<Arc<SessionRecord>> = records
                .iter()
                .map(|r| match shared.iter().find(|a| a.id == r.id) {
                    Some(a) if **a == *r && next(4) > 0 => Arc::clone(a),
                    _ => Arc::new(r.clone()),
                })
                .collect();
            shared = list.clone();
            let given = rows.rows(number, &desk, &list, Reach::Off, |_| None);
            (sent, listed_rows) = (sent + given.rows.len(), listed_rows + list.len());
            let order = apply(&page, &given);
            let changed: HashMap<String, SessionView> =
                given.rows.into_iter().map(|r| (r.key.clone(), r)).collect();
            let held: HashMap<String, SessionView> =
                page.into_iter().map(|r| (r.key.clone(), r)).collect();
            page = order
                .iter()
                .map(|k| changed.get(k).or(held.get(k)).unwrap().clone())
                .collect();
            number = Some(given.number);
            let fresh = crate::window::views(&desk, &records, Reach::Off, |_| None);
            let json = |v: &[SessionView]| serde_json::to_value(v).unwrap();
            assert_eq!(json(&page), json(&fresh));
        }
        // What changed, not the list: a few rows a board.
        assert!(
            sent * 5 < listed_rows,
            "{sent} rows sent of {listed_rows} listed"
        );
    }
}
