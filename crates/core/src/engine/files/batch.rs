//! A batch of file events, in three steps: once its sources and new shards are read,
//! watch what appeared and let go of what went; once that is in place, read again what it
//! made dirty; then take that in and read the Runs its shards list.

use std::path::{Path, PathBuf};

use super::{FileSide, Then};
use crate::files::disk::{Answers, Read};
use crate::files::watch::{run_names, Appeared, Batch};

impl FileSide {
    /// A batch of file events: once the sources and its new shards are read, watch what
    /// appeared and let go of what went; once that is in place, read again what it made
    /// dirty.
    pub(super) fn batch(&mut self, batch: Batch, files: bool) {
        self.read_sources();
        if files {
            let shards = batch.shards.iter().map(|shard| Read::Stat(shard.clone()));
            self.reads.extend(shards);
        }
        self.waiting.then = Some(Then::Arrived { batch, files });
    }

    /// A batch's sources and new shards were read: watch what appeared and let go of
    /// what went.
    pub(super) fn arrived(&mut self, batch: Batch, files: bool, seen: &Answers) {
        let (asks_dir, runs_dir) = (self.home.asks_dir(), self.home.runs_dir());
        self.present = seen.is_dir(&asks_dir) || seen.is_dir(&runs_dir);
        self.found.changed |= batch.changed();
        for dir in &batch.gone {
            self.watches.forget(dir);
        }
        if batch.rescan && files {
            self.found.full = true;
            // Events were lost: any watched directory may have been replaced.
            self.watches.forget(Path::new("/"));
            self.look(files, Then::Rescan { files }, seen);
            return;
        }
        if files {
            // A new shard holds new Run dirs, listed once it is watched; a vanished one
            // takes its Runs along.
            for shard in &batch.shards {
                self.watches.shard(shard, seen.is_dir(shard));
            }
        }
        if batch.tops {
            // A source directory came or went: whether the files count at all may change.
            self.found.full = true;
            self.look(files, Then::Batch { batch, files }, seen);
        } else {
            self.waiting.then = Some(Then::Batch { batch, files });
        }
    }

    /// Ask for what a batch of file events made dirty to be read again, its sources and
    /// new shards now watched (`seen`: the sources as the last look read them).
    pub(super) fn dirty(&mut self, batch: Batch, files: bool, seen: &Answers, appeared: Appeared) {
        let (asks_dir, runs_dir) = (self.home.asks_dir(), self.home.runs_dir());
        if batch.tops {
            // The database may have been written before its directory was watched.
            self.found.database_appeared |= appeared.database;
            // A new source is read whole; the Runs only when `runs/` itself is new, since
            // reading 10 000 of them for a new `human-sessions/` would be wasted.
            if appeared.runs {
                return self.read_everything();
            }
            if !seen.is_dir(&asks_dir) {
                self.records.forget_asks();
            }
        }
        if !files {
            return;
        }
        let asks_appeared = batch.tops && appeared.asks;
        if asks_appeared {
            self.reads.push(Read::Asks(asks_dir.clone()));
            self.reads.push(Read::List(runs_dir));
        }
        let shards = batch.shards.iter().map(|shard| Read::List(shard.clone()));
        self.reads.extend(shards);
        let asks = batch
            .asks
            .iter()
            .map(|id| Read::Ask(asks_dir.join(format!("{id}.json"))));
        self.reads.extend(asks);
        let runs: Vec<PathBuf> = batch
            .runs
            .iter()
            .filter_map(|run| self.home.run_dir(run))
            .collect();
        if !runs.is_empty() {
            self.reads.push(Read::Runs(runs));
        }
        self.waiting.then = Some(Then::BatchRead {
            batch,
            asks_appeared,
        });
    }

    /// What a batch made dirty was read: the Asks first, so that the Runs read with them
    /// are followed as these Asks now name them; then what its shards list is asked for.
    pub(super) fn take_in(&mut self, batch: Batch, asks_appeared: bool, answers: &mut Answers) {
        let asks_dir = self.home.asks_dir();
        if asks_appeared {
            let Some(asks) = answers.take_asks(&asks_dir) else {
                return;
            };
            self.found
                .warnings
                .extend(self.records.asks_rescanned(asks));
            self.sync_runs(answers);
        }
        for id in &batch.asks {
            let Some(read) = answers.take_ask(&asks_dir.join(format!("{id}.json"))) else {
                return;
            };
            self.found
                .warnings
                .extend(self.records.ask_changed(id, read));
        }
        for run in &batch.runs {
            let read = self.home.run_dir(run).and_then(|dir| answers.run(&dir));
            if let Some(read) = read {
                self.found
                    .warnings
                    .extend(self.records.run_changed(run, read));
                self.settle(run);
            }
        }
        let mut listed: Vec<String> = Vec::new();
        for shard in &batch.shards {
            listed.extend(run_names(answers.entries(shard)));
            listed.extend(self.tracked_in(shard));
        }
        listed.sort();
        listed.dedup();
        let asks = if asks_appeared {
            self.records.ask_ids()
        } else {
            batch.asks.into_iter().collect()
        };
        self.read_runs(listed, asks);
    }

    fn tracked_in(&self, shard: &Path) -> Vec<String> {
        self.records
            .tracked()
            .filter(|(_, t)| t.run.dir.parent() == Some(shard))
            .map(|(id, _)| id.clone())
            .collect()
    }
}
