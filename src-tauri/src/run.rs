//! The app's run: the desk's task, which owns the desk (the popups and the agents' open
//! requests) and takes it the engine's events and everything else that happens; the
//! popups delivered on a task of their own; redrawing the tray and the window; and the way
//! out (Quit, Ctrl-C, SIGTERM).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use lf_tray_core::history;
use lf_tray_core::{Event, SessionRecord};
use lf_tray_surface::desk::{Desk, Effect, HookId, Input, ToHook};
use lf_tray_surface::looking;
#[cfg(all(unix, not(target_os = "macos")))]
use lf_tray_surface::notice::NoticeKey;
use lf_tray_surface::policy::{Clock, Delivery, Effect as PopupEffect, Focus, Preferences};
use lf_tray_surface::route::Click;
use tauri::{AppHandle, Runtime};
use tokio::sync::mpsc;

use crate::platform::{focus, page};
use crate::shell::{Shell, ToDesk, Unstarted};
use crate::{hook, logfile};

/// The desk's task: it owns the [`Desk`] and is the only part that changes it. It takes
/// the engine's events, what the rest of the shell tells it, and the desk's own deadlines,
/// one [`Input`] at a time, and carries out the effects: popups to the delivering task,
/// news to the hooks that asked, clicks taken where they go, the memory kept, the tray and
/// the window redrawn from the view it publishes. Ends when the engine stops or Quit.
pub(crate) async fn follow<R: Runtime>(
    app: AppHandle<R>,
    shell: Arc<Shell>,
    start: Unstarted,
    mut events: mpsc::UnboundedReceiver<Event>,
    deliveries: mpsc::UnboundedSender<PopupEffect>,
) {
    let Unstarted {
        mut desk,
        mut letters,
        memory: start_memory,
    } = start;
    let mut outlets = Outlets {
        app: app.clone(),
        shell: Arc::clone(&shell),
        deliveries,
        hooks: HashMap::new(),
        memory: start_memory.map(Memory::new),
    };
    // Runs the person's `on_event` program for each event.
    let program = hook::Hook::default();
    // As published when the desk was made: a change from it is logged and redrawn.
    let mut held_back = shell.held_back();
    // The tray and the window are first filled from the engine's first batch, which holds
    // its first snapshot.
    while !shell.desktop.quitting.load(Ordering::SeqCst) {
        let prefs = shell.preferences();
        let deadline = desk
            .next_deadline(Clock::system(), &prefs)
            .map(|due| due.at());
        let mut card = None;
        let input = tokio::select! {
            event = events.recv() => {
                let Some(event) = event else { break };
                with_queued(event, &mut events, &shell, &program)
            }
            letter = letters.recv() => match letter {
                Some(ToDesk::Input(input)) => input,
                Some(ToDesk::Hook(input, news)) => {
                    if let Input::Ask { hook, .. } = &input {
                        outlets.hooks.insert(*hook, news);
                    }
                    input
                }
                Some(ToDesk::Card(input, told)) => {
                    card = Some(told);
                    input
                }
                Some(ToDesk::Redraw) => {
                    crate::platform::redraw(&app, &shell);
                    continue;
                }
                None => break,
            },
            () = until(deadline) => Input::Tick,
        };
        if shell.desktop.quitting.load(Ordering::SeqCst) {
            outlets.keep_only(&mut desk, &shell.preferences(), input);
            break;
        }
        if let Input::HookEnded(hook) = &input {
            outlets.hooks.remove(hook);
        }
        let mut redraw = false;
        for effect in desk.step(Clock::system(), &prefs, input) {
            redraw |= outlets.carry(effect, &mut card);
        }
        redraw |= publish(&shell, &desk, &prefs, &mut held_back);
        if redraw {
            crate::platform::redraw(&app, &shell);
        }
    }
    outlets.last_words(&mut desk, &mut letters);
}

