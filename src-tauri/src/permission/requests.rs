//! The permission requests that wait for the person, one per session: what the popup, the
//! window and the hook's connection share. Plain state, so the shell can hold it without
//! the hook's serving code.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use lf_tray_core::permission::{Answer, Request};
use lf_tray_core::SessionRecord;
use lf_tray_surface::notice::{self, NoticeKey};
use tokio::sync::oneshot;

use crate::lock;

struct Open {
    id: u64,
    record: SessionRecord,
    request: Request,
    answer: oneshot::Sender<Answer>,
}

/// The requests waiting for the person, by session key: one per session, the newest.
#[derive(Default)]
pub(crate) struct Requests {
    open: Mutex<HashMap<String, Open>>,
    next: AtomicU64,
}

impl Requests {
    /// The person's answer to the session's open request: true when it took it (the
    /// first answer), false when there is none (answered, withdrawn) — nothing is sent.
    pub fn answer(&self, key: &str, answer: Answer) -> bool {
        let Some(open) = lock(&self.open).remove(key) else {
            return false;
        };
        open.answer.send(answer).is_ok()
    }

    /// Take back the session's open request without an answer; true when there was one.
    pub fn withdraw(&self, key: &str) -> bool {
        lock(&self.open).remove(key).is_some()
    }

    /// The session's open request, if any: its popup and its window buttons.
    pub fn request(&self, key: &str) -> Option<Request> {
        lock(&self.open).get(key).map(|o| o.request.clone())
    }

    /// The popup for a session with an open request in place of the one the policy would
    /// show (an ask that arrives after the request must not take its buttons away); the
    /// policy's bookkeeping (`covers`) stays.
    pub fn in_place_of(&self, shown: notice::Notice) -> notice::Notice {
        let NoticeKey::Session(key) = &shown.key else {
            return shown;
        };
        match lock(&self.open).get(key) {
            Some(open) => notice::Notice {
                covers: shown.covers,
                ..notice::permission(&open.record, &open.request)
            },
            None => shown,
        }
    }

    pub(super) fn register(
        &self,
        key: &str,
        record: SessionRecord,
        request: Request,
    ) -> (u64, oneshot::Receiver<Answer>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        // A newer request of the same session replaces the older: its hook gets no answer.
        lock(&self.open).insert(
            key.to_string(),
            Open {
                id,
                record,
                request,
                answer,
            },
        );
        (id, answered)
    }

    /// Withdraw the session's request `id` if it is still the open one.
    pub(super) fn withdraw_this(&self, key: &str, id: u64) -> bool {
        let mut open = lock(&self.open);
        if open.get(key).is_some_and(|o| o.id == id) {
            open.remove(key);
            true
        } else {
            false
        }
    }
}
