//! The app's state, shared by the event loop, the tray, the popups and the window: the
//! engine, the settings, the way to the desk (the popups' policy and memory, and the
//! agents' open requests, owned by one task: `run::follow`) and the view it publishes,
//! the terminals the tray opened and the pushes.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use lf_tray_core::engine::Engine;
use lf_tray_core::history::History;
use lf_tray_core::terminal::place::{self, Terminals};
use lf_tray_core::SessionRecord;
use lf_tray_surface::desk::{Desk, Input, ToHook, View};
use lf_tray_surface::requests::NotTaken;
use tokio::sync::{mpsc, oneshot, watch};

use crate::platform::notification::Notifications;
#[cfg(unix)]
use crate::push;
use lf_tray_surface::policy::{PauseFor, Preferences};
use lf_tray_surface::settings::{self, Settings};

/// The window's footer shows the latest problem and lists this many in its tooltip.
const MAX_WARNINGS: usize = 5;
/// The terminals the tray opened, beside the popups' memory in the state directory.
const TERMINALS_FILE: &str = "terminals.json";

/// What the shell knows of the tray host (`platform::tray_host` follows it): whether one
/// shows the app (`None`: not known yet, or not followed), and the login the no-tray popup
/// on its way tells, kept as told once it was shown.
#[derive(Default)]
pub(crate) struct TrayHost {
    pub(crate) host: std::sync::Mutex<Option<bool>>,
    pub(crate) login: std::sync::Mutex<Option<String>>,
}

/// The app's state, shared by the desk's task, the tray, the notifications and the window.
pub(crate) struct Shell {
    pub(crate) engine: Engine,
    pub(crate) settings: Saved,
    pub(crate) desk: Door,
    pub(crate) desktop: Desktop,
    pub(crate) warnings: Mutex<VecDeque<String>>,
    /// The pushes to the person's phone, while a push URL is set.
    pub(crate) push: push::Phone,
}

/// The way to the desk: what the person is told is decided by the one task that owns it;
/// every other part sends it what happened, and reads what it published.
pub(crate) struct Door {
    to: mpsc::UnboundedSender<ToDesk>,
    /// What the desk says now (popups held back, marks, open requests), published by its
    /// task after each step for the tray and the window.
    pub(crate) view: watch::Sender<Arc<View>>,
}

/// The parts of the person's desktop the shell drives, and whether they are going away.
pub(crate) struct Desktop {
    /// Set once the app runs (the window's command tests run without).
    pub(crate) notifications: OnceLock<Notifications>,
    pub(crate) tray_host: TrayHost,
    pub(crate) terminals: Opened,
    /// Set by Quit: the desk's task stops updating a window and tray that are going away.
    pub(crate) quitting: AtomicBool,
    /// Told by the desk's task once it has ended and what it must keep is on disk.
    pub(crate) kept: tokio::sync::Notify,
    /// The keys the tray holds to answer from the keyboard.
    #[cfg(unix)]
    pub(crate) keys: crate::keyboard::Keyboard,
}

/// The settings as saved, where, what was wrong with the file, and the command line's
/// machines.
pub(crate) struct Saved {
    now: Mutex<Settings>,
    pub(crate) path: Option<PathBuf>,
    pub(crate) warning: Option<String>,
    /// The command line's machines (`--remote`): followed whatever the settings say.
    pub(crate) remote: Vec<String>,
}

/// The terminals the tray opened, by `LF_TERMINAL_ID`, and the file they are kept in
/// (beside the popups' memory) so that a restarted tray still knows them.
pub(crate) struct Opened {
    list: Mutex<Terminals>,
    path: Option<PathBuf>,
}

impl Opened {
    /// The terminals the tray opened, as they are now.
    pub(crate) fn now(&self) -> Terminals {
        lock(&self.list).clone()
    }

    /// Remember a terminal the tray opened, and keep the list on disk.
    pub(crate) fn remember(
        &self,
        id: String,
        opened: &lf_tray_core::terminal::Opened,
        session: &str,
    ) {
        let mut terminals = lock(&self.list);
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
        if let Some(path) = &self.path {
            if let Err(e) = terminals.save(path) {
                tracing::warn!(
                    "could not keep the opened terminals in {}: {e}",
                    path.display()
                );
            }
        }
    }
}

