//! Loopflow Tray's desktop surface: a thin Tauri v2 shell over the engine in `lf-tray-core`
//! and the decisions in `lf-tray-surface`.
//!
//! How it fits together: the engine watches lf's sessions and sends events. One task
//! ([`run::follow`]) takes each event to the three surfaces: the tray menu and icon
//! (rebuilt on the main thread), the window (a `board` message with the whole list), and
//! the popups' policy (`lf_tray_surface::policy::Popups`), whose effects the platform module
//! shows and closes. The window acts only through the commands in [`window`], which let it
//! ask for the list and for an action a listed session offers — never for a command line.

#![cfg(feature = "desktop")]

mod click;
#[cfg(feature = "demo")]
mod demo;
mod gnome_extension;
mod hook;
#[cfg(unix)]
mod keyboard;
mod logfile;
#[cfg(unix)]
mod permission;
mod platform;
#[cfg(unix)]
mod pressed;
mod push;
mod quit;
#[cfg(unix)]
mod remote_answer;
mod run;
mod shell;

use std::path::PathBuf;
use std::sync::Arc;

use lf_tray_core::engine::{Config, Engine};
use lf_tray_core::history::History;
use lf_tray_core::Event;
use lf_tray_surface::settings;
use tauri::{AppHandle, Manager, RunEvent, Runtime};
use tokio::sync::mpsc;

use platform::notification::Notifications;
use platform::{autostart, desktop, notification, page, tray, tray_host, window};
use shell::Shell;

/// How `lf-tray` (no subcommand) was started.
#[derive(Debug, Clone, Default)]
pub struct DesktopOptions {
    /// `--home DIR`: lf's home, instead of the settings' or the environment's.
    pub home: Option<PathBuf>,
    /// `--lf PATH`: the lf program, instead of the settings' or the one found.
    pub lf: Option<PathBuf>,
    /// `--hidden`: start in the tray only (the login start).
    pub start_hidden: bool,
    /// `--remote DEST`: machines to follow besides the settings' ones.
    pub machines: Vec<String>,
}

/// The tray app on the user's Loopflow home. Returns when the user quits.
pub fn run_desktop(options: DesktopOptions) -> anyhow::Result<()> {
    logfile::init();
    let settings_path = settings::default_path();
    let loaded = settings_path
        .as_deref()
        .map(settings::load)
        .unwrap_or_default();
    // The command line wins over the settings, which win over the environment.
    let home = options.home.or_else(|| loaded.settings.home.clone());
    let lf = options.lf.or_else(|| loaded.settings.lf_path.clone());
    let mut config = Config::from_env(home, lf);
    config.machines = shell::followed(&loaded.settings.machines, &options.machines);
    start(
        config,
        settings_path,
        loaded,
        Start {
            hidden: options.start_hidden,
            single_instance: true,
            history: History::path(),
            remote: options.machines,
        },
        |_| {},
    )
}

/// The whole app on a simulated Loopflow with a scripted agent: `lf-tray demo`.
#[cfg(feature = "demo")]
pub fn run_demo(generation: lf_tray_core::Generation) -> anyhow::Result<()> {
    logfile::init();
    use lf_tray_core::Generation;
    let stage = demo::stage(match generation {
        Generation::D | Generation::D0 => demo::Story::D,
        Generation::E => demo::Story::E,
        Generation::A | Generation::B | Generation::C | Generation::Unknown => demo::Story::A,
    })?;
    let result = start(
        stage.config,
        stage.settings_path,
        stage.loaded,
        Start {
            hidden: false,
            single_instance: false,
            history: None,
            remote: Vec::new(),
        },
        stage.ready,
    );
    stage.cast.end();
    result
}

/// The hidden subcommand that plays lf in the demo.
#[cfg(feature = "demo")]
pub use demo::DEMO_LF;

pub(crate) struct Start {
    pub hidden: bool,
    /// A second `lf-tray` shows this one's window instead of starting (not for the demo,
    /// which should run beside a real tray).
    pub single_instance: bool,
    /// Where the popups' memory lives (not for the demo, whose sessions are make-believe).
    pub history: Option<PathBuf>,
    /// The command line's machines, kept when saved settings change the others.
    pub remote: Vec<String>,
}

