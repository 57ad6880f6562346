//! The desk: what the person is told — the popups' policy and the agents' open requests —
//! as one state machine with one entry point, [`Desk::step`]: an [`Input`] in (the
//! engine's events, a hook's request or its end, a popup's button, the window's card, a
//! delivery, a pause, the server or the tray coming and going, a deadline), the
//! [`Effect`]s out (show, close, answer or withdraw a hook, go where a click goes, redraw,
//! save). Whether a request gets a popup, which popup a session with an open request
//! shows, withdrawing a request when lf stops saying its agent waits, and what a popup's
//! button means are decided here, tested without a desktop. One task of the shell owns
//! the desk and carries out its effects; everything else reads the [`View`] it publishes.

use lf_tray_core::history::{self, History};
use lf_tray_core::permission::{Client, Refused, Reply, Request};
use lf_tray_core::{Event, SessionKey, SessionRecord};

use crate::answer::{self, Answer, Unsent};
use crate::notice::{self, Notice, NoticeKey, Server};
use crate::policy::{self, Clock, Delivery, Focus, PauseFor, Popups, Preferences};
use crate::push::{Message, Prefs, Presence, Pushed, Pushes};
pub use crate::requests::HookId;
use crate::requests::{NotTaken, Requests};
pub use crate::view::View;

mod answering;
mod keyed;
mod phone;
mod pushing;
pub use phone::PhoneInput;
#[cfg(test)]
mod replay;

#[derive(Default)]
pub struct Desk {
    /// When popups show and go, and the memory of what was told.
    popups: Popups,
    requests: Requests,
    /// The pushes to the person's phone, while a push URL is set.
    pushes: Option<Pushes>,
    /// The engine's first list went by: pushes started later start from the sessions
    /// listed then, not from the empty list before it.
    listed: bool,
    /// Answering from the phone: the buttons pushed, and whether to listen for taps.
    phone: phone::Answering,
    /// The order the open requests' popups were shown in: a key answers the newest.
    shown: crate::keys::Shown,
    /// The keys the desktop gives, and which of them the shell holds now.
    keyboard: keyed::Keyboard,
}

/// What the desk is told.
#[derive(Debug, Clone)]
pub enum Input {
    /// The engine's events, with where the person looks for each session that asked (the
    /// shell's finding: a terminal may take seconds to answer).
    Events {
        batch: Vec<Event>,
        focus: Vec<(SessionRecord, Focus)>,
    },
    /// Nothing from the engine: a deadline came, or a setting changed; what may show now
    /// goes out.
    Tick,
    /// `hook`'s request from `record`'s agent, with whether answering from the popup is
    /// `on` and whether the person looks at that agent's own terminal.
    Ask {
        hook: HookId,
        record: SessionRecord,
        request: Request,
        on: bool,
        focus: Focus,
    },
    /// The hook went away before an answer (Claude ended it: the terminal answered) or
    /// before its popup showed.
    HookEnded(HookId),
    /// A popup's button or body that answers nothing ([`Input::popup`] tells); `token` is
    /// the server's activation token for the click, passed on to where it goes.
    Action {
        key: NoticeKey,
        action: String,
        token: Option<String>,
    },
    /// The person answered a session's open request: from a popup, the window's card, or
    /// any carrier of the request's [`answer::choices`].
    Answer(Answer),
    /// How a `Show` went.
    Delivered {
        notice: Notice,
        delivery: Delivery,
    },
    /// Pause popups (`Some`) or resume them.
    Pause(Option<PauseFor>),
    /// Dismiss a session's popups and reminders until its next transition.
    Dismiss(SessionRecord),
    /// A click reached the session's terminal.
    ClickReached,
    /// A click got nowhere (or the app has something to say once): this popup tells why.
    ClickFailed(Notice),
    /// A tray appeared, or none shows the app: this popup says so.
    TrayCame,
    NoTray(Notice),
    /// The notification server came, went, or turned do-not-disturb on or off.
    Server(Server),
    /// The pushes to the phone started, their settings changed, or they stopped.
    Pushes(PushSetting),
    /// The desktop says where the person is (followed while pushes are on).
    Presence(Presence),
    /// How the push `id` (about `sessions`, for the log) went.
    Pushed {
        id: u64,
        sessions: Vec<String>,
        ok: bool,
    },
    /// Answering from the phone set up, or a message from its reply topic.
    Phone(PhoneInput),
    /// Answering from the keys: the keys the shell can hold, by their triggers (none: off).
    Keys(crate::keys::Triggers),
}

