//! The desk: what the person is told — the popups' policy and the agents' open requests —
//! as one state with one set of decisions. Whether a request gets a popup, which popup a
//! session with an open request shows, withdrawing a request when lf stops saying its
//! agent waits, and what a popup's button means are decided here, tested without a
//! desktop; the shell finds what only it can (the requester's process, what the person
//! looks at), hands it in, and carries out the effects.

use lf_tray_core::history::{self, History};
use lf_tray_core::permission::{Reply, Request};
use lf_tray_core::{Event, SessionKey, SessionRecord};
use tokio::sync::oneshot;

use crate::notice::{self, Notice, NoticeKey};
use crate::policy::{Clock, Delivery, Effect, Focus, Popups, Preferences};
use crate::requests::{NotTaken, Requests};
use crate::window::FromWindow;

#[derive(Default)]
pub struct Desk {
    /// When popups show and go, and the memory of what was told.
    pub popups: Popups,
    requests: Requests,
}

/// A request the desk took: its popup to show, and where the person's reply will come.
pub struct Asked {
    /// Names this request among the session's (a newer one replaces it).
    pub id: u64,
    pub reply: oneshot::Receiver<Reply>,
    pub effects: Vec<Effect>,
}

/// What a popup's button, or its body, means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Act {
    /// It answered the session's open request (the reply's word, for the log).
    Answered(&'static str),
    /// It would have answered a request, but none is open or it does not fit: why.
    Ignored(String),
    /// The window, at the session when one is named.
    Window(Option<SessionKey>),
    /// The server took the session's popup down by itself, unseen.
    Expired,
    /// Where a click on the session goes (its terminal, its window, a dismissal):
    /// `route::destination` decides from the session as it is now.
    Go(SessionKey),
}

/// One turn of the engine's events at the desk.
pub struct Turn {
    pub effects: Vec<Effect>,
    /// Requests withdrawn since lf no longer says their agent waits (the window redraws).
    pub withdrawn: Vec<String>,
}

impl Desk {
    pub fn new(history: History) -> Desk {
        Desk {
            popups: Popups::new(history),
            requests: Requests::default(),
        }
    }

    /// The session's open request, if any (its card in the window).
    pub fn request(&self, key: &str) -> Option<Request> {
        self.requests.request(key)
    }

    /// A hook's request from `record`'s agent, with whether answering from the popup is
    /// `on` and whether the person `focus`es that agent's own terminal: its popup, in place
    /// of the session's usual one, or why none (the terminal's prompt is then the only
    /// one, and the hook gives no decision).
    pub fn ask(
        &mut self,
        record: SessionRecord,
        request: Request,
        on: bool,
        focus: Focus,
        now: Clock,
        prefs: &Preferences,
    ) -> Result<Asked, String> {
        self.takes(&request, on, now, prefs)?;
        let key = history::key(&record);
        if self.popups.dismissed(&key) {
            return Err("the session is dismissed".into());
        }
        if focus == Focus::Looking {
            return Err("the person looks at the agent's own terminal".into());
        }
        let shown = notice::permission(&record, &request);
        let (id, reply) = self.requests.register(&key, record, request);
        Ok(Asked {
            id,
            reply,
            effects: vec![Effect::Show(shown)],
        })
    }

