//! The app's state, shared by the event loop, the tray, the popups and the window: the
//! engine, the settings, the way to the desk (the popups' policy and memory, and the
//! agents' open requests, owned by one task: `run::follow`) and the view it publishes,
//! the terminals the tray opened and the pushes.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use lf_tray_core::engine::Engine;
use lf_tray_core::history::History;
use lf_tray_core::terminal::place::{self, Terminals};
use lf_tray_core::{Event, SessionRecord};
use lf_tray_surface::desk::{Desk, Input, ToHook, View};
use lf_tray_surface::requests::NotTaken;
use tokio::sync::{mpsc, oneshot, watch};

use crate::platform::notification::Notifications;
#[cfg(unix)]
use crate::{followed, hook, push};
use lf_tray_surface::policy::{PauseFor, Preferences};
use lf_tray_surface::settings::{self, Settings};

/// The window's footer shows the latest problem and lists this many in its tooltip.
const MAX_WARNINGS: usize = 5;
/// The terminals the tray opened, beside the popups' memory in the state directory.
const TERMINALS_FILE: &str = "terminals.json";

/// The app's state, shared by the event loop, the tray, the notifications and the window.
pub(crate) struct Shell {
    pub(crate) engine: Engine,
    pub(crate) settings: Mutex<Settings>,
    pub(crate) settings_path: Option<PathBuf>,
    pub(crate) settings_warning: Option<String>,
    /// The way to the desk: what the person is told is decided by the one task that owns
    /// it; every other part sends it what happened.
    desk: mpsc::UnboundedSender<ToDesk>,
    /// What the desk says now (popups held back, marks, open requests), published by its
    /// task after each step for the tray and the window.
    pub(crate) view: watch::Sender<Arc<View>>,
    /// Where the popups' memory is kept (`None`: the demo and the command tests keep none).
    pub(crate) history_path: Option<PathBuf>,
    /// Runs the person's `on_event` program.
    pub(crate) hook: hook::Hook,
    /// Set once the app runs (the window's command tests run without).
    pub(crate) notifications: OnceLock<Notifications>,
    pub(crate) warnings: Mutex<VecDeque<String>>,
    /// Set by Quit: the event loop stops updating a window and tray that are going away.
    pub(crate) quitting: AtomicBool,
    /// The session a window being built should scroll to (see `window::show`).
    pub(crate) focus: Mutex<Option<String>>,
    /// The command line's machines (`--remote`): followed whatever the settings say.
    pub(crate) remote: Vec<String>,
    /// The terminals the tray opened, by `LF_TERMINAL_ID`, and the file they are kept in
    /// (beside the popups' memory) so that a restarted tray still knows them.
    pub(crate) terminals: Arc<Mutex<Terminals>>,
    pub(crate) terminals_path: Option<PathBuf>,
    /// Whether a tray shows the app (`None`: not known yet, or not followed).
    pub(crate) tray_host: Mutex<Option<bool>>,
    /// The login the no-tray popup on its way tells, kept as told once it was shown.
    pub(crate) no_tray_login: Mutex<Option<String>>,
    /// The pushes to the person's phone, only while a push URL is set.
    pub(crate) push: Mutex<Option<push::Runner>>,
    /// The engine's first snapshot went by (set under `push`'s lock): pushes started later
    /// start from the sessions listed then, not from the empty list before it.
    pub(crate) listed: AtomicBool,
    /// What the settings panel says about them (how away is told, the last failure).
    pub(crate) push_status: Arc<Mutex<Option<String>>>,
}

/// What the desk's task is sent.
pub(crate) enum ToDesk {
    Input(Input),
    /// A hook's request (`Input::Ask`), and where the desk's news for that hook goes.
    Hook(Input, mpsc::UnboundedSender<ToHook>),
    /// The window's card (`Input::Card`), and where whether it was sent goes.
    Card(Input, oneshot::Sender<Result<&'static str, NotTaken>>),
}

/// The desk before its task runs, and the letters it is sent meanwhile.
pub(crate) struct Unstarted {
    pub(crate) desk: Desk,
    pub(crate) letters: mpsc::UnboundedReceiver<ToDesk>,
}

impl Shell {
    /// The shell, and the desk for the task that will own it: its memory of what was told
    /// is read from `history` (`None`: the demo and the command tests keep none), the
    /// terminals the tray opened from beside it.
    pub(crate) fn new(
        engine: Engine,
        settings_path: Option<PathBuf>,
        loaded: settings::Loaded,
        history: Option<PathBuf>,
    ) -> (Shell, Unstarted) {
        let mut warnings: VecDeque<String> = loaded.warning.iter().cloned().collect();
        let desk = match &history {
            Some(path) => {
                let loaded = History::load(path);
                if let Some(warning) = loaded.warning {
                    tracing::warn!("{warning}");
                    warnings.push_back(warning);
                }
                Desk::new(loaded.history)
            }
            None => Desk::default(),
        };
        let terminals_path = history.as_ref().map(|p| p.with_file_name(TERMINALS_FILE));
        let terminals = match &terminals_path {
            Some(path) => Terminals::load(path),
            None => Terminals::default(),
        };
        let (inbox, letters) = mpsc::unbounded_channel();
        let shell = Shell {
            engine,
            settings: Mutex::new(loaded.settings),
            settings_path,
            settings_warning: loaded.warning,
            desk: inbox,
            view: watch::Sender::new(Arc::default()),
            history_path: history,
            hook: hook::Hook::default(),
            notifications: OnceLock::new(),
            warnings: Mutex::new(warnings),
            quitting: AtomicBool::new(false),
            focus: Mutex::new(None),
            remote: Vec::new(),
            tray_host: Mutex::new(None),
            no_tray_login: Mutex::new(None),
            terminals: Arc::new(Mutex::new(terminals)),
            terminals_path,
            push: Mutex::new(None),
            listed: AtomicBool::new(false),
            push_status: Arc::default(),
        };
        (shell, Unstarted { desk, letters })
    }