/// What the settings say of the pushes.
#[derive(Debug, Clone)]
pub enum PushSetting {
    /// A push URL was set: what was pushed before (its memory), and the engine's sessions
    /// now (taken only once its first list went by).
    Start {
        prefs: Prefs,
        memory: Pushed,
        sessions: Vec<SessionRecord>,
    },
    Prefs(Prefs),
    Off,
}

/// What the hook that asked is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToHook {
    /// Its popup is on its way: the hook waits for the person.
    Taken,
    /// No popup (why): the hook gives no decision, and the terminal's prompt stands.
    Refused(String),
    /// The person's reply, checked against what was asked.
    Answer(Reply),
    /// No answer will come: lf says the agent no longer waits, or a newer request of the
    /// session took its place.
    Withdrawn,
}

/// What the shell carries out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Show(Notice),
    Close(NoticeKey),
    Hook(HookId, ToHook),
    /// Where a click on the session goes: `route::destination` decides from the session
    /// as it is now.
    Go {
        key: SessionKey,
        action: String,
        token: Option<String>,
    },
    /// The window, at the session when one is named.
    Window(Option<SessionKey>),
    /// The window's answer was sent (the reply's word), or why not.
    Carded(Result<&'static str, NotTaken>),
    /// The tray and the window are to be drawn again.
    Redraw,
    /// The popups' memory changed: these bytes are to be kept.
    Save(Vec<u8>),
    /// A push to deliver; how it went comes back as [`Input::Pushed`]. One at a time.
    Push(Message),
    /// The memory of what was pushed changed: these bytes are to be kept.
    KeepPushed(Vec<u8>),
    /// The session's card on the phone (its push's `sequence` id) is replaced by `title`,
    /// without buttons.
    Card {
        session: String,
        sequence: String,
        title: String,
    },
    /// Listen to the reply topic (a request can be answered from the phone), or stop.
    Listen(bool),
    /// Hold these keys (grab them) and let go of the others: none while nothing waits.
    Grab(Vec<crate::keys::Key>),
    /// A line for the log: what the desk did and why.
    Note(String),
}

impl Input {
    /// A popup's `action` on `key`: an answer when it is one of the choices a request
    /// offers, else a click that goes somewhere.
    pub fn popup(key: NoticeKey, action: &str, token: Option<String>) -> Input {
        match key {
            NoticeKey::Session(request) if answer::is_choice(action) => Input::Answer(Answer {
                request,
                choice: action.to_string(),
                given: answer::Given::default(),
                from: answer::From::Popup { token },
            }),
            key => Input::Action {
                key,
                action: action.to_string(),
                token,
            },
        }
    }
}

impl From<policy::Effect> for Effect {
    fn from(effect: policy::Effect) -> Effect {
        match effect {
            policy::Effect::Show(notice) => Effect::Show(notice),
            policy::Effect::Close(key) => Effect::Close(key),
        }
    }
}

/// Whether a request could get a popup at all, before its session is known: the setting
/// on, a request the tray can answer whole, popups not held back. Asked by the shell from
/// the published view before it walks the processes or asks a terminal, so a request
/// refused anyway costs neither; the desk asks again when the request comes in.
pub fn takes(request: &Request, on: bool, held_back: Option<&str>) -> Result<(), String> {
    if !on {
        return Err("answering from the popup is off".into());
    }
    // A question or plan that cannot be read whole could only be answered in part: the
    // terminal keeps it.
    if let Err(why) = request.prompt() {
        return Err(format!("an unreadable {} ({why:?})", request.tool_name));
    }
    match held_back {
        Some(why) => Err(why.to_string()),
        None => Ok(()),
    }
}

