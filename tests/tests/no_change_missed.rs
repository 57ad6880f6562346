//! The engine against the stand-in lf (issue 41, "No change missed"): an ask another
//! process commits while one of the tray's own `lf session list` runs is told within a
//! second, where lf keeps `store_revisions` (E2): (a) during the tray's first list, (b)
//! during a list it ran for no write (lf's quiet deadline's re-check, which today's rule
//! follows with nothing till the safety list), (c) between a list's read and its exit
//! (the stand-in's slow exit). The
//! tray's own runs never make it list again; an lf without the table (D0) is followed by
//! today's rule.
//!
//! `LF_TRAY_IDLE_SECS` lengthens the idle window of
//! `the_trays_own_runs_never_make_it_list_again` (10 s by default) for a measurement.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::Lf;
use lf_tray_core::engine::{Config, Engine};
use lf_tray_core::Event;
use tokio::sync::mpsc::UnboundedReceiver;

/// Long enough for a loaded 2-core machine to run a few lf processes; a passing wait
/// takes well under a second.
const WAIT: Duration = Duration::from_secs(20);
/// What the issue promises: an ask is told within a second of its commit.
const TOLD_WITHIN: Duration = Duration::from_secs(1);
/// The held list of (b) and (c) is the re-check of lf's quiet deadline after a change: the
/// tray's quiet time 2 s rather than lf's 120 s (its re-check comes a second after it),
/// so that the test need not wait two minutes for that list. The ask told only by the
/// next safety list (today's rule), half a minute or more later, fails the test.
const QUIET: Duration = Duration::from_secs(2);
/// How often a wait for a stand-in's knob file looks again: far below anything timed.
const POLL: Duration = Duration::from_millis(10);

/// The tray's engine on a home of the stand-in lf of one generation.
struct Tray {
    lf: Lf,
    engine: Engine,
    events: UnboundedReceiver<Event>,
}

impl Tray {
    /// A home with these sessions (none waiting), and the knob files `knobs` set before
    /// the engine starts; the engine is started, its snapshot not yet taken.
    fn start(
        generation: &'static str,
        sessions: &[&str],
        knobs: &[&str],
        quiet: Option<Duration>,
    ) -> Tray {
        let lf = Lf::new(generation);
        let repo = lf.repo_a().display().to_string();
        for id in sessions {
            lf.ok(&["sim", "new", id, "--title", id, "--cwd", &repo]);
        }
        for knob in knobs {
            fs::write(lf.sim_dir().join(knob), "").unwrap();
        }
        // The stand-in finds its knobs and generation in its environment; tests run in
        // parallel in one process environment, so the engine calls it through a wrapper
        // that sets them; `exec` keeps the pid the engine spawned.
        let wrapper = lf.root().join("lf");
        script(
            &wrapper,
            &format!(
                "#!/bin/sh\nLF_SIM_DIR='{}' LF_SIM_GENERATION='{generation}' exec '{}' \"$@\"\n",
                lf.sim_dir().display(),
                common::LF
            ),
        );
        let mut config = Config::from_env(Some(lf.home()), Some(wrapper));
        config.lf_quiet = quiet;
        let (engine, events) = Engine::start(config);
        Tray { lf, engine, events }
    }

    /// The next event that is not a warning.
    async fn next(&mut self) -> Event {
        loop {
            let event = tokio::time::timeout(WAIT, self.events.recv())
                .await
                .expect("an event in time")
                .expect("the engine runs");
            if !matches!(event, Event::Warning { .. }) {
                return event;
            }
        }
    }

    /// Waits for the first snapshot; returns whether `id` needs the person in it.
    async fn snapshot(&mut self, id: &str) -> bool {
        match self.next().await {
            Event::Snapshot { sessions, .. } => sessions
                .iter()
                .find(|s| s.id == id)
                .unwrap_or_else(|| panic!("{id} listed"))
                .needs_you(),
            other => panic!("the first event is the snapshot: {other:?}"),
        }
    }

    /// Waits until the engine tells that `id` asks the person.
    async fn asked(&mut self, id: &str) {
        loop {
            let event = self.next().await;
            if event.kind() == "asked" && event.session().is_some_and(|s| s.id == id) {
                return;
            }
        }
    }

    /// Waits until the stand-in created the knob file `name` (a list holds).
    async fn until_knob(&self, name: &str) {
        let path = self.lf.sim_dir().join(name);
        let deadline = Instant::now() + WAIT;
        while !path.exists() {
            assert!(Instant::now() < deadline, "{name}: no list held");
            tokio::time::sleep(POLL).await;
        }
    }

    fn set(&self, knob: &str) {
        fs::write(self.lf.sim_dir().join(knob), "").unwrap();
    }

    fn clear(&self, knob: &str) {
        let _ = fs::remove_file(self.lf.sim_dir().join(knob));
    }

