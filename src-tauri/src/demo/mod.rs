//! `lf-tray demo`: the whole app on a throwaway Loopflow home, with scripted agents, so
//! someone without Loopflow sees what it is for: by default today's lf, where claude agents
//! ask permission and a question through Claude Code's hook, answered from the popup or the
//! window; older generations by `--generation`. The home is written by `lf-sim` exactly as lf writes it; lf itself is played by
//! this same binary's hidden `demo-lf` subcommand, behind an `lf` script first on the demo's
//! PATH, which answers Approve, Iterate, Complete and Open the way lf does.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::Duration;

use anyhow::{Context, Result};
use lf_sim::{AskSpec, FlowSpec, RunSpec, SimHome};
use lf_tray_core::engine::Config;

use lf_tray_surface::settings;
use tauri::AppHandle;

mod today;

use today::story_e;

/// Pauses between the story's steps: long enough to read a notification and glance at
/// the tray before the next one arrives, short enough that the tour takes about a minute.
const STEP: Duration = Duration::from_secs(7);

/// The agent process of the demo's interactive session, stopped at the end.
type Agent = Arc<Mutex<Option<Child>>>;

/// The story's one connection to the store, shared with the threads that wait for answers.
type Shared = Arc<Mutex<lf_sim::Store>>;

fn locked(store: &Shared) -> std::sync::MutexGuard<'_, lf_sim::Store> {
    store.lock().unwrap_or_else(|e| e.into_inner())
}

/// Which lf the demo plays: the generation the tray was built from (files, Approve /
/// Iterate), October's (generation D: SQLite only, attention, Open and Move here) or
/// today's (generation E: the agent says why it waits, and an agent can die).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Story {
    A,
    D,
    E,
}

/// The hidden subcommand that plays lf in the demo.
pub const DEMO_LF: &str = "demo-lf";

/// The demo made ready to start: the app's configuration, and what the story plays once
/// the app is up. What it leaves running is stopped by [`Stage::end`].
pub struct Stage {
    pub config: Config,
    pub settings_path: Option<PathBuf>,
    pub loaded: settings::Loaded,
    pub ready: Box<dyn FnOnce(AppHandle) + Send>,
    pub cast: Cast,
}

/// What the demo leaves behind while it runs: its home (removed when dropped) and its
/// agents' processes.
pub struct Cast {
    _dir: tempfile::TempDir,
    agent: Agent,
    /// The two claude agents that ask through the hook: the permission, then the question.
    asking: [Agent; 2],
}

impl Cast {
    /// Stop the agents the story started; the home goes with `self`.
    pub fn end(self) {
        stop(&self.agent);
        self.asking.iter().for_each(stop);
    }
}

/// Write the demo's home and stand-in lf, and set the process's environment to them.
pub fn stage(story_of: Story) -> Result<Stage> {
    let dir = tempfile::Builder::new()
        .prefix("lf-tray-demo-")
        .tempdir()
        .context("create the demo's home")?;
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin)?;
    let exe = std::env::current_exe().context("find lf-tray's own path")?;
    write_lf(&bin.join("lf"), &exe).context("write the stand-in lf")?;
    let project = dir.path().join("projects").join("shop");
    std::fs::create_dir_all(&project)?;
    let sim = SimHome::new(dir.path().join("home"));
    enter(story_of, &sim, &bin, &project)?;
    println!(
        "Loopflow Tray demo: {}.\n\
         Watch the notifications, the tray menu and the window. Its home is {}.\n\
         Quit from the tray menu to end it.",
        plot(story_of),
        sim.home().display()
    );
    let loaded = demo_settings(story_of);
    let settings_path = Some(dir.path().join("settings.json"));
    std::env::set_var("CLAUDE_CONFIG_DIR", dir.path().join("claude"));

    let cast = Cast {
        _dir: dir,
        agent: Arc::default(),
        asking: Default::default(),
    };
    let story_agent = Arc::clone(&cast.agent);
    let story_asking = cast.asking.clone();
    let ready = Box::new(move |app: AppHandle| {
        std::thread::spawn(move || {
            let told = match story_of {
                Story::A => story(&sim, &project, &bin, &story_agent),
                Story::D => story_d(&sim, &project),
                Story::E => story_e(&app, &sim, &project, &bin, &story_agent, &story_asking),
            };
            if let Err(e) = told {
                eprintln!("lf-tray demo: the simulated agent stopped: {e:#}");
            }
        });
    });
    Ok(Stage {
        config: Config::from_env(None, None),
        settings_path,
        loaded,
        ready,
        cast,
    })
}