/// Publish the desk's view for the tray and the window; whether what it holds back
/// changed (logged, and a reason to redraw).
fn publish(
    shell: &Shell,
    desk: &Desk,
    prefs: &Preferences,
    held_back: &mut Option<String>,
) -> bool {
    let view = desk.view(Clock::system(), prefs);
    let changed = view.held_back != *held_back;
    if changed {
        tracing::info!("HELD_BACK {}", view.held_back.as_deref().unwrap_or("no"));
        held_back.clone_from(&view.held_back);
    }
    shell.desk.view.send_replace(Arc::new(view));
    changed
}

/// Where the desk's effects go: the delivering task, the hooks waiting for news, the
/// memory's writer, the phone, the tray and the window.
struct Outlets<R: Runtime> {
    app: AppHandle<R>,
    shell: Arc<Shell>,
    deliveries: mpsc::UnboundedSender<PopupEffect>,
    /// The hooks that asked and wait for news, by their id.
    hooks: HashMap<HookId, mpsc::UnboundedSender<ToHook>>,
    memory: Option<Memory>,
}

impl<R: Runtime> Outlets<R> {
    /// Carry out one effect; `card`: who waits to hear whether the window's answer was
    /// taken. Returns whether the tray and the window are to be redrawn.
    fn carry(&mut self, effect: Effect, card: &mut Option<CardTold>) -> bool {
        let (app, shell) = (&self.app, &self.shell);
        match effect {
            // Popups first: the tray and the window can wait the few milliseconds
            // they take.
            Effect::Show(notice) => {
                let _ = self.deliveries.send(PopupEffect::Show(notice));
            }
            Effect::Close(key) => {
                let _ = self.deliveries.send(PopupEffect::Close(key));
            }
            Effect::Hook(hook, news) => {
                let last = news != ToHook::Taken;
                if let Some(to) = self.hooks.get(&hook) {
                    let _ = to.send(news);
                }
                if last {
                    self.hooks.remove(&hook);
                }
            }
            Effect::Go { key, action, token } => {
                crate::platform::go::go(app, shell, &key, Click::Popup(&action), token)
            }
            Effect::Window(at) => page::show(app, at.as_ref()),
            Effect::Carded(sent) => {
                if let Some(told) = card.take() {
                    let _ = told.send(sent);
                }
            }
            Effect::Redraw => return true,
            Effect::Save(bytes) => {
                if let Some(memory) = &self.memory {
                    memory.keep(bytes);
                }
            }
            Effect::Push(message) => shell.push.push(message),
            Effect::KeepPushed(bytes) => shell.push.keep(bytes),
            Effect::Card {
                sequence, title, ..
            } => shell.push.card(sequence, title),
            Effect::Listen(on) => shell.push.listen(on),
            #[cfg(unix)]
            Effect::Grab(keys) => shell.desktop.keys.hold(keys),
            #[cfg(not(unix))]
            Effect::Grab(_) => {}
            Effect::Note(line) => tracing::info!("{line}"),
        }
        false
    }

    /// Quit: what was told before it is still kept — a push delivered a moment ago, an
    /// answer on its way to a hook, the popups' memory — or the next start pushes and
    /// shows it again. Nothing is drawn or shown any more.
    fn last_words(mut self, desk: &mut Desk, letters: &mut mpsc::UnboundedReceiver<ToDesk>) {
        let prefs = self.shell.preferences();
        while let Ok(letter) = letters.try_recv() {
            let input = match letter {
                ToDesk::Input(input) | ToDesk::Hook(input, _) | ToDesk::Card(input, _) => input,
                ToDesk::Redraw => continue,
            };
            self.keep_only(desk, &prefs, input);
        }
        if let Some(memory) = self.memory.take() {
            memory.close();
        }
        self.shell.desktop.kept.notify_one();
    }

    /// One step of the desk while the app quits: of its effects only what must outlive
    /// the app is done (the memories written at once, news for the hooks sent).
    fn keep_only(&mut self, desk: &mut Desk, prefs: &Preferences, input: Input) {
        for effect in desk.step(Clock::system(), prefs, input) {
            match effect {
                Effect::Save(bytes) => {
                    if let Some(memory) = &self.memory {
                        memory.keep(bytes);
                    }
                }
                Effect::KeepPushed(bytes) => self.shell.push.keep_now(bytes),
                Effect::Hook(hook, news) => {
                    if let Some(to) = self.hooks.get(&hook) {
                        let _ = to.send(news);
                    }
                }
                Effect::Note(line) => tracing::info!("{line}"),
                _ => {}
            }
        }
    }
}

