//! The app's state, shared by the event loop, the tray, the popups and the window: the
//! engine, the settings, the desk (the popups' policy and memory, and the agents' open
//! requests), the terminals the tray opened and the pushes.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use lf_tray_core::engine::Engine;
use lf_tray_core::history::{self, History};
use lf_tray_core::terminal::place::{self, Terminals};
use lf_tray_core::{Event, SessionRecord};
use lf_tray_surface::desk::Desk;
use lf_tray_surface::menu;
use tokio::sync::{mpsc, Notify};

use crate::platform::notification::Notifications;
#[cfg(unix)]
use crate::{followed, hook, push};
use lf_tray_surface::policy::{Clock, Effect, PauseFor, Preferences};
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
    /// What the person is told: the popups' policy and memory, the agents' open requests.
    pub(crate) desk: Mutex<Desk>,
    /// Where the popups' memory is kept (`None`: the demo and the command tests keep none).
    pub(crate) history_path: Option<PathBuf>,
    pub(crate) history_writer: OnceLock<std::sync::mpsc::Sender<Vec<u8>>>,
    /// The popups' effects, to the task that shows them (set once the app runs).
    pub(crate) effects: OnceLock<mpsc::UnboundedSender<Effect>>,
    /// Runs the person's `on_event` program.
    pub(crate) hook: hook::Hook,
    /// Nudges the event loop when a deadline may have moved (a pause, settings).
    pub(crate) wake: Notify,
    /// The tray and window are to be drawn again at the loop's next turn though no event
    /// came (a popup that showed a session again took its unseen mark away).
    pub(crate) redraw: AtomicBool,
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

impl Shell {
    pub(crate) fn new(
        engine: Engine,
        settings_path: Option<PathBuf>,
        loaded: settings::Loaded,
    ) -> Shell {
        let warnings = loaded.warning.iter().cloned().collect();
        Shell {
            engine,
            settings: Mutex::new(loaded.settings),
            settings_path,
            settings_warning: loaded.warning,
            desk: Mutex::default(),
            history_path: None,
            history_writer: OnceLock::new(),
            effects: OnceLock::new(),
            hook: hook::Hook::default(),
            wake: Notify::new(),
            redraw: AtomicBool::new(false),
            notifications: OnceLock::new(),
            warnings: Mutex::new(warnings),
            quitting: AtomicBool::new(false),
            focus: Mutex::new(None),
            remote: Vec::new(),
            tray_host: Mutex::new(None),
            no_tray_login: Mutex::new(None),
            terminals: Arc::default(),
            terminals_path: None,
            push: Mutex::new(None),
            listed: AtomicBool::new(false),
            push_status: Arc::default(),
        }
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

    /// Keep the popups' memory in this file, starting from what it holds.
    pub(crate) fn with_history(mut self, path: Option<PathBuf>) -> Shell {
        if let Some(path) = &path {
            let loaded = History::load(path);
            if let Some(warning) = loaded.warning {
                tracing::warn!("{warning}");
                self.warn(warning);
            }
            self.desk = Mutex::new(Desk::new(loaded.history));
        }
        self.terminals_path = path.as_ref().map(|p| p.with_file_name(TERMINALS_FILE));
        if let Some(path) = &self.terminals_path {
            self.terminals = Arc::new(Mutex::new(Terminals::load(path)));
        }
        self.history_path = path;
        self
    }

    /// Write the popups' memory if it changed. The write (two fsyncs) happens on a thread
    /// of its own, so no popup waits for the disk; a newer memory queued behind an older
    /// one replaces it.
    pub(crate) fn save_history(&self) {
        let Some(path) = &self.history_path else {
            return;
        };
        let Some(bytes) = lock(&self.desk).popups.take_history() else {
            return;
        };
        let writer = self.history_writer.get_or_init(|| {
            let (sender, queue) = std::sync::mpsc::channel::<Vec<u8>>();
            let path = path.clone();
            let spawned = std::thread::Builder::new()
                .name("history".into())
                .spawn(move || {
                    while let Ok(mut bytes) = queue.recv() {
                        while let Ok(newer) = queue.try_recv() {
                            bytes = newer;
                        }
                        if let Err(e) = history::write_atomically(&path, &bytes) {
                            tracing::warn!(
                                "could not keep the popups' memory in {}: {e}",
                                path.display()
                            );
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!("could not start the memory's writer: {e}");
            }
            sender
        });
        let _ = writer.send(bytes);
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
        self.wake.notify_one();
    }

    pub(crate) fn settings_warning(&self) -> Option<String> {
        self.settings_warning.clone()
    }

    pub(crate) fn preferences(&self) -> Preferences {
        lock(&self.settings).preferences()
    }

    /// What the tray says about popups.
    pub(crate) fn tray_popups(&self, sessions: &[SessionRecord]) -> menu::Popups {
        let prefs = self.preferences();
        lock(&self.desk).tray(sessions, Clock::system(), &prefs)
    }

    /// Why popups are held back now, if they are.
    pub(crate) fn held_back(&self) -> Option<String> {
        let prefs = self.preferences();
        lock(&self.desk).popups.held_back(Clock::system(), &prefs)
    }

    pub(crate) fn pause(&self, pause: Option<PauseFor>) {
        {
            let popups = &mut lock(&self.desk).popups;
            match pause {
                Some(pause) => popups.pause(pause, Clock::system()),
                None => popups.resume(),
            }
        }
        tracing::info!("PAUSE {pause:?}");
        self.save_history();
        self.wake.notify_one();
    }

    /// Dismiss a session's popups and reminders until its next transition.
    pub(crate) fn dismiss(&self, record: &SessionRecord) {
        let effects = lock(&self.desk).popups.dismiss(&history::key(record));
        tracing::info!("DISMISS id={}", record.id);
        self.save_history();
        self.send(effects);
        self.wake.notify_one();
    }

    pub(crate) fn send(&self, effects: Vec<Effect>) {
        if let Some(deliveries) = self.effects.get() {
            for effect in effects {
                let _ = deliveries.send(effect);
            }
        }
    }

    /// The footer's note while no tray shows the app.
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
