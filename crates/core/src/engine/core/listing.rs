//! lf's list as the engine holds it: the last good `lf session list`, with lf's readers'
//! newer frames applied, indexed for merging one session at a time, and why the last
//! list failed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::agents::Named;
use super::readers::Readers;
use crate::engine::parts::Listed;
use crate::event::Warning;
use crate::lf::cli::one_line;
use crate::lf::dialect::Dialect;
use crate::lf::record::SessionRecord;
use crate::snapshot::boundary_runs;

#[derive(Default)]
pub(super) struct Listing {
    /// Shared with the lf client's last list: a record a new list did not change is the
    /// same allocation, compared by pointer.
    records: Vec<Arc<SessionRecord>>,
    /// Where in `records` each id is, and the Runs lf names as Ask or Flow boundaries:
    /// what merging one changed session needs.
    index: HashMap<String, usize>,
    boundary: HashSet<String>,
    /// What the status line says of the last list, if it failed.
    failure: Option<String>,
    /// A list was taken: the next is compared with it.
    listed: bool,
    /// How many records name each agent, kept from what each list changed.
    named: Named,
}

impl Listing {
    pub(super) fn records(&self) -> &[Arc<SessionRecord>] {
        &self.records
    }

    /// The listed session `id`.
    pub(super) fn get(&self, id: &str) -> Option<&SessionRecord> {
        self.index.get(id).map(|&i| &*self.records[i])
    }

    pub(super) fn boundary(&self) -> &HashSet<String> {
        &self.boundary
    }

    pub(super) fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// The agent ids that came to be named or stopped being named since the last call
    /// ([`Named::take`]).
    pub(super) fn named_moved(&mut self, dialect: Dialect) -> Vec<(String, bool)> {
        self.named.take(dialect, &self.records)
    }

    /// The listed sessions that name one of these agents.
    pub(super) fn naming<'a>(
        &'a self,
        dialect: Dialect,
        agents: &'a HashSet<String>,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.records.iter().filter_map(move |r| {
            let agent = dialect.agent_id(r)?;
            agents.contains(agent).then_some(r.id.as_str())
        })
    }

    /// A list ended: what it holds replaces the last good one, or its failure is kept for
    /// the status line. The problems to tell come back: lf's, or a failure not told yet.
    /// The ids whose records it changed (added, altered or gone) go into `touched`; false
    /// when every session must be merged again instead (the first list, a failed one, or
    /// one that moved the Runs lf names as boundaries, which any file record may meet).
    pub(super) fn take(
        &mut self,
        result: Listed,
        touched: &mut HashSet<String>,
    ) -> (Vec<Warning>, bool) {
        match result {
            Ok((records, problems)) => {
                let first = !self.listed || self.failure.is_some();
                // A list after a change is mostly the last one: the same ids in the same
                // places are compared pairwise (by pointer, for the records the lf client
                // kept) and keep the index, rebuilt only when one came, went or moved.
                let same_order = !first
                    && self.records.len() == records.len()
                    && self.records.iter().zip(&records).all(|(a, b)| a.id == b.id);
                let mut changed = Vec::new();
                if same_order {
                    for (a, b) in self.records.iter().zip(&records) {
                        if a != b {
                            self.named.changed(Some(a), Some(b));
                            changed.push(b.id.clone());
                        }
                    }
                } else if !first {
                    let mut listed = HashSet::with_capacity(records.len());
                    for record in &records {
                        listed.insert(record.id.as_str());
                        let old = self.index.get(&record.id).map(|&i| &self.records[i]);
                        if old != Some(record) {
                            self.named.changed(old.map(|r| &**r), Some(record));
                            changed.push(record.id.clone());
                        }
                    }
                    for gone in &self.records {
                        if !listed.contains(gone.id.as_str()) {
                            self.named.changed(Some(gone), None);
                            changed.push(gone.id.clone());
                        }
                    }
                } else {
                    self.named.recount();
                }
                let boundary = std::mem::take(&mut self.boundary);
                self.records = records;
                if same_order && changed.is_empty() {
                    // Nothing changed: the boundary Runs stand.
                    self.boundary = boundary.clone();
                } else if same_order {
                    self.boundary = boundary_runs(&self.records);
                } else {
                    self.reindex();
                }
                let each = !first && boundary == self.boundary;
                if each {
                    touched.extend(changed);
                }
                self.failure = None;
                self.listed = true;
                let problems = problems
                    .into_iter()
                    .map(|p| Warning::new(None, p))
                    .collect();
                (problems, each)
            }
            Err(e) => {
                let message = format!("lf session list: {}", one_line(&e.to_string()));
                // One warning per distinct failure, not one per safety tick.
                if self.failure.as_deref() == Some(message.as_str()) {
                    return (Vec::new(), false);
                }
                self.failure = Some(message.clone());
                (vec![Warning::new(None, message)], false)
            }
        }
    }

    /// A reader's list of every open session in `repo` replaces what the engine had for
    /// that repository: sessions it no longer lists were completed. Every id it changed
    /// goes into `touched`.
    pub(super) fn apply_frame(
        &mut self,
        repo: &str,
        entries: Vec<SessionRecord>,
        readers: &Readers,
        touched: &mut HashSet<String>,
    ) {
        let fresh: HashSet<&str> = entries.iter().map(|r| r.id.as_str()).collect();
        let mut kept = Vec::with_capacity(self.records.len());
        for record in std::mem::take(&mut self.records) {
            let in_repo = record
                .worktree()
                .and_then(|w| readers.repo_of(w))
                .is_some_and(|r| r == repo);
            if in_repo || fresh.contains(record.id.as_str()) {
                self.named.changed(Some(&record), None);
                touched.insert(record.id.clone());
            } else {
                kept.push(record);
            }
        }
        for record in &entries {
            self.named.changed(None, Some(record));
            touched.insert(record.id.clone());
        }
        kept.extend(entries.into_iter().map(Arc::new));
        self.records = kept;
        self.reindex();
    }

    fn reindex(&mut self) {
        self.index = self
            .records
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.clone(), i))
            .collect();
        self.boundary = boundary_runs(&self.records);
    }
}