/// Who waits to hear whether the window's answer was taken.
type CardTold =
    tokio::sync::oneshot::Sender<Result<&'static str, lf_tray_surface::requests::NotTaken>>;

/// An event and everything already queued behind it, so a burst rebuilds the menu once,
/// as the desk's input.
fn with_queued(
    event: Event,
    events: &mut mpsc::UnboundedReceiver<Event>,
    shell: &Shell,
    program: &hook::Hook,
) -> Input {
    let mut batch = vec![event];
    while let Ok(event) = events.try_recv() {
        batch.push(event);
    }
    let focus = before_the_desk(shell, program, &batch);
    Input::Events { batch, focus }
}

/// What the shell does with the engine's events before the desk takes them: the log, the
/// person's `on_event` program, the window's warnings, and where the person looks for each
/// session that asked (no popup for a turn handed back in the terminal they look at; a
/// terminal may take seconds to answer, `kitty @ ls`, so it is asked here, once a batch).
fn before_the_desk(
    shell: &Shell,
    runner: &hook::Hook,
    batch: &[Event],
) -> Vec<(SessionRecord, Focus)> {
    let program = shell.settings().on_event;
    for event in batch {
        logfile::event(event);
        if let Some(program) = &program {
            runner.send(program, event);
        }
        if let Event::Warning { path, message, .. } = event {
            shell.warn(match path {
                Some(path) => format!("{}: {message}", path.display()),
                None => message.clone(),
            });
        }
    }
    let focus = looking::gate(batch, || focus::Desk::open(shell.desktop.terminals.now()));
    for (session, _) in focus.iter().filter(|(_, f)| *f == Focus::Looking) {
        tracing::info!("LOOKING_AT session={}: no popup", session.id);
    }
    focus
        .into_iter()
        .map(|(session, focus)| (session.clone(), focus))
        .collect()
}

/// Where the popups' memory is written: on a thread of its own, so no popup waits for the
/// disk (two fsyncs); a newer memory queued behind an older one replaces it.
struct Memory {
    queue: std::sync::mpsc::Sender<Vec<u8>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Memory {
    fn new(path: PathBuf) -> Memory {
        let (queue, queued) = std::sync::mpsc::channel::<Vec<u8>>();
        let spawned = std::thread::Builder::new()
            .name("history".into())
            .spawn(move || {
                while let Ok(mut bytes) = queued.recv() {
                    while let Ok(newer) = queued.try_recv() {
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
        let writer = spawned
            .inspect_err(|e| tracing::warn!("could not start the memory's writer: {e}"))
            .ok();
        Memory { queue, writer }
    }

    fn keep(&self, bytes: Vec<u8>) {
        let _ = self.queue.send(bytes);
    }

    /// The last memory queued is on disk when this returns.
    fn close(self) {
        let Memory { queue, writer } = self;
        drop(queue);
        if let Some(writer) = writer {
            let _ = writer.join();
        }
    }
}

/// Show and close popups in the order the desk decided, apart from [`follow`]: a slow or
/// missing notification server (D-Bus activation can wait 25 s) must not hold up the tray
/// and the window. How each went goes back to the desk.
pub(crate) async fn deliver(shell: Arc<Shell>, mut effects: mpsc::UnboundedReceiver<PopupEffect>) {
    while let Some(effect) = effects.recv().await {
        let Some(notifications) = shell.desktop.notifications.get() else {
            continue;
        };
        match effect {
            PopupEffect::Show(notice) => {
                let delivery = notifications.show(&notice, shell.settings().sound).await;
                #[cfg(all(unix, not(target_os = "macos")))]
                if notice.key == NoticeKey::NoTray && delivery == Delivery::Shown {
                    crate::platform::tray_host::no_tray_told(&shell);
                }
                shell.tell(Input::Delivered { notice, delivery });
            }
            PopupEffect::Close(key) => notifications.close(&key).await,
        }
    }
}

/// Until `deadline`, or for ever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