    /// Another process, an agent's lf, commits that `id` asks the person; returns when it
    /// exited, its commit done. It is not given the knobs: it never holds.
    async fn ask(&self, id: &str) -> Instant {
        let out = tokio::process::Command::new(common::LF)
            .args(["sim", "ask", id])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.lf.root())
            .env("LF_HOME", self.lf.home())
            .env("LF_SIM_GENERATION", self.lf.generation)
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "lf sim ask {id}: {out:?}");
        Instant::now()
    }

    /// How many `lf session list` the engine ran so far.
    fn lists(&self) -> usize {
        fs::read_to_string(self.lf.sim_dir().join("argv.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter(|line| {
                let call: serde_json::Value = serde_json::from_str(line).unwrap();
                let argv = call["argv"].as_array().unwrap();
                argv.starts_with(&["session".into(), "list".into()])
                    && argv.contains(&"--json".into())
            })
            .count()
    }
}

/// Written by a child `sh`, not by this process: another test's fork could otherwise
/// inherit the open file for a moment, and running a file open for writing fails with
/// "text file busy" (seen under load).
fn script(path: &Path, text: &str) {
    use std::io::Write;
    let mut sh = std::process::Command::new("/bin/sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    sh.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    assert!(
        sh.wait().unwrap().success(),
        "could not write {}",
        path.display()
    );
}

/// The ask committed at `committed` was told by now: within [`TOLD_WITHIN`].
#[track_caller]
fn told_in_time(case: &str, committed: Instant) {
    let took = committed.elapsed();
    eprintln!("{case}: ask committed → told in {took:?}");
    assert!(took < TOLD_WITHIN, "{case}: told after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_committed_while_the_trays_own_list_runs_is_told_within_a_second() {
    let mut tray = Tray::start("e2", &["S-a", "S-b", "S-c"], &["pause-list"], Some(QUIET));
    // (a) The first list read the sessions and holds; the ask commits before it answers.
    tray.until_knob("list-paused").await;
    let committed = tray.ask("S-a").await;
    tray.clear("pause-list");
    assert!(
        !tray.snapshot("S-a").await,
        "the first list read before the ask"
    );
    tray.asked("S-a").await;
    told_in_time("(a) during the first list", committed);

    // (b) The next list, the re-check of the quiet deadline of (a)'s change (run for no
    // write), holds after its read.
    tray.clear("list-paused");
    tray.set("pause-list");
    tray.until_knob("list-paused").await;
    let committed = tray.ask("S-b").await;
    tray.clear("pause-list");
    tray.asked("S-b").await;
    told_in_time("(b) during a list run for no write", committed);

    // (c) The next one holds after it answered, before it ends its Process row and exits.
    tray.set("slow-exit");
    tray.until_knob("exit-held").await;
    let committed = tray.ask("S-c").await;
    tray.clear("slow-exit");
    tray.asked("S-c").await;
    told_in_time("(c) between a list's read and its exit", committed);
    drop(tray.engine);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trays_own_runs_never_make_it_list_again() {
    let idle = std::env::var("LF_TRAY_IDLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_secs);
    // lf's own minute between safety lists, as the tray runs.
    let mut tray = Tray::start("e2", &["S-1"], &[], None);
    assert!(!tray.snapshot("S-1").await);
    let first = tray.lists();
    assert_eq!(first, 1, "the first list");
    // Each list commits its Process row as it starts and as it exits; nothing else
    // writes. Only the safety list may run, a minute after the last: at most one per
    // 30 s, none in 10 s. The window is the measurement, not a wait for a state.
    tokio::time::sleep(idle).await;
    let lists = tray.lists() - first;
    let per_minute = lists as f64 * 60.0 / idle.as_secs_f64();
    eprintln!("{lists} lists in {idle:?} idle after the first ({per_minute:.1} per minute)");
    let allowed = (idle.as_secs() / 30) as usize;
    assert!(lists <= allowed, "{lists} lists in {idle:?}");
    drop(tray.engine);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_lf_without_store_revisions_is_followed_as_before() {
    let mut tray = Tray::start("d0", &["S-a"], &["pause-list"], None);
    tray.until_knob("list-paused").await;
    let db = tray.lf.home().join("loopflow.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let kept: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'store_revisions')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    drop(conn);
    assert!(!kept, "D0 keeps no store_revisions");
    let committed = tray.ask("S-a").await;
    tray.clear("pause-list");
    assert!(!tray.snapshot("S-a").await);
    // Today's rule: a first list during which the database moved is listed once more a
    // second later (DOUBT_RECHECK), which finds the ask.
    tray.asked("S-a").await;
    let took = committed.elapsed();
    eprintln!("d0, during the first list: ask committed → told in {took:?}");
    assert!(took < Duration::from_secs(5), "told after {took:?}");
    drop(tray.engine);
}