    /// Whether a request could get a popup at all, before its session is known: the
    /// setting on, a request the tray can answer whole, popups not held back. Asked first,
    /// so that a request refused anyway costs no walk of the processes and no question to
    /// a terminal.
    pub fn takes(
        &self,
        request: &Request,
        on: bool,
        now: Clock,
        prefs: &Preferences,
    ) -> Result<(), String> {
        if !on {
            return Err("answering from the popup is off".into());
        }
        // A question or plan that cannot be read whole could only be answered in part: the
        // terminal keeps it.
        if let Err(why) = request.prompt() {
            return Err(format!("an unreadable {} ({why:?})", request.tool_name));
        }
        match self.popups.held_back(now, prefs) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// The hook of request `id` went away before an answer (Claude ended it: the terminal
    /// answered) or before its popup showed: its popup goes, unless a newer request of the
    /// session took its place.
    pub fn ended(&mut self, key: &str, id: u64) -> Vec<Effect> {
        if self.requests.withdraw_this(key, id) {
            vec![Effect::Close(NoticeKey::Session(key.to_string()))]
        } else {
            Vec::new()
        }
    }

    /// The session's reply went to its hook: the popup goes (servers close one whose
    /// button was pressed; the window's buttons need it gone as well).
    pub fn answered(&mut self, key: &str) -> Vec<Effect> {
        vec![Effect::Close(NoticeKey::Session(key.to_string()))]
    }

    /// The engine's events (none: a deadline came, or a pause, a setting or the server
    /// changed). A session lf no longer says waits has its open request withdrawn: it was
    /// answered elsewhere, and no answer may reach it later.
    pub fn on_events(&mut self, batch: &[Event], now: Clock, prefs: &Preferences) -> Turn {
        let withdrawn = batch
            .iter()
            .filter_map(no_longer_waits)
            .map(history::key)
            .filter(|key| self.requests.withdraw(key))
            .collect();
        let effects = if batch.is_empty() {
            self.popups.flush(now, prefs)
        } else {
            batch
                .iter()
                .flat_map(|event| self.popups.on_event(event, now, prefs))
                .collect()
        };
        Turn { effects, withdrawn }
    }

    /// What the popup for `key` shows: a session with an open request keeps the request's
    /// popup and its buttons (an ask that arrives after it must not take them away).
    pub fn shown(&self, notice: Notice) -> Notice {
        self.requests.in_place_of(notice)
    }

    /// The server took (or did not take) the popup: the policy's marks.
    pub fn delivered(&mut self, notice: &Notice, delivery: Delivery) -> bool {
        self.popups.delivered(notice, delivery)
    }

    /// A popup's `action` on `key`: a reply to the session's open request (checked
    /// against what it asks), the window, an expiry, or a click that goes somewhere.
    pub fn act(&mut self, key: NoticeKey, action: &str) -> Act {
        let NoticeKey::Session(named) = key else {
            return Act::Window(None);
        };
        let session = || SessionKey::parse(&named).unwrap_or_else(|| SessionKey::local(&named));
        if notice::is_reply(action) {
            let Some(reply) = self
                .requests
                .request(&named)
                .and_then(|request| notice::reply(action, &request))
            else {
                return Act::Ignored("no request open".into());
            };
            let word = reply.word();
            return match self.requests.answer(&named, reply) {
                Ok(()) => Act::Answered(word),
                Err(why) => Act::Ignored(why.to_string()),
            };
        }
        match action {
            notice::ANSWER => Act::Window(Some(session())),
            notice::EXPIRED => {
                self.popups.expired(&named);
                Act::Expired
            }
            _ => Act::Go(session()),
        }
    }

    /// What the tray's menu says about popups for these sessions: why they are held back,
    /// whether the person paused them, which are dismissed, which went unseen, and since
    /// when each waits.
    pub fn tray(
        &self,
        sessions: &[SessionRecord],
        now: Clock,
        prefs: &Preferences,
    ) -> crate::menu::Popups {
        let popups = &self.popups;
        let keys = || sessions.iter().map(history::key);
        crate::menu::Popups {
            held_back: popups.held_back(now, prefs),
            paused: popups.paused(now),
            dismissed: keys().filter(|k| popups.dismissed(k)).collect(),
            unseen: keys().filter(|k| popups.unseen(k)).collect(),
            since: keys()
                .filter_map(|k| Some((k.clone(), popups.waiting_since(&k)?)))
                .collect(),
        }
    }

    /// The window's reply to the session's open request, in the card's terms (options by
    /// number): sent when it answers what was asked, else why not.
    pub fn reply(&mut self, key: &str, reply: FromWindow) -> Result<&'static str, NotTaken> {
        let request = self.requests.request(key).ok_or(NotTaken::NoneOpen)?;
        let reply = reply.reply(&request).ok_or(NotTaken::Refused(
            lf_tray_core::permission::Refused::NotForThis(
                "That option is not one the agent offered.",
            ),
        ))?;
        let word = reply.word();
        self.requests.answer(key, reply).map(|()| word)
    }
}