    /// Tell the desk what happened. Once its task has ended (the app quits) there is
    /// nobody left to tell.
    pub(crate) fn tell(&self, input: Input) {
        let _ = self.desk.send(ToDesk::Input(input));
    }

    /// Hand the desk a letter that waits for its answer.
    pub(crate) fn send(&self, letter: ToDesk) {
        let _ = self.desk.send(letter);
    }

    /// What the desk says now.
    pub(crate) fn view(&self) -> Arc<View> {
        Arc::clone(&self.view.borrow())
    }

    /// Start, change or end the pushes as the settings say. A push URL set while the app
    /// runs starts from the sessions listed now.
    pub(crate) fn apply_push(&self) {
        let config = push::Config::of(&self.settings());
        let mut runner = lock(&self.push);
        match (config, runner.as_ref()) {
            (None, None) => {}
            (None, Some(_)) => *runner = None,
            (Some(config), Some(running)) => running.set(config),
            (Some(config), None) => {
                let memory = self
                    .history_path
                    .as_ref()
                    .map(|path| path.with_file_name(push::MEMORY_FILE));
                let started = push::Runner::start(config, memory, Arc::clone(&self.push_status));
                // Before the first snapshot an empty list would read as "nothing waits" and
                // prune the memory of what was pushed; that snapshot comes to it anyway.
                if self.listed.load(Ordering::SeqCst) {
                    started.send(&Event::Snapshot {
                        at: time::OffsetDateTime::now_utc(),
                        sessions: self.engine.sessions(),
                    });
                }
                *runner = Some(started);
            }
        }
    }

    /// The settings panel's sentence about pushes, while they are on.
    pub(crate) fn push_status(&self) -> Option<String> {
        lock(&self.push_status).clone()
    }

    /// Remember a terminal the tray opened, and keep the list on disk.
    pub(crate) fn remember_terminal(
        &self,
        id: String,
        opened: &lf_tray_core::terminal::Opened,
        session: &str,
    ) {
        let mut terminals = lock(&self.terminals);
        let at = time::OffsetDateTime::now_utc().unix_timestamp();
        terminals.remember(
            id,
            place::Opened {
                terminal: opened.terminal.clone(),
                pid: opened.pid,
                session: session.to_string(),
                at,
            },
        );
        if let Some(path) = &self.terminals_path {
            if let Err(e) = terminals.save(path) {
                tracing::warn!(
                    "could not keep the opened terminals in {}: {e}",
                    path.display()
                );
            }
        }
    }

    pub(crate) fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    /// Saved settings apply at once, the machines too: one no longer named is let go (its
    /// ssh ends now), one added is reached, the others keep their connections.
    pub(crate) fn set_settings(&self, settings: Settings) {
        let machines = followed(&settings.machines, &self.remote);
        *lock(&self.settings) = settings;
        self.engine.set_machines(machines);
        self.apply_push();
        // Quiet hours, the reminder or the grace may have moved a deadline.
        self.tell(Input::Tick);
    }

    pub(crate) fn settings_warning(&self) -> Option<String> {
        self.settings_warning.clone()
    }

    pub(crate) fn preferences(&self) -> Preferences {
        lock(&self.settings).preferences()
    }

    /// Why popups are held back now, if they are.
    pub(crate) fn held_back(&self) -> Option<String> {
        self.view().held_back.clone()
    }

    pub(crate) fn pause(&self, pause: Option<PauseFor>) {
        self.tell(Input::Pause(pause));
    }

    /// Dismiss a session's popups and reminders until its next transition.
    pub(crate) fn dismiss(&self, record: &SessionRecord) {
        self.tell(Input::Dismiss(record.clone()));
    }

    /// While no tray shows the app: the footer's sentence, and what to do on this desktop.
    pub(crate) fn tray_note(&self) -> Option<(String, String)> {
        (*lock(&self.tray_host) == Some(false)).then(|| {
            (
                lf_tray_surface::tray_host::NOTE.to_string(),
                lf_tray_surface::notice::tray_hint(&crate::platform::desktop::current())
                    .to_string(),
            )
        })
    }

    pub(crate) fn warnings(&self) -> Vec<String> {
        lock(&self.warnings).iter().cloned().collect()
    }

    pub(crate) fn warn(&self, message: String) {
        let mut warnings = lock(&self.warnings);
        if warnings.len() == MAX_WARNINGS {
            warnings.pop_front();
        }
        warnings.push_back(message);
    }
}

/// The shared state's locks: a panic elsewhere while one was held leaves what it guards
/// whole (each change is one assignment or one call), so it stays usable rather than
/// poisoned for the rest of the run.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