impl Desk {
    pub fn new(history: History) -> Desk {
        Desk {
            popups: Popups::new(history),
            requests: Requests::default(),
            pushes: None,
            listed: false,
            phone: phone::Answering::default(),
            shown: Default::default(),
            keyboard: Default::default(),
        }
    }

    /// When the desk next has something to do by itself (a held popup's due time, a
    /// reminder, a Codex request's time running out), if ever.
    pub fn next_deadline(&self, now: Clock, prefs: &Preferences) -> Option<Clock> {
        let expiry = self
            .requests
            .next_expiry()
            .map(|due| now + due.saturating_duration_since(now.at()));
        let push = self
            .pushes
            .as_ref()
            .and_then(Pushes::next_deadline)
            .map(|due| now + due.saturating_duration_since(now.at()));
        [self.popups.next_deadline(now, prefs), expiry, push]
            .into_iter()
            .flatten()
            .min_by_key(Clock::at)
    }

    /// Take one input; what to carry out, in order.
    pub fn step(&mut self, now: Clock, prefs: &Preferences, input: Input) -> Vec<Effect> {
        let at_the_desk = matches!(
            &input,
            Input::Answer(Answer {
                from: answer::From::Popup { .. } | answer::From::Window,
                ..
            })
        );
        let mut out = self.expire(now);
        out.extend(match input {
            Input::Events { batch, focus } => {
                self.popups
                    .set_focus(focus.iter().map(|(record, focus)| (record, *focus)));
                self.listed |= batch.iter().any(|e| matches!(e, Event::Snapshot { .. }));
                let mut out = self.on_events(&batch, now, prefs);
                out.extend(self.push_events(now, &batch));
                out
            }
            Input::Tick => shows(&self.requests, self.popups.flush(now, prefs)),
            Input::Ask {
                hook,
                record,
                request,
                on,
                focus,
            } => self.ask(hook, record, request, on, focus, now, prefs),
            Input::HookEnded(hook) => self.hook_ended(hook),
            Input::Action { key, action, token } => self.act(key, action, token),
            Input::Answer(answer) => self.answered(answer),
            Input::Delivered { notice, delivery } => self.delivered(&notice, delivery, now, prefs),
            Input::Pause(pause) => self.paused(pause, now, prefs),
            Input::Dismiss(record) => self.dismissed(&record, now, prefs),
            Input::ClickReached => shows(&self.requests, self.popups.click_reached()),
            Input::ClickFailed(notice) => shows(&self.requests, self.popups.click_failed(notice)),
            Input::TrayCame => shows(&self.requests, self.popups.tray_came()),
            Input::NoTray(notice) => shows(&self.requests, self.popups.no_tray(notice)),
            Input::Server(server) => {
                self.popups.set_server(server);
                shows(&self.requests, self.popups.flush(now, prefs))
            }
            Input::Pushes(setting) => self.set_pushes(setting, now),
            Input::Presence(presence) => self.presence(presence, now),
            Input::Pushed { id, sessions, ok } => self.pushed(id, &sessions, ok, now),
            Input::Phone(input) => self.phone_input(input, now),
            Input::Keys(triggers) => vec![self.set_keys(triggers)],
        });
        if let Some(bytes) = self.popups.take_history() {
            out.push(Effect::Save(bytes));
        }
        out.extend(self.push(now));
        out.extend(self.phone_sweep(at_the_desk));
        self.keys_sweep(&mut out);
        out
    }

    /// The hook that asked ended before an answer: its request and popup go.
    fn hook_ended(&mut self, hook: HookId) -> Vec<Effect> {
        let Some(key) = self.requests.withdraw_this(hook) else {
            return Vec::new();
        };
        vec![
            Effect::Note(format!(
                "PERMISSION withdrawn session={key}: the hook ended"
            )),
            Effect::Close(NoticeKey::Session(key)),
            Effect::Redraw,
        ]
    }

