//! The callers of `Engine::act` waiting for the list after their action: lf's lists are
//! counted as they start and finish, and each caller is let go once a list that started
//! after its action has finished.

use super::Command;

#[derive(Default)]
pub(super) struct Waiters {
    /// Lists started and finished.
    started: u64,
    finished: u64,
    /// Each caller's token, with the list it waits for (by its count of started lists).
    waiting: Vec<(u64, u64)>,
}

impl Waiters {
    pub(super) fn list_started(&mut self) {
        self.started += 1;
    }

    pub(super) fn list_finished(&mut self) {
        self.finished += 1;
    }

    /// The caller with `token` waits for the next list to start.
    pub(super) fn wait(&mut self, token: u64) {
        self.waiting.push((self.started + 1, token));
    }

    /// Let go of the callers whose list has finished.
    pub(super) fn answer(&mut self, commands: &mut Vec<Command>) {
        let finished = self.finished;
        let (answered, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|(wanted, _)| *wanted <= finished);
        self.waiting = waiting;
        let answers = answered
            .into_iter()
            .map(|(_, token)| Command::Answer(token));
        commands.extend(answers);
    }
}