/// The session of an event after which lf no longer says its agent waits.
fn no_longer_waits(event: &Event) -> Option<&SessionRecord> {
    match event {
        Event::State {
            session,
            previous_needs_you: true,
            ..
        } if !session.needs_you => Some(session),
        Event::Resolved { session, .. } | Event::Stopped { session, .. } => Some(session),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record_d;
    use crate::window::Picked;
    use lf_tray_core::State;
    use std::time::{Duration, Instant};

    const PREFS: Preferences = Preferences {
        on_ask: true,
        on_ready: true,
        reminder: None,
        attached_grace: Duration::ZERO,
        quiet_hours: None,
    };

    fn now() -> Clock {
        Clock::new(Instant::now(), 1_796_126_400, 0)
    }

    fn bash() -> Request {
        Request {
            session_id: "c1".into(),
            cwd: "/w".into(),
            tool_name: "Bash".into(),
            tool_input: serde_json::json!({"command": "cargo publish"}),
            permission_suggestions: Vec::new(),
        }
    }

    fn question() -> Request {
        Request {
            tool_name: "AskUserQuestion".into(),
            tool_input: serde_json::json!({"questions": [{"question": "Which registry?",
                "options": [{"label": "crates.io"}, {"label": "internal"}]}]}),
            ..bash()
        }
    }

    fn waiting() -> SessionRecord {
        record_d("S1", State::Active, true)
    }

    fn ask(desk: &mut Desk, request: Request, focus: Focus) -> Result<Asked, String> {
        desk.ask(waiting(), request, true, focus, now(), &PREFS)
    }

    #[test]
    fn a_request_gets_its_popup_unless_off_unreadable_held_back_dismissed_or_looked_at() {
        let mut desk = Desk::default();
        let asked = ask(&mut desk, bash(), Focus::Elsewhere).unwrap();
        let [Effect::Show(shown)] = asked.effects.as_slice() else {
            panic!("{:?}", asked.effects.len())
        };
        assert_eq!(*shown, notice::permission(&waiting(), &bash()));
        assert!(desk.request("S1").is_some());

        let off = desk.ask(waiting(), bash(), false, Focus::Unknown, now(), &PREFS);
        assert!(off.err().unwrap().contains("off"));
        let unreadable = Request {
            tool_input: serde_json::json!({"questions": []}),
            ..question()
        };
        assert!(ask(&mut desk, unreadable, Focus::Unknown).is_err());
        assert!(ask(&mut desk, bash(), Focus::Looking).is_err());
        desk.popups.pause(crate::policy::PauseFor::Hour, now());
        assert!(ask(&mut desk, bash(), Focus::Elsewhere).is_err());
        desk.popups.resume();
        let asked = Event::Asked {
            at: time::OffsetDateTime::UNIX_EPOCH,
            session: waiting(),
        };
        let _ = desk.on_events(&[asked], now(), &PREFS);
        let _ = desk.popups.dismiss("S1");
        assert!(ask(&mut desk, bash(), Focus::Elsewhere).is_err());
    }

    #[test]
    fn a_button_answers_the_open_request_once_and_the_rest_go_where_they_say() {
        let mut desk = Desk::default();
        let key = || NoticeKey::Session("S1".into());
        let mut asked = ask(&mut desk, question(), Focus::Elsewhere).unwrap();
        // A bare Allow is no answer to a question: nothing is sent, the request stays.
        assert!(matches!(desk.act(key(), notice::ALLOW), Act::Ignored(_)));
        assert!(asked.reply.try_recv().is_err());
        assert_eq!(
            desk.act(key(), notice::CHOICES[1]),
            Act::Answered("answers")
        );
        assert_eq!(
            asked.reply.try_recv().unwrap(),
            Reply::Answers {
                answers: vec![lf_tray_core::permission::Answer::chose("internal")]
            }
        );
        // The second click of a double click finds nothing to answer.
        assert!(matches!(
            desk.act(key(), notice::CHOICES[1]),
            Act::Ignored(_)
        ));
        let session = SessionKey::local("S1");
        assert_eq!(
            desk.act(key(), notice::ANSWER),
            Act::Window(Some(session.clone()))
        );
        assert_eq!(desk.act(key(), notice::OPEN), Act::Go(session.clone()));
        assert_eq!(desk.act(key(), notice::DEFAULT), Act::Go(session));
        assert_eq!(desk.act(key(), notice::EXPIRED), Act::Expired);
        assert_eq!(
            desk.act(NoticeKey::Burst, notice::DEFAULT),
            Act::Window(None)
        );
    }

    #[test]
    fn lf_no_longer_waiting_withdraws_the_request_and_a_late_hook_end_takes_nothing_newer() {
        let mut desk = Desk::default();
        let older = ask(&mut desk, bash(), Focus::Elsewhere).unwrap();
        let newer = ask(&mut desk, question(), Focus::Elsewhere).unwrap();
        // The older hook's end must not take the newer request's popup away.
        assert!(desk.ended("S1", older.id).is_empty());
        assert!(desk.request("S1").is_some());
        let cleared = Event::State {
            at: time::OffsetDateTime::UNIX_EPOCH,
            session: record_d("S1", State::Active, false),
            previous: State::Active,
            previous_needs_you: true,
        };
        let turn = desk.on_events(&[cleared], now(), &PREFS);
        assert_eq!(turn.withdrawn, ["S1"]);
        assert!(desk.request("S1").is_none());
        assert!(desk.ended("S1", newer.id).is_empty());
        assert!(matches!(
            desk.act(NoticeKey::Session("S1".into()), notice::CHOICES[0]),
            Act::Ignored(_)
        ));
    }

    #[test]
    fn the_window_answers_by_option_number_and_a_wrong_number_sends_nothing() {
        let mut desk = Desk::default();
        let mut asked = ask(&mut desk, question(), Focus::Elsewhere).unwrap();
        let picked = |n: usize| FromWindow::Answers {
            answers: vec![Picked {
                chosen: vec![n],
                own: String::new(),
            }],
        };
        assert!(matches!(
            desk.reply("S1", picked(7)),
            Err(NotTaken::Refused(_))
        ));
        assert!(matches!(
            desk.reply("S1", FromWindow::Allow),
            Err(NotTaken::Refused(_))
        ));
        assert_eq!(desk.reply("S1", picked(0)), Ok("answers"));
        assert_eq!(
            asked.reply.try_recv().unwrap(),
            Reply::Answers {
                answers: vec![lf_tray_core::permission::Answer::chose("crates.io")]
            }
        );
        assert_eq!(desk.reply("S1", picked(0)), Err(NotTaken::NoneOpen));
    }

    #[test]
    fn the_trays_view_says_what_waits_since_when_and_what_the_person_dismissed() {
        let mut desk = Desk::default();
        let asked = Event::Asked {
            at: time::OffsetDateTime::UNIX_EPOCH,
            session: waiting(),
        };
        let _ = desk.on_events(&[asked], now(), &PREFS);
        let sessions = [waiting(), record_d("S2", State::Active, false)];
        let view = desk.tray(&sessions, now(), &PREFS);
        assert!(view.since.contains_key("S1") && !view.since.contains_key("S2"));
        assert!(view.dismissed.is_empty() && !view.paused && view.held_back.is_none());
        let _ = desk.popups.dismiss("S1");
        desk.popups.pause(crate::policy::PauseFor::Hour, now());
        let view = desk.tray(&sessions, now(), &PREFS);
        assert_eq!(view.dismissed.iter().collect::<Vec<_>>(), ["S1"]);
        assert!(view.paused && view.held_back.is_some());
    }

    #[test]
    fn settings_become_the_policys_preferences() {
        let never = crate::settings::Settings {
            reminder_minutes: 0,
            ..Default::default()
        };
        assert_eq!(never.preferences().reminder, None);
        let settings = crate::settings::Settings {
            reminder_minutes: 3,
            attached_grace_seconds: 20,
            ..Default::default()
        };
        let prefs = settings.preferences();
        assert_eq!(prefs.reminder, Some(Duration::from_secs(180)));
        assert_eq!(prefs.attached_grace, Duration::from_secs(20));
    }
}