    /// The popups paused (until when) or resumed from the tray; what was held comes out
    /// on resuming.
    fn paused(&mut self, pause: Option<PauseFor>, now: Clock, prefs: &Preferences) -> Vec<Effect> {
        match pause {
            Some(pause) => self.popups.pause(pause, now),
            None => self.popups.resume(),
        }
        let mut out = vec![Effect::Note(format!("PAUSE {pause:?}")), Effect::Redraw];
        out.extend(shows(&self.requests, self.popups.flush(now, prefs)));
        out
    }

    /// The person dismissed a session from the tray: its popup goes for good.
    fn dismissed(
        &mut self,
        record: &SessionRecord,
        now: Clock,
        prefs: &Preferences,
    ) -> Vec<Effect> {
        let mut out = vec![Effect::Note(format!("DISMISS id={}", record.id))];
        out.extend(shows(
            &self.requests,
            self.popups.dismiss(&history::key(record)),
        ));
        out.extend(shows(&self.requests, self.popups.flush(now, prefs)));
        out.push(Effect::Redraw);
        out
    }

    /// How a `Show` went.
    fn delivered(
        &mut self,
        notice: &Notice,
        delivery: Delivery,
        now: Clock,
        prefs: &Preferences,
    ) -> Vec<Effect> {
        let marks = self.popups.delivered(notice, delivery);
        let mut out = Vec::new();
        if delivery == Delivery::Shown {
            out.extend(self.popup_shown(&notice.key));
        }
        if marks {
            out.push(Effect::Redraw);
        }
        // Not shown: tried again at the next deadline or server change; a popup
        // that showed a session again may have moved a deadline.
        if delivery != Delivery::Shown || marks {
            out.extend(shows(&self.requests, self.popups.flush(now, prefs)));
        }
        out
    }

    /// Codex's requests whose time ran out go back to its terminal, whose prompt shows
    /// once the hook ends without a decision.
    fn expire(&mut self, now: Clock) -> Vec<Effect> {
        let mut out = Vec::new();
        for (key, hook) in self.requests.expire(now.at()) {
            out.push(Effect::Note(format!(
                "PERMISSION withdrawn session={key}: its time ran out; the terminal asks now"
            )));
            out.push(Effect::Hook(hook, ToHook::Withdrawn));
            out.push(Effect::Close(NoticeKey::Session(key)));
        }
        if !out.is_empty() {
            out.push(Effect::Redraw);
        }
        out
    }