/// Run the app until the user quits. `ready` runs once everything is set up.
pub(crate) fn start(
    config: Config,
    settings_path: Option<PathBuf>,
    loaded: settings::Loaded,
    start: Start,
    ready: impl FnOnce(AppHandle) + Send + 'static,
) -> anyhow::Result<()> {
    desktop::check()?;
    tracing::info!(
        "START lf-tray {} pid={}",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    async_runtime()?;
    let mut app = tauri::Builder::default();
    if start.single_instance {
        // Registered first, as the plugin requires, so a second instance stops early.
        app = app.plugin(tauri_plugin_single_instance::init(|app, argv, _cwd| {
            tracing::info!("SECOND_INSTANCE");
            if !argv.iter().any(|arg| arg == autostart::HIDDEN_ARG) {
                page::show(app, None);
            }
        }));
    }
    let hidden = start.hidden;
    let history_path = start.history;
    let remote = start.remote;
    let app = builder(app)
        .setup(move |app| {
            // A tray app: no Dock icon (NOT VERIFIED, macOS is not built here).
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            // Started here, after the single-instance check: a second `lf-tray` exits
            // before it reads anything. The window's commands run once setup is done.
            let (engine, events) = tauri::async_runtime::block_on(async { Engine::start(config) });
            let (mut shell, desk) = Shell::new(engine, settings_path, loaded, history_path);
            shell.settings.remote = remote;
            let shell = Arc::new(shell);
            app.manage(Arc::clone(&shell));
            setup(app.handle(), shell, desk, events, hidden)?;
            ready(app.handle().clone());
            Ok(())
        })
        .build(tauri::generate_context!("../tauri.conf.json"))?;
    app.run_return(|_, event| {
        // Closing the window does not end the app, which lives in the tray until Quit,
        // whose `exit(0)` carries a code and is let through.
        if let RunEvent::ExitRequested {
            code: None, api, ..
        } = event
        {
            api.prevent_exit();
        }
    });
    Ok(())
}

/// Workers of the app's tokio runtime. Its work is waiting (lf's output, the bus, timers,
/// the socket); a second worker keeps one slow step (a long lf list parsed, a popup's bus
/// call) from holding up the rest. The machine's core count is no reason for more: Tauri's
/// own runtime starts one worker per core, which on a 16-core desktop is 16 threads idle
/// all day (measured with `TOKIO_WORKER_THREADS=16`: 27 threads in the hidden tray instead
/// of 13, each with its stack and a share of malloc's arenas).
const WORKERS: usize = 2;

/// Give Tauri the app's runtime before anything asks it for its default one. The workers
/// live as long as the process, as the children they spawn require (see
/// `lf_tray_core::end_with_tray`).
fn async_runtime() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()?;
    tauri::async_runtime::set(runtime.handle().clone());
    // Tauri holds only a handle: the runtime itself must never be dropped.
    std::mem::forget(runtime);
    Ok(())
}

/// The app's commands and state: the window's (shared with its command tests) and the
/// tray's. The [`Shell`] is managed by the caller.
fn builder<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    window::handled(builder).manage(tray::Shown::default())
}

fn setup<R: Runtime>(
    app: &AppHandle<R>,
    shell: Arc<Shell>,
    desk: shell::Unstarted,
    events: mpsc::UnboundedReceiver<Event>,
    hidden: bool,
) -> tauri::Result<()> {
    popups(app, &shell);
    if tray::at_start() {
        tray::create(app, click::on_menu)?;
    }
    let (deliveries, queued) = mpsc::unbounded_channel();
    tauri::async_runtime::spawn(run::deliver(Arc::clone(&shell), queued));
    tauri::async_runtime::spawn(quit::on_signal(app.clone(), Arc::clone(&shell)));
    #[cfg(all(unix, not(target_os = "macos")))]
    tauri::async_runtime::spawn(tray_host::follow_host(
        app.clone(),
        Arc::clone(&shell),
        tray_host::follow(),
        click::on_menu,
    ));
    #[cfg(all(unix, not(target_os = "macos")))]
    tauri::async_runtime::spawn(tray_host::tell_gnome_focus_setup(Arc::clone(&shell)));
    #[cfg(unix)]
    answering(&shell);
    shell.apply_push();
    tauri::async_runtime::spawn(run::follow(app.clone(), shell, desk, events, deliveries));
    if !hidden {
        page::show(app, None);
    }
    tracing::info!("READY");
    Ok(())
}

/// The popups' server: how a click on a popup and a change of server reach the desk, and
/// the bus connection opened now, so the first popup does not wait for it.
fn popups<R: Runtime>(app: &AppHandle<R>, shell: &Arc<Shell>) {
    let handle = app.clone();
    let on_action: notification::OnAction =
        Arc::new(move |key, action, token| click::on_notification(&handle, key, &action, token));
    let weak = Arc::downgrade(shell);
    let on_server: notification::OnServer = Arc::new(move |server| {
        if let Some(shell) = weak.upgrade() {
            tracing::info!("SERVER {server:?}");
            shell.tell(lf_tray_surface::desk::Input::Server(server));
        }
    });
    #[cfg(all(unix, not(target_os = "macos")))]
    notification::gnome::follow(Arc::clone(&on_server));
    #[cfg(all(unix, not(target_os = "macos")))]
    notification::dnd::follow(Arc::clone(&on_server));
    let _ = shell.desktop.notifications.set(Notifications::new(
        notification::icon(),
        on_action,
        on_server,
    ));
    // The bus connection is opened now, so the first popup does not wait for it.
    let early = Arc::clone(shell);
    tauri::async_runtime::spawn(async move {
        if let Some(notifications) = early.desktop.notifications.get() {
            notifications.connect().await;
        }
    });
}

/// The agents' requests heard, here and on the machines followed, and the agents' hooks
/// set to the settings.
#[cfg(unix)]
fn answering(shell: &Arc<Shell>) {
    tauri::async_runtime::spawn(permission::serve(Arc::clone(shell)));
    tauri::async_runtime::spawn(pressed::serve(Arc::clone(shell)));
    // The machines followed are told too, each as its link comes up: on, each keeps
    // the hook there; off, each takes its entry out. Their requests are heard from
    // before any machine is told.
    let arrivals = shell.engine.links().arrivals();
    shell
        .engine
        .links()
        .set_answering(shell.settings().answer_from_popup);
    tauri::async_runtime::spawn(remote_answer::serve(Arc::clone(shell), arrivals));
    // Put back at each start while on: the entry may have been removed by hand, or
    // the binary moved since. Off, it is taken out: the switch may have been turned
    // off in settings.json while the tray was stopped, and a hook left behind would
    // outlive an uninstall. Only the tray's own entry goes; a file without one is not
    // written.
    let settings = shell.settings();
    let started = Arc::clone(shell);
    std::thread::spawn(move || {
        use lf_tray_core::permission::Client;
        for client in [Client::Claude, Client::Codex] {
            let on = permission::answering(&settings, client);
            if let Err(why) = permission::agent_hook(client, on) {
                started.warn(why);
            }
        }
    });
}