/// Everything started from here on (the engine's lf, terminals the person opens) sees the
/// demo's home and stand-in lf, and none of a real Run's context. Still one thread.
fn enter(story_of: Story, sim: &SimHome, bin: &Path, project: &Path) -> Result<()> {
    for (name, value) in sim.env() {
        std::env::set_var(name, value);
    }
    std::env::set_var("LF_BIN", bin.join("lf"));
    if story_of != Story::A {
        // The stand-in plays a newer lf; its repository is a checkout lf can see.
        let generation = if story_of == Story::D { "d" } else { "e2" };
        std::env::set_var("LF_SIM_GENERATION", generation);
        std::fs::create_dir_all(project.join(".git"))?;
    }
    for name in lf_tray_core::RUN_CONTEXT_VARS.iter().chain(&["LF_SIM_DIR"]) {
        std::env::remove_var(name);
    }
    Ok(())
}

/// What the person is told the story will show.
fn plot(story_of: Story) -> &'static str {
    match story_of {
        Story::A => "a simulated agent will ask, get ready and resolve over about a minute",
        Story::D => {
            "on October's lf (generation D), simulated agents will wait for you and move on"
        }
        Story::E => {
            "on today's lf (generation E), simulated agents will ask permission, ask questions \
             (one you answer from the popup) and stop"
        }
    }
}

/// The person's settings, but with the demo's own home and lf, whatever the settings point
/// at, and answering its agent's question from the popup. They are kept in the demo's own
/// directory, as Claude Code's are: nothing changed in its panel, and no hook entry,
/// reaches the person's.
fn demo_settings(story_of: Story) -> settings::Loaded {
    let mut loaded = settings::default_path()
        .as_deref()
        .map(settings::load)
        .unwrap_or_default();
    loaded.settings.home = None;
    loaded.settings.lf_path = None;
    loaded.settings.answer_from_popup = story_of == Story::E;
    loaded
}

fn say(line: &str) {
    println!("demo: {line}");
}

/// The scripted minute.
fn story(sim: &SimHome, project: &Path, bin: &Path, agent: &Agent) -> Result<()> {
    sleep(STEP / 2);
    say("an agent works in a terminal (an Interactive session, listed as Active)");
    let run = sim.run(&RunSpec::interactive(
        project,
        "Fix the flaky checkout test",
    ))?;
    sim.provider_session(&run)?;
    let pid = start_agent(bin, agent)?;
    sim.client(&run, pid, lf_sim::process_start_time(pid)?)?;

    sleep(STEP);
    say("an agent asks you a question (lf ask): a notification, and the tray turns amber");
    let mut question = AskSpec::new(
        "Which release target should we ship first?\n\n\
         The Linux .deb is built and signed. macOS still waits on notarization, \
         which usually takes a day. Shipping Linux first gets testers going today.",
        project,
    );
    question.detail = Some("release-plan".into());
    let ask = sim.ask(&question)?;

    sleep(STEP);
    say("a Flow reaches a human review step: Approve or Iterate it in the window");
    let task = "task_5c0ffee5c0ffee5c0ffee5c0ffee5c0f";
    let mut flow = FlowSpec::new(
        format!("{task}:ship:review-plan:0"),
        "Move settings to a JSON file",
        "review-plan",
        project,
    );
    flow.work = Some(format!("task:{task}"));
    sim.flows(std::slice::from_ref(&flow))?;

    sleep(STEP);
    say("the asking agent has its answer ready: Complete it from the window");
    sim.set_ready(
        &ask,
        "Ship Linux first; macOS follows once notarization clears. Notes in docs/release.md.",
    )?;

    sleep(STEP);
    say("another agent asks...");
    let mut other = AskSpec::new(
        "May I delete the legacy CSV importer?\n\nNothing has called it since March.",
        project,
    );
    other.detail = Some("cleanup".into());
    let other = sim.ask(&other)?;

    sleep(STEP);
    say("...and someone answers it in a terminal: its notification goes away by itself");
    sim.set_ready(&other, "Deleted; the tests still pass.")?;
    sim.complete(&other)?;
    sim.remove_ask(&other)?;

    sleep(STEP);
    say("the interactive agent's terminal closes: the session is no longer Active");
    stop(agent);

    sleep(STEP);
    say("the Flow step's agent marks its plan ready: the notification offers Review…");
    flow.ready_summary = Some(
        "Plan: read the old INI once, write settings.json atomically, keep INI as a fallback \
         for one release."
            .into(),
    );
    sim.flows(&[flow])?;

    say("your turn: Approve or Iterate the Flow, Complete the Ask, try Pause notifications in the tray. Quit from the tray to end the demo.");
    Ok(())
}