    /// What the desk says now, for the tray and the window to read about the engine's
    /// list by its sessions' keys.
    pub fn view(&self, now: Clock, prefs: &Preferences) -> View {
        let popups = &self.popups;
        // From what the desk holds, which is what waits (not from the list): a view costs
        // the same at 10 sessions as at 10 000, and is read by the listed sessions' keys.
        let marks = || popups.history().marks();
        View {
            held_back: popups.held_back(now, prefs),
            paused: popups.paused(now),
            server: popups.server_present(),
            since: marks().map(|(k, m)| (k.to_string(), m.since)).collect(),
            dismissed: marks()
                .filter(|(_, m)| m.dismissed)
                .map(|(k, _)| k.to_string())
                .collect(),
            unseen: popups.went_unseen().map(str::to_string).collect(),
            requests: self
                .requests
                .all()
                .map(|(key, request)| (key.clone(), request.clone()))
                .collect(),
            recent: popups.history().recent(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn ask(
        &mut self,
        hook: HookId,
        record: SessionRecord,
        request: Request,
        on: bool,
        focus: Focus,
        now: Clock,
        prefs: &Preferences,
    ) -> Vec<Effect> {
        let key = history::key(&record);
        let held_back = self.popups.held_back(now, prefs);
        let refused = takes(&request, on, held_back.as_deref())
            .err()
            .or_else(|| {
                self.popups
                    .dismissed(&key)
                    .then(|| "the session is dismissed".to_string())
            })
            .or_else(|| {
                (focus == Focus::Looking)
                    .then(|| "the person looks at the agent's own terminal".to_string())
            });
        if let Some(why) = refused {
            return vec![Effect::Hook(hook, ToHook::Refused(why))];
        }
        let shown = notice::permission(&record, &request);
        let mut out = vec![Effect::Show(shown), Effect::Hook(hook, ToHook::Taken)];
        // Codex's terminal shows nothing while its hook waits: the popup has a time limit.
        let until = (request.client == Client::Codex).then(|| now.at() + prefs.codex_wait);
        self.phone_asked(&key, hook, request.client, until, now);
        out.extend(self.push_again(&key, &request, now));
        if let Some(older) = self.requests.register(&key, hook, record, request, until) {
            out.push(Effect::Hook(older, ToHook::Withdrawn));
        }
        self.shown.forget(&key);
        out.push(Effect::Note(format!("PERMISSION asked session={key}")));
        out.push(Effect::Redraw);
        out
    }

    /// The engine's events. A session lf no longer says waits has its open request
    /// withdrawn: it was answered elsewhere, and no answer may reach it later.
    fn on_events(&mut self, batch: &[Event], now: Clock, prefs: &Preferences) -> Vec<Effect> {
        let mut out = Vec::new();
        let mut withdrawn = false;
        for key in batch.iter().filter_map(no_longer_waits).map(history::key) {
            if let Some(hook) = self.requests.withdraw(&key) {
                out.push(Effect::Note(format!(
                    "PERMISSION withdrawn session={key}: lf no longer says it waits"
                )));
                out.push(Effect::Hook(hook, ToHook::Withdrawn));
                withdrawn = true;
            }
        }
        let effects = if batch.is_empty() {
            self.popups.flush(now, prefs)
        } else {
            batch
                .iter()
                .flat_map(|event| self.popups.on_event(event, now, prefs))
                .collect()
        };
        out.extend(shows(&self.requests, effects));
        if !batch.is_empty() || withdrawn {
            out.push(Effect::Redraw);
        }
        out
    }
}

/// The policy's popups, each as the desk shows it: a session with an open request keeps
/// the request's popup and its buttons (an ask that arrives after it must not take them
/// away).
fn shows(requests: &Requests, effects: Vec<policy::Effect>) -> Vec<Effect> {
    effects
        .into_iter()
        .map(|effect| match effect {
            policy::Effect::Show(notice) => Effect::Show(requests.in_place_of(notice)),
            other => other.into(),
        })
        .collect()
}

fn session_key(token: &str) -> SessionKey {
    SessionKey::parse(token).unwrap_or_else(|| SessionKey::local(token))
}

/// The session of an event after which lf no longer says its agent waits.
fn no_longer_waits(event: &Event) -> Option<&SessionRecord> {
    match event {
        Event::State {
            session,
            previous_needs_you: true,
            ..
        } if !session.needs_you() => Some(session),
        Event::Resolved { session, .. } | Event::Stopped { session, .. } => Some(session),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::Given;
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
        codex_wait: Duration::from_secs(30),
    };

    fn now() -> Clock {
        Clock::new(Instant::now(), 1_796_126_400, 0)
    }

    fn bash() -> Request {
        Request {
            client: lf_tray_core::permission::Client::Claude,
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

    fn ask(desk: &mut Desk, hook: u64, request: Request, focus: Focus) -> Vec<Effect> {
        let input = Input::Ask {
            hook: HookId(hook),
            record: waiting(),
            request,
            on: true,
            focus,
        };
        desk.step(now(), &PREFS, input)
    }

    fn told(effects: &[Effect], hook: u64) -> Vec<ToHook> {
        effects
            .iter()
            .filter_map(|effect| match effect {
                Effect::Hook(HookId(h), news) if *h == hook => Some(news.clone()),
                _ => None,
            })
            .collect()
    }

    fn refused(effects: &[Effect], hook: u64) -> String {
        match told(effects, hook).as_slice() {
            [ToHook::Refused(why)] => why.clone(),
            other => panic!("not refused: {other:?}"),
        }
    }

    fn click(desk: &mut Desk, action: &str) -> Vec<Effect> {
        let input = Input::popup(NoticeKey::Session("S1".into()), action, None);
        desk.step(now(), &PREFS, input)
    }

    fn notes(effects: &[Effect]) -> Vec<&str> {
        effects
            .iter()
            .filter_map(|effect| match effect {
                Effect::Note(line) => Some(line.as_str()),
                _ => None,
            })
            .collect()
    }

    fn view(desk: &Desk) -> View {
        desk.view(now(), &PREFS)
    }

    #[test]
    fn a_request_gets_its_popup_unless_off_unreadable_held_back_dismissed_or_looked_at() {
        let mut desk = Desk::default();
        let effects = ask(&mut desk, 1, bash(), Focus::Elsewhere);
        assert_eq!(
            effects[..2],
            [
                Effect::Show(notice::permission(&waiting(), &bash())),
                Effect::Hook(HookId(1), ToHook::Taken)
            ]
        );
        assert_eq!(view(&desk).request("S1"), Some(&bash()));

        let off = Input::Ask {
            hook: HookId(2),
            record: waiting(),
            request: bash(),
            on: false,
            focus: Focus::Unknown,
        };
        let off = desk.step(now(), &PREFS, off);
        assert!(refused(&off, 2).contains("off"));
        assert!(!off.iter().any(|e| matches!(e, Effect::Show(_))));
        let unreadable = Request {
            tool_input: serde_json::json!({"questions": []}),
            ..question()
        };
        refused(&ask(&mut desk, 3, unreadable, Focus::Unknown), 3);
        let looked = ask(&mut desk, 4, bash(), Focus::Looking);
        assert!(refused(&looked, 4).contains("looks at"));
        desk.step(now(), &PREFS, Input::Pause(Some(PauseFor::Hour)));
        refused(&ask(&mut desk, 5, bash(), Focus::Elsewhere), 5);
        desk.step(now(), &PREFS, Input::Pause(None));
        let asked = Event::Asked {
            at: time::OffsetDateTime::UNIX_EPOCH,
            session: waiting(),
        };
        let events = Input::Events {
            batch: vec![asked],
            focus: Vec::new(),
        };
        desk.step(now(), &PREFS, events);
        desk.step(now(), &PREFS, Input::Dismiss(waiting()));
        let dismissed = ask(&mut desk, 6, bash(), Focus::Elsewhere);
        assert!(refused(&dismissed, 6).contains("dismissed"));
        // The one taken is still the open one: none of the refused replaced it.
        assert!(told(&click(&mut desk, answer::ALLOW), 1) == [ToHook::Answer(Reply::Allow)]);
    }

    #[test]
    fn a_button_answers_the_open_request_once_and_the_rest_go_where_they_say() {
        let mut desk = Desk::default();
        ask(&mut desk, 1, question(), Focus::Elsewhere);
        // A bare Allow is no answer to a question: nothing is sent, the request stays.
        let bare = click(&mut desk, answer::ALLOW);
        assert!(told(&bare, 1).is_empty());
        assert!(notes(&bare)[0].starts_with("IGNORED allow session=S1"));
        let chosen = click(&mut desk, answer::OPTIONS[1]);
        let answer = Reply::Answers {
            answers: vec![lf_tray_core::permission::Answer::chose("internal")],
        };
        assert_eq!(told(&chosen, 1), [ToHook::Answer(answer)]);
        assert!(chosen.contains(&Effect::Close(NoticeKey::Session("S1".into()))));
        assert!(view(&desk).request("S1").is_none());
        // The second click of a double click finds nothing to answer.
        assert!(told(&click(&mut desk, answer::OPTIONS[1]), 1).is_empty());
        let session = SessionKey::local("S1");
        assert_eq!(
            click(&mut desk, notice::ANSWER),
            [Effect::Window(Some(session.clone()))]
        );
        for action in [notice::OPEN, notice::DEFAULT] {
            assert_eq!(
                click(&mut desk, action),
                [Effect::Go {
                    key: session.clone(),
                    action: action.into(),
                    token: None
                }]
            );
        }
        assert!(notes(&click(&mut desk, notice::EXPIRED))[0].starts_with("UNSEEN session=S1"));
        let burst = Input::Action {
            key: NoticeKey::Burst,
            action: notice::DEFAULT.into(),
            token: None,
        };
        assert_eq!(desk.step(now(), &PREFS, burst), [Effect::Window(None)]);
    }

    #[test]
    fn lf_no_longer_waiting_withdraws_the_request_and_a_late_hook_end_takes_nothing_newer() {
        let mut desk = Desk::default();
        ask(&mut desk, 1, bash(), Focus::Elsewhere);
        // A newer request of the session replaces the older, whose hook gets no answer.
        let newer = ask(&mut desk, 2, question(), Focus::Elsewhere);
        assert_eq!(told(&newer, 1), [ToHook::Withdrawn]);
        // The older hook's end must not take the newer request's popup away.
        assert!(desk
            .step(now(), &PREFS, Input::HookEnded(HookId(1)))
            .is_empty());
        assert!(view(&desk).request("S1").is_some());
        let cleared = Event::State {
            at: time::OffsetDateTime::UNIX_EPOCH,
            session: record_d("S1", State::Active, false),
            previous: State::Active,
            previous_needs_you: true,
        };
        let events = Input::Events {
            batch: vec![cleared],
            focus: Vec::new(),
        };
        let turn = desk.step(now(), &PREFS, events);
        assert_eq!(told(&turn, 2), [ToHook::Withdrawn]);
        assert!(turn.contains(&Effect::Redraw));
        assert!(view(&desk).request("S1").is_none());
        assert!(desk
            .step(now(), &PREFS, Input::HookEnded(HookId(2)))
            .is_empty());
        assert!(told(&click(&mut desk, answer::OPTIONS[0]), 2).is_empty());
    }

    fn codex() -> Request {
        Request {
            client: Client::Codex,
            ..bash()
        }
    }

    /// Codex's terminal shows nothing while its hook waits: its popup offers Answer in the
    /// terminal, a click anywhere that goes there hands the prompt back, and the request
    /// goes back by itself when the person's wait runs out.
    #[test]
    fn a_codex_request_goes_back_to_its_terminal_when_asked_or_when_its_time_runs_out() {
        let mut desk = Desk::default();
        let t0 = now();
        let asked = ask(&mut desk, 1, codex(), Focus::Elsewhere);
        let Some(Effect::Show(popup)) = asked.first() else {
            panic!("no popup: {asked:?}")
        };
        let keys: Vec<&str> = popup.actions.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            [
                notice::DEFAULT,
                answer::ALLOW,
                answer::DENY,
                answer::IN_TERMINAL
            ]
        );
        assert_eq!(told(&asked, 1), [ToHook::Taken]);
        let due = desk.next_deadline(t0, &PREFS).unwrap().at();
        assert!((t0.at() + PREFS.codex_wait..=now().at() + PREFS.codex_wait).contains(&due));
        // The body's click: the hook lets go, and the click goes to the terminal.
        let went = click(&mut desk, notice::DEFAULT);
        assert_eq!(told(&went, 1), [ToHook::Withdrawn]);
        assert!(went.contains(&Effect::Close(NoticeKey::Session("S1".into()))));
        assert!(went.iter().any(|e| matches!(e, Effect::Go { .. })));
        assert!(view(&desk).request("S1").is_none());

        // Unanswered: withdrawn at its deadline, on whatever input comes next.
        ask(&mut desk, 2, codex(), Focus::Elsewhere);
        let due = desk.next_deadline(t0, &PREFS).unwrap();
        assert!(told(&desk.step(t0, &PREFS, Input::Tick), 2).is_empty());
        let expired = desk.step(due, &PREFS, Input::Tick);
        assert_eq!(told(&expired, 2), [ToHook::Withdrawn]);
        assert!(expired.contains(&Effect::Close(NoticeKey::Session("S1".into()))));
        assert_eq!(desk.next_deadline(due, &PREFS), None);

        // Answered in time: Allow, as for Claude; Claude's requests have no time limit.
        ask(&mut desk, 3, codex(), Focus::Elsewhere);
        assert_eq!(
            told(&click(&mut desk, answer::ALLOW), 3),
            [ToHook::Answer(Reply::Allow)]
        );
        ask(&mut desk, 4, bash(), Focus::Elsewhere);
        assert_eq!(desk.next_deadline(t0, &PREFS), None);
        assert!(told(&click(&mut desk, notice::DEFAULT), 4).is_empty());
    }

    #[test]
    fn the_hook_leaving_takes_its_popup_down() {
        let mut desk = Desk::default();
        ask(&mut desk, 7, bash(), Focus::Elsewhere);
        let ended = desk.step(now(), &PREFS, Input::HookEnded(HookId(7)));
        assert!(ended.contains(&Effect::Close(NoticeKey::Session("S1".into()))));
        assert!(view(&desk).request("S1").is_none());
    }

    #[test]
    fn the_window_answers_by_option_number_and_a_wrong_number_sends_nothing() {
        let mut desk = Desk::default();
        ask(&mut desk, 1, question(), Focus::Elsewhere);
        let mut card = |(choice, given): (&str, Given)| {
            let input = Input::Answer(Answer {
                request: "S1".into(),
                choice: choice.into(),
                given,
                from: answer::From::Window,
            });
            desk.step(now(), &PREFS, input)
        };
        let picked = |n: usize| {
            let answers = vec![Picked {
                chosen: vec![n],
                own: String::new(),
            }];
            (
                answer::SEND,
                Given {
                    answers,
                    text: None,
                },
            )
        };
        let carded = |effects: &[Effect]| {
            effects.iter().find_map(|e| match e {
                Effect::Carded(result) => Some(result.clone()),
                _ => None,
            })
        };
        for wrong in [picked(7), (answer::ALLOW, Given::default())] {
            let effects = card(wrong);
            assert!(matches!(carded(&effects), Some(Err(NotTaken::Refused(_)))));
            assert!(told(&effects, 1).is_empty());
        }
        let sent = card(picked(0));
        assert_eq!(carded(&sent), Some(Ok("answers")));
        assert_eq!(
            told(&sent, 1),
            [ToHook::Answer(Reply::Answers {
                answers: vec![lf_tray_core::permission::Answer::chose("crates.io")]
            })]
        );
        assert_eq!(carded(&card(picked(0))), Some(Err(NotTaken::NoneOpen)));
    }

    #[test]
    fn the_view_says_what_waits_since_when_and_what_the_person_dismissed() {
        let mut desk = Desk::default();
        let asked = Event::Asked {
            at: time::OffsetDateTime::UNIX_EPOCH,
            session: waiting(),
        };
        let turn = desk.step(
            now(),
            &PREFS,
            Input::Events {
                batch: vec![asked],
                focus: Vec::new(),
            },
        );
        assert!(turn.iter().any(|e| matches!(e, Effect::Save(_))));
        let tray = desk.view(now(), &PREFS).tray();
        assert!(tray.since.contains_key("S1") && !tray.since.contains_key("S2"));
        assert!(tray.dismissed.is_empty() && !tray.paused && tray.held_back.is_none());
        desk.step(now(), &PREFS, Input::Dismiss(waiting()));
        desk.step(now(), &PREFS, Input::Pause(Some(PauseFor::Hour)));
        let view = desk.view(now(), &PREFS);
        let tray = view.tray();
        assert_eq!(tray.dismissed.iter().collect::<Vec<_>>(), ["S1"]);
        assert!(tray.paused && tray.held_back.is_some());
        assert!(view.dismissed("S1") && !view.dismissed("S2"));
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