/// What the desk's task is sent.
pub(crate) enum ToDesk {
    Input(Input),
    /// A hook's request (`Input::Ask`), and where the desk's news for that hook goes.
    Hook(Input, mpsc::UnboundedSender<ToHook>),
    /// The window's card (`Input::Answer` from the window), and where whether it was sent goes.
    Card(Input, oneshot::Sender<Result<&'static str, NotTaken>>),
    /// The status line changed outside the engine and the desk (what a machine said about
    /// answering): the tray and the window are drawn again.
    Redraw,
}

/// The desk before its task runs, the letters it is sent meanwhile, and where its memory
/// is kept (`None`: the demo and the command tests keep none).
pub(crate) struct Unstarted {
    pub(crate) desk: Desk,
    pub(crate) letters: mpsc::UnboundedReceiver<ToDesk>,
    pub(crate) memory: Option<PathBuf>,
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
        // What the desk says before its task's first step (a pause kept from the last run,
        // a server assumed there), not an empty view that says otherwise.
        let view = desk.view(
            lf_tray_surface::policy::Clock::system(),
            &loaded.settings.preferences(),
        );
        let pushes = push::Phone::new(
            history
                .as_ref()
                .map(|p| p.with_file_name(push::MEMORY_FILE)),
        );
        #[cfg(unix)]
        let answer_keys = loaded.settings.answer_keys;
        let shell = Shell {
            engine,
            settings: Saved {
                now: Mutex::new(loaded.settings),
                path: settings_path,
                warning: loaded.warning,
                remote: Vec::new(),
            },
            desk: Door {
                to: inbox,
                view: watch::Sender::new(Arc::new(view)),
            },
            desktop: Desktop {
                notifications: OnceLock::new(),
                tray_host: Default::default(),
                terminals: Opened {
                    list: Mutex::new(terminals),
                    path: terminals_path,
                },
                quitting: AtomicBool::new(false),
                kept: tokio::sync::Notify::new(),
                #[cfg(unix)]
                keys: crate::keyboard::Keyboard::new(answer_keys),
            },
            warnings: Mutex::new(warnings),
            push: pushes,
        };
        (
            shell,
            Unstarted {
                desk,
                letters,
                memory: history,
            },
        )
    }

    /// Tell the desk what happened. Once its task has ended (the app quits) there is
    /// nobody left to tell.
    pub(crate) fn tell(&self, input: Input) {
        let _ = self.desk.to.send(ToDesk::Input(input));
    }

    /// Hand the desk a letter that waits for its answer.
    pub(crate) fn send(&self, letter: ToDesk) {
        let _ = self.desk.to.send(letter);
    }

    /// What the desk says now.
    pub(crate) fn view(&self) -> Arc<View> {
        Arc::clone(&self.desk.view.borrow())
    }

    /// Start, change or end the pushes as the settings say.
    pub(crate) fn apply_push(&self) {
        let desk = self.desk.to.clone();
        let tell = Arc::new(move |input| {
            let _ = desk.send(ToDesk::Input(input));
        });
        self.push.apply(&self.settings(), tell, || {
            // Once per push setting: the pushes keep their own copy to start from.
            self.engine
                .sessions()
                .iter()
                .map(|r| (**r).clone())
                .collect()
        });
    }

    pub(crate) fn settings(&self) -> Settings {
        lock(&self.settings.now).clone()
    }

    /// Saved settings apply at once, the machines too: one no longer named is let go (its
    /// ssh ends now), one added is reached, the others keep their connections.
    pub(crate) fn set_settings(&self, settings: Settings) {
        let machines = followed(&settings.machines, &self.settings.remote);
        // The machines followed keep their hook, or take it out, as this one does.
        #[cfg(unix)]
        self.engine
            .links()
            .set_answering(settings.answer_from_popup);
        #[cfg(unix)]
        self.desktop.keys.set_on(settings.answer_keys);
        *lock(&self.settings.now) = settings;
        self.engine.set_machines(machines);
        self.apply_push();
        // Quiet hours, the reminder or the grace may have moved a deadline.
        self.tell(Input::Tick);
    }

    pub(crate) fn preferences(&self) -> Preferences {
        lock(&self.settings.now).preferences()
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
        (*lock(&self.desktop.tray_host.host) == Some(false)).then(|| {
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

/// The machines to follow: the settings' ones, then the command line's (`--remote`), each
/// once.
pub(crate) fn followed(settings: &[String], remote: &[String]) -> Vec<String> {
    let mut machines: Vec<String> = Vec::new();
    for machine in settings.iter().chain(remote) {
        if !machines.contains(machine) {
            machines.push(machine.clone());
        }
    }
    machines
}

/// The shared state's locks: a panic elsewhere while one was held leaves what it guards
/// whole (each change is one assignment or one call), so it stays usable rather than
/// poisoned for the rest of the run.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
