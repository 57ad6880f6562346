//! The one loop that drives the file half: the engine's task runs it on the machine and
//! inotify, the file replays on a disk made of data.

use std::path::Path;

use super::{CarriedOut, FileCommand, FileInput, FileOut, FileSide, Handed, Step};
use crate::files::disk::{Answers, Read};

/// What carries out the file half's watches and reads.
pub(in crate::engine) trait Hands {
    /// Watch `dir` (not recursively); false if it cannot be watched.
    fn watch(&mut self, dir: &Path) -> bool;
    fn unwatch(&mut self, dir: &Path);
    /// Make these reads; `None` if they are not made (the task is ending).
    fn read(&mut self, reads: Vec<Read>) -> Option<Answers>;
}

impl FileSide {
    /// Take in what happened: step, carrying out what each step asks before handing it
    /// what became of it, until nothing waits; then what was found. Nothing else reaches
    /// the file half meanwhile, so its look after a watch is the next thing it does.
    pub(in crate::engine) fn drive(&mut self, input: FileInput, hands: &mut impl Hands) -> FileOut {
        let mut step = self.step(Handed::Input(input));
        loop {
            let commands = match step {
                Step::Done(out) => return out,
                Step::CarryOut(commands) => commands,
            };
            let mut carried = Box::<CarriedOut>::default();
            for command in commands {
                match command {
                    FileCommand::Watch(dir) => {
                        if !hands.watch(&dir) {
                            carried.refused.push(dir);
                        }
                    }
                    FileCommand::Unwatch(dir) => hands.unwatch(&dir),
                    FileCommand::Read(reads) => carried.answers = hands.read(reads),
                }
            }
            step = self.step(Handed::CarriedOut(carried));
        }
    }
}