/// Today's lf: conversations in lf's database, whose agents' attention turns `waiting`
/// and back; no Ask records, no Complete.
fn story_d(sim: &SimHome, project: &Path) -> Result<()> {
    use lf_sim::{Activity, SessionSpec};
    let mut store = sim.store()?;
    let session = |id: &str, title: &str, provider: &str, work: &str| {
        let mut spec = SessionSpec::new(id, title, project);
        spec.provider = Some(provider.into());
        spec.model = Some(
            if provider == "codex" {
                "gpt-5-codex"
            } else {
                "opus"
            }
            .into(),
        );
        spec.work_path = Some(work.into());
        spec
    };
    sleep(STEP / 2);
    say("two agents work on today's lf (generation D): listed, not waiting");
    let cache = "SESSION-cache-eviction";
    let sync = "SESSION-sync-worker";
    store.create_sessions(&[
        session(
            cache,
            "Decide the cache eviction policy",
            "codex",
            "product / LOO-412",
        ),
        session(
            sync,
            "Refactor the sync worker",
            "claude",
            "product / LOO-430",
        ),
    ])?;
    store.activity(cache, Activity::Working)?;
    store.activity(sync, Activity::Working)?;

    sleep(STEP);
    say("the codex agent asks for an approval: attention turns waiting, a notification comes");
    store.activity(cache, Activity::Ask)?;

    sleep(STEP);
    say("the claude agent ends its turn: it waits for you too");
    store.activity(sync, Activity::HandBack)?;

    sleep(STEP);
    say("someone answers the codex agent elsewhere: its notification goes away by itself");
    store.activity(cache, Activity::Working)?;

    sleep(STEP);
    say("the codex conversation is completed: it leaves the list");
    store.complete(cache)?;

    say("your turn: Open the waiting session in a terminal from the notification, the tray or the window. Quit from the tray to end the demo.");
    Ok(())
}

/// The demo's `lf`: a script that hands its arguments to `lf-tray demo-lf`. A script rather
/// than a link, so nothing in the product depends on the name it was started under.
fn write_lf(path: &Path, exe: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let exe = exe.to_str().context("lf-tray's path is not UTF-8")?;
    let script = format!(
        "#!/bin/sh\nexec {} {} \"$@\"\n",
        lf_tray_core::terminal::shell_quote(exe),
        DEMO_LF
    );
    std::fs::write(path, script)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

fn start_agent(bin: &Path, agent: &Agent) -> Result<u32> {
    let sleep_program = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .context("no sleep program to play the agent")?;
    let claude = bin.join("claude");
    std::os::unix::fs::symlink(&sleep_program, &claude)?;
    // An hour: the demo stops it long before; the bound only matters if the demo is killed.
    let child = Command::new(&claude)
        .arg("3600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("start the simulated agent")?;
    let pid = child.id();
    *agent.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
    Ok(pid)
}

fn stop(agent: &Agent) {
    if let Some(mut child) = agent.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = child.kill();
        let _ = child.wait();
    }
}
