//! `lf-tray list` and `lf-tray watch` as processes, against a home written the way lf
//! writes it and the stand-in `lf` (lf-sim's binary, through a link named `lf`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use lf_sim::{AskSpec, FlowSpec, RunSpec, SimHome};
use serde_json::Value;

/// Long enough for a loaded 2-core CI machine; a passing run waits milliseconds.
const EVENT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long nothing must happen for "told once" to mean something: the engine turns a
/// change into its line within milliseconds (its debounce is 100 ms, capped at 250 ms).
const QUIET_SECOND: Duration = Duration::from_secs(1);

/// lf-sim's stand-in `lf`, which cargo builds beside this package's binaries when the
/// workspace's tests are built (`cargo test --workspace`, as scripts/test.sh runs them).
pub fn stand_in_lf() -> PathBuf {
    let lf = Path::new(env!("CARGO_BIN_EXE_lf-tray")).with_file_name("lf");
    assert!(
        lf.is_file(),
        "no stand-in lf at {}: run `cargo build -p lf-sim --bin lf` first",
        lf.display()
    );
    lf
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    sim: SimHome,
    lf: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let bin = root.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let lf = bin.join("lf");
        std::os::unix::fs::symlink(stand_in_lf(), &lf).unwrap();
        std::fs::create_dir(root.join("sim")).unwrap();
        Fixture {
            sim: SimHome::new(root.join("home")),
            _dir: dir,
            root,
            lf,
        }
    }

    fn home(&self) -> &Path {
        self.sim.home()
    }

    /// `lf-tray` with a clean environment: no lf on PATH or in ~/.local/bin, no inherited
    /// lf variables, so only what the test passes counts.
    fn command(&self, args: &[&str], with_lf: bool) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lf-tray"));
        cmd.args(args)
            .arg("--home")
            .arg(self.home())
            .env_clear()
            .env("HOME", self.root.join("user"))
            .env("PATH", self.root.join("empty"))
            .env("LF_SIM_DIR", self.root.join("sim"))
            // Not the runner's stdin: a watch ends at the end of a stdin pipe, and a CI
            // runner's may be one that is already closed.
            .stdin(Stdio::null());
        // Nor the runner's ignored signals: a job a non-interactive shell put in the
        // background ignores SIGINT, and the tray rightly keeps a signal it was started
        // with ignored (as under nohup). The tests speak of a tray started normally.
        // SAFETY: signal() is async-signal-safe, and only resets dispositions.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        if with_lf {
            cmd.arg("--lf").arg(&self.lf);
        }
        cmd
    }

    fn list(&self, with_lf: bool) -> (Vec<Value>, String) {
        let out = self.command(&["list", "--json"], with_lf).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (serde_json::from_slice(&out.stdout).unwrap(), stderr)
    }

    fn watch(&self, with_lf: bool) -> Watch {
        let child = self
            .command(&["watch", "--json"], with_lf)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Watch::from_child(child)
    }

    fn ask(&self, prompt: &str) -> String {
        self.sim
            .ask(&AskSpec::new(prompt, self.root.join("work tree")))
            .unwrap()
    }
}

struct Watch {
    child: Child,
    lines: Receiver<Value>,
}

impl Watch {
    fn from_child(mut child: Child) -> Watch {
        let (tx, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not one JSON object per line: {line:?}: {e}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    /// The next event matching `want`, skipping others; fails after the timeout.
    #[track_caller]
    fn expect(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(event) if want(&event) => return event,
                Ok(event) => seen.push(event),
                Err(_) => panic!("no {what} within {EVENT_TIMEOUT:?}; saw {seen:#?}"),
            }
        }
    }

    /// The first line, which must be the snapshot.
    #[track_caller]
    fn snapshot(&self) -> Value {
        let first = self
            .lines
            .recv_timeout(EVENT_TIMEOUT)
            .expect("no first line");
        assert_eq!(
            first["type"], "snapshot",
            "the first line is the snapshot: {first}"
        );
        first
    }

    /// Nothing more about any session for a quiet second: what was told was told once. A
    /// bounded absence window, not a wait for a state.
    #[track_caller]
    fn no_more_session_lines(&self, what: &str) {
        std::thread::sleep(QUIET_SECOND);
        let extra: Vec<Value> = self
            .lines
            .try_iter()
            .filter(|e| e["session"].is_object())
            .collect();
        assert!(extra.is_empty(), "{what}: repeated events {extra:#?}");
    }

    #[track_caller]
    fn expect_event(&self, kind: &str, id: &str) -> Value {
        self.expect(&format!("{kind} for {id}"), |e| {
            e["type"] == kind && e["session"]["id"] == id
        })
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ids(sessions: &[Value]) -> Vec<&str> {
    sessions.iter().map(|s| s["id"].as_str().unwrap()).collect()
}

#[test]
fn list_merges_files_and_lf_sorted_by_title_then_id() {
    let f = Fixture::new();
    let zebra = f.ask("Zebra: which release first?\nMore detail");
    let apple = f.ask("Apple: rename the crate?");
    let run = f
        .sim
        .run(&RunSpec::interactive(f.root.join("w"), "Mango refactor"))
        .unwrap();
    f.sim.provider_session(&run).unwrap();
    f.sim
        .flows(&[FlowSpec::new(
            "task_1:design:review:0",
            "Banana plan",
            "review",
            f.root.join("w"),
        )])
        .unwrap();

    let (sessions, stderr) = f.list(true);
    assert_eq!(
        ids(&sessions),
        [apple.as_str(), "task_1:design:review:0", &run, &zebra],
        "{stderr}"
    );
    let ask = &sessions[0];
    assert_eq!(ask["kind"], "ask");
    assert_eq!(ask["state"], "waiting");
    assert_eq!(ask["title"], "Apple: rename the crate?");
    assert_eq!(
        ask["open_argv"],
        serde_json::json!([f.lf.to_str().unwrap(), "session", "open", apple])
    );
    assert_eq!(sessions[1]["kind"], "flow");
    assert_eq!(sessions[1]["title"], "Banana plan");
    assert_eq!(sessions[2]["kind"], "interactive");
    assert_eq!(sessions[2]["state"], "closed");
    assert_eq!(sessions[2]["title"], "Mango refactor");
    assert_eq!(sessions[2]["detail"], "claude:opus");
}

#[test]
fn one_bad_record_hides_nothing_else() {
    let f = Fixture::new();
    let good = f.ask("Still listed");
    f.sim
        .raw(
            "human-sessions/ask_broken.json",
            b"{\"id\": \"ask_broken\", \"title\": ",
        )
        .unwrap();
    f.sim
        .raw(
            "human-sessions/ask_other.json",
            &std::fs::read(f.sim.ask_path(&good)).unwrap(),
        )
        .unwrap();
    let (sessions, stderr) = f.list(true);
    // lf itself fails its whole list on one bad file; the files still show the good Ask.
    assert_eq!(ids(&sessions), [good.as_str()], "{stderr}");
    assert!(
        stderr.contains("ask_broken.json") && stderr.contains("not valid JSON"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ask_other.json") && stderr.contains("does not match its file name"),
        "{stderr}"
    );
    assert!(
        stderr.contains("lf session list"),
        "lf's failure is reported: {stderr}"
    );
}

#[test]
fn list_without_lf_still_reads_the_files_and_says_so() {
    let f = Fixture::new();
    let id = f.ask("Only files here");
    let out = f.command(&["list"], false).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Only files here") && stdout.contains(&id),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No lf found"), "{stderr}");
}

#[test]
fn bad_usage_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_lf-tray"))
        .args(["list", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bogus"));
}

#[test]
fn watch_reports_ask_ready_resolved_and_warnings() {
    let f = Fixture::new();
    let before = f.ask("Already waiting");
    let watch = f.watch(false);
    let snapshot = watch.snapshot();
    assert_eq!(
        ids(snapshot["sessions"].as_array().unwrap()),
        [before.as_str()]
    );
    assert!(snapshot["at"].as_str().unwrap().contains('T'));

    let id = f.ask("Ship macOS first?\nWe have two options.");
    let asked = watch.expect_event("asked", &id);
    assert_eq!(asked["session"]["title"], "Ship macOS first?");
    assert_eq!(
        asked["session"]["prompt"],
        "Ship macOS first?\nWe have two options."
    );

    f.sim
        .set_ready(&id, "Ship macOS; notes in plan.md")
        .unwrap();
    let ready = watch.expect_event("ready", &id);
    assert_eq!(
        ready["session"]["ready_summary"],
        "Ship macOS; notes in plan.md"
    );

    f.sim.raw("human-sessions/ask_bad.json", b"").unwrap();
    let warning = watch.expect("warning", |e| e["type"] == "warning");
    assert!(warning["path"].as_str().unwrap().ends_with("ask_bad.json"));

    f.sim.complete(&id).unwrap();
    watch.expect_event("resolved", &id);
    // The bad file hid nothing: the first Ask is still listed.
    let (sessions, _) = f.list(false);
    assert_eq!(ids(&sessions), [before.as_str()]);

    f.sim.remove_ask(&before).unwrap();
    watch.expect_event("resolved", &before);
}

#[test]
fn watch_reports_a_flow_step_and_its_approval_by_another_lf() {
    let f = Fixture::new();
    let watch = f.watch(true);
    watch.snapshot();
    let flow = FlowSpec::new(
        "task_9:ship:review:0",
        "Ship it",
        "review",
        f.root.join("w"),
    );
    f.sim.flows(&[flow]).unwrap();
    let asked = watch.expect_event("asked", "task_9:ship:review:0");
    assert_eq!(asked["session"]["kind"], "flow");
    let out = Command::new(&f.lf)
        .args([
            "session",
            "approve",
            "--",
            "task_9:ship:review:0",
            "Looks good",
        ])
        .env("LF_HOME", f.home())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    watch.expect_event("resolved", "task_9:ship:review:0");
}

#[test]
fn watch_waits_for_a_home_that_does_not_exist_yet_and_survives_its_deletion() {
    let f = Fixture::new();
    let watch = f.watch(false);
    let snapshot = watch.snapshot();
    assert_eq!(snapshot["sessions"], serde_json::json!([]));
    let id = f.ask("First ask in a new home");
    watch.expect_event("asked", &id);
    std::fs::remove_dir_all(f.home()).unwrap();
    watch.expect_event("resolved", &id);
    let again = f.ask("Asked after the home came back");
    watch.expect_event("asked", &again);
}

#[test]
fn watch_sees_a_client_exit_without_any_file_event() {
    let f = Fixture::new();
    // A real process whose command line names the harness, as an agent's would.
    let claude = f.root.join("claude");
    std::fs::copy("/bin/sleep", &claude).unwrap();
    let mut agent = Command::new(&claude).arg("600").spawn().unwrap();
    let run = f
        .sim
        .run(&RunSpec::interactive(f.root.join("w"), "Live conversation"))
        .unwrap();
    f.sim.provider_session(&run).unwrap();
    let watch = f.watch(false);
    watch.snapshot();
    let started = lf_sim::process_start_time(agent.id()).unwrap();
    f.sim.client(&run, agent.id(), started).unwrap();
    let active = watch.expect_event("state", &run);
    assert_eq!(active["session"]["state"], "active");
    assert_eq!(active["previous"], "closed");
    agent.kill().unwrap();
    agent.wait().unwrap();
    let closed = watch.expect_event("state", &run);
    assert_eq!(closed["session"]["state"], "closed");
    assert_eq!(closed["previous"], "active");
}

#[test]
fn on_lf_generation_c_the_retired_files_are_ignored() {
    let f = Fixture::new();
    // An Ask file an older lf left behind; generation C keeps sessions in SQLite.
    f.ask("Stale ask from before the upgrade");
    let lf = f.root.join("bin/lf-c");
    std::fs::write(
        &lf,
        r#"#!/bin/sh
case "$*" in
  "session --help") printf 'Commands:\n  history  H\n  list  L\n  connect  C\n  import  I\n' ;;
  "session list --json --all --interactive all --limit 0") printf '[{"id":"session_1","kind":"conversation","state":"waiting","title":"New world","attention":"reply","open_argv":["/x/lf","session","connect","session_1"]}]' ;;
  *) echo "Error: unexpected $*" >&2; exit 1 ;;
esac
"#,
    )
    .unwrap();
    std::fs::set_permissions(&lf, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = f
        .command(&["list", "--json", "--lf", lf.to_str().unwrap()], false)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let sessions: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ids(&sessions), ["session_1"]);
    assert_eq!(sessions[0]["kind"], "conversation");
    assert_eq!(sessions[0]["needs_you"], true, "C's attention says so");
    assert_eq!(
        sessions[0]["attention"], "reply",
        "unknown fields pass through"
    );
    assert_eq!(sessions[0]["open_argv"][2], "connect");
}

/// A copy of `sleep` named after the harness, so its command line names it as an agent's
/// would; killed on drop.
struct Agent(Child);

impl Agent {
    fn start(f: &Fixture, harness: &str) -> Agent {
        let exe = f.root.join(harness);
        if !exe.exists() {
            std::fs::copy("/bin/sleep", &exe).unwrap();
        }
        Agent(Command::new(&exe).arg("600").spawn().unwrap())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn started(&self) -> i64 {
        lf_sim::process_start_time(self.pid()).unwrap()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn generation_b_prime_asks_follow_their_session_run() {
    let f = Fixture::new();
    let sim = f.sim.clone().with_generation(lf_sim::Generation::BPrime);
    let watch = f.watch(false);
    watch.snapshot();
    let id = sim
        .ask(&AskSpec::new("Prepared run ask", f.root.join("w")))
        .unwrap();
    let asked = watch.expect_event("asked", &id);
    assert_eq!(
        asked["session"]["state"], "waiting",
        "a prepared Run with no provider yet"
    );
    let run = sim.ask_session_run(&id).unwrap().unwrap();
    sim.provider_session(&run).unwrap();
    let closed = watch.expect_event("state", &id);
    assert_eq!(closed["session"]["state"], "closed");
    let agent = Agent::start(&f, "claude");
    sim.client(&run, agent.pid(), agent.started()).unwrap();
    let active = watch.expect_event("state", &id);
    assert_eq!(active["session"]["state"], "active");
    sim.set_ready(&id, "Done: see notes").unwrap();
    watch.expect_event("ready", &id);
    // The Ask's boundary Run is not listed a second time as an interactive session.
    let (sessions, _) = f.list(false);
    assert_eq!(ids(&sessions), [id.as_str()]);
}

#[test]
fn a_resolved_interactive_session_is_reported_and_gone() {
    let f = Fixture::new();
    let run = f
        .sim
        .run(&RunSpec::interactive(f.root.join("w"), "Short chat"))
        .unwrap();
    let watch = f.watch(false);
    watch.snapshot();
    // Listed only once the provider reported a session.
    f.sim.provider_session_event(&run).unwrap();
    let appeared = watch.expect_event("appeared", &run);
    assert_eq!(appeared["session"]["title"], "Short chat");
    f.sim.resolve(&run).unwrap();
    watch.expect_event("resolved", &run);
}

#[test]
fn a_hanging_lf_is_stopped_and_the_last_good_list_kept() {
    let f = Fixture::new();
    let flow = FlowSpec::new("task_3:f:review:0", "Keep me", "review", f.root.join("w"));
    f.sim.flows(std::slice::from_ref(&flow)).unwrap();
    let mut cmd = f.command(&["watch", "--json", "--lf-timeout", "1"], true);
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let watch = Watch::from_child(child);
    let snapshot = watch.snapshot();
    assert_eq!(
        ids(snapshot["sessions"].as_array().unwrap()),
        ["task_3:f:review:0"]
    );
    std::fs::write(f.root.join("sim/hang"), "").unwrap();
    // A database change makes the engine ask lf again; lf hangs and is stopped.
    f.sim.flows(&[flow]).unwrap();
    let warning = watch.expect("timeout warning", |e| e["type"] == "warning");
    let message = warning["message"].as_str().unwrap();
    assert!(message.contains("lf session list"), "{message}");
    std::fs::remove_file(f.root.join("sim/hang")).unwrap();
    // Nothing was resolved meanwhile: the Flow is still listed.
    let id = f.ask("After the hang");
    watch.expect("the next ask", |e| {
        assert_ne!(e["type"], "resolved", "the last good list was dropped: {e}");
        e["type"] == "asked" && e["session"]["id"] == id.as_str()
    });
    // A list that started while `hang` was still there may be in its 1 s timeout now:
    // each lf must be gone (killed and reaped, not a zombie) once that timeout passed.
    let tray = watch.child.id();
    let calls = std::fs::read_to_string(f.root.join("sim/argv.jsonl")).unwrap();
    for line in calls.lines() {
        let call: Value = serde_json::from_str(line).unwrap();
        let Some(pid) = call["pid"].as_u64() else {
            continue;
        };
        let deadline = Instant::now() + LF_GONE;
        loop {
            // Only the tray's own child counts: the pid may be reused by then.
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let ours = status
                .lines()
                .any(|l| l.split_whitespace().eq(["PPid:", &tray.to_string()]));
            if !ours {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "lf {pid} was left running (or unreaped): {status}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How long an lf that was asked with `--lf-timeout 1` may still run: its timeout, and a
/// wide margin for a busy machine to kill and reap it.
const LF_GONE: Duration = Duration::from_secs(5);

#[test]
fn watches_stay_few_in_a_busy_home() {
    let f = Fixture::new();
    let cwd = f.root.join("w");
    // More Runs than the bound below allows watches: one watch per Run would fail it.
    for i in 0..300 {
        let mut spec = RunSpec::interactive(&cwd, format!("Run {i}"));
        if i % 30 != 0 {
            spec.surface = lf_sim::Surface::Headless;
        }
        let run = f.sim.run(&spec).unwrap();
        if i % 30 == 0 {
            f.sim.provider_session(&run).unwrap();
        }
    }
    let watch = f.watch(false);
    let snapshot = watch.snapshot();
    assert_eq!(snapshot["sessions"].as_array().unwrap().len(), 10);
    let fdinfo = format!("/proc/{}/fdinfo", watch.child.id());
    let watches: usize = std::fs::read_dir(fdinfo)
        .unwrap()
        .flatten()
        .filter_map(|fd| std::fs::read_to_string(fd.path()).ok())
        .map(|info| {
            info.lines()
                .filter(|l| l.starts_with("inotify wd:"))
                .count()
        })
        .sum();
    // Three sources, at most 256 shards, and two per followed Run: never one per Run.
    assert!(watches <= 3 + 256 + 2 * 10, "{watches} inotify watches");
    assert!(watches > 3, "the shards are watched: {watches}");
}

/// Every path under a directory with its size, mode and mtime.
fn tree(dir: &Path) -> Vec<(PathBuf, u64, u32, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            }
            out.push((
                entry.path(),
                meta.len(),
                meta.mode(),
                meta.modified().unwrap(),
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn the_engine_never_writes_under_lfs_home() {
    let f = Fixture::new();
    let id = f.ask("Read me, do not touch me");
    let run = f
        .sim
        .run(&RunSpec::interactive(f.root.join("w"), "Watched"))
        .unwrap();
    f.sim.provider_session(&run).unwrap();
    let agent = Agent::start(&f, "claude");
    f.sim.client(&run, agent.pid(), agent.started()).unwrap();
    f.sim
        .raw("human-sessions/ask_bad.json", b"not json")
        .unwrap();
    let before = tree(f.home());
    let (sessions, _) = f.list(false);
    assert_eq!(sessions.len(), 2);
    {
        let watch = f.watch(false);
        watch.snapshot();
        drop(agent);
        watch.expect_event("state", &run);
    }
    assert_eq!(
        tree(f.home()),
        before,
        "lf's home changed under a read-only observer"
    );
    assert!(f.sim.ask_path(&id).exists());
}

#[test]
fn an_ask_id_that_looks_like_an_option_is_opened_as_an_id() {
    let f = Fixture::new();
    let real = f.ask("Template");
    let mut record: Value =
        serde_json::from_slice(&std::fs::read(f.sim.ask_path(&real)).unwrap()).unwrap();
    record["id"] = "--replace".into();
    f.sim
        .raw(
            "human-sessions/--replace.json",
            serde_json::to_string_pretty(&record).unwrap().as_bytes(),
        )
        .unwrap();
    let (sessions, _) = f.list(false);
    let odd = sessions.iter().find(|s| s["id"] == "--replace").unwrap();
    assert_eq!(
        odd["open_argv"],
        serde_json::json!(["lf", "session", "open", "--", "--replace"])
    );
}

// ---- lf's generations C, D0 and D: sessions in SQLite only ----

/// lf's quiet time for the stand-in in these tests: short, so a quiet transition takes
/// seconds; the benchmark keeps lf's real 120 s.
const QUIET: &str = "2";

/// A home where the stand-in plays generation `generation` (`c`, `d0`, `d`), with two
/// repositories, `alpha` and `beta`.
struct Store {
    f: Fixture,
    generation: &'static str,
}

impl Store {
    fn new(generation: &'static str) -> Store {
        let f = Fixture::new();
        for repo in ["alpha", "beta"] {
            std::fs::create_dir_all(f.root.join(repo).join(".git")).unwrap();
            std::fs::create_dir_all(f.root.join(repo).join("src")).unwrap();
        }
        Store { f, generation }
    }

    fn repo(&self, name: &str) -> PathBuf {
        self.f.root.join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.f.command(args, true);
        cmd.env("LF_SIM_GENERATION", self.generation)
            .env("LF_SIM_QUIET_SECONDS", QUIET)
            .current_dir(self.repo("alpha").join("src"));
        cmd
    }

    fn watch(&self) -> Watch {
        let child = self
            .command(&["watch", "--json", "--lf-quiet", QUIET])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Watch::from_child(child)
    }

    fn list(&self) -> Vec<Value> {
        let out = self.command(&["list", "--json"]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// A change as an agent's own lf makes it: a separate `lf sim …` process.
    fn agent(&self, args: &[&str]) {
        let out = Command::new(&self.f.lf)
            .arg("sim")
            .args(args)
            .env("LF_HOME", self.f.home())
            .env("LF_SIM_GENERATION", self.generation)
            .env("LF_SIM_QUIET_SECONDS", QUIET)
            .output()
            .unwrap();
        assert!(out.status.success(), "lf sim {args:?}: {out:?}");
    }

    /// Sessions created in one transaction, in-process (fast for many).
    fn sessions(&self, specs: &[lf_sim::SessionSpec]) {
        self.f.sim.store().unwrap().create_sessions(specs).unwrap();
    }

    /// The lf runs once none has come for a spell past every list a change may still
    /// bring: the one a second later (a write while a list ran), and on D and E the quiet
    /// re-check `QUIET` + 1 s after it (the watch's `--lf-quiet`); within the events'
    /// timeout.
    fn settled_lf_runs(&self) -> usize {
        let quiet: u64 = QUIET.parse().unwrap();
        let spell = Duration::from_secs(quiet + 2);
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            let runs = self.lf_runs();
            std::thread::sleep(spell);
            if self.lf_runs() == runs {
                return runs;
            }
            assert!(
                Instant::now() < deadline,
                "lf kept running: {} runs",
                self.lf_runs()
            );
        }
    }

    /// How many times any lf ran so far (the stand-in logs each call).
    fn lf_runs(&self) -> usize {
        std::fs::read_to_string(self.f.root.join("sim/argv.jsonl"))
            .map(|log| log.lines().count())
            .unwrap_or(0)
    }
}

fn spec(store: &Store, id: &str, repo: &str) -> lf_sim::SessionSpec {
    lf_sim::SessionSpec::new(id, format!("Title {id}"), store.repo(repo))
}

#[test]
fn every_waiting_session_is_listed_whatever_its_repo_kind_or_number() {
    for generation in ["d", "d0", "c"] {
        let store = Store::new(generation);
        // 160 sessions over two repos: more than lf's default page of 100.
        let specs: Vec<_> = (0..160)
            .map(|i| {
                let mut s = spec(&store, &format!("S-{i:03}"), ["alpha", "beta"][i % 2]);
                if i == 7 {
                    s.interactive = false;
                }
                s
            })
            .collect();
        store.sessions(&specs);
        {
            let mut db = store.f.sim.store().unwrap();
            for id in ["S-007", "S-150", "S-151"] {
                match generation {
                    "c" => db.review_attention(id, Some("reply")).unwrap(),
                    _ => db.activity(id, lf_sim::Activity::Ask).unwrap(),
                }
            }
        }
        // Run from inside `alpha`: lf's default would show only alpha's 100.
        let listed = store.list();
        assert_eq!(listed.len(), 160, "generation {generation}");
        let waiting: Vec<&str> = listed
            .iter()
            .filter(|s| s["needs_you"] == true)
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            waiting,
            ["S-007", "S-150", "S-151"],
            "generation {generation}"
        );
        let headless = listed.iter().find(|s| s["id"] == "S-007").unwrap();
        assert_eq!(
            headless["interactive"], false,
            "a headless session waits too"
        );
        if generation != "c" {
            assert!(headless.get("kind").is_none(), "D has no kind");
            assert_eq!(headless["attention"], "waiting");
            assert_eq!(
                headless["open_argv"][0], "/usr/bin/env",
                "lf's argv verbatim"
            );
            let kinds: Vec<&str> = headless["actions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["kind"].as_str().unwrap())
                .collect();
            assert_eq!(kinds, ["open"], "no Complete, Approve or Iterate on D");
        }
    }
}

#[test]
fn attention_set_cleared_and_completed_by_another_lf_each_arrive_once() {
    for generation in ["d", "d0"] {
        let store = Store::new(generation);
        store.sessions(&[spec(&store, "S-1", "alpha"), spec(&store, "S-2", "beta")]);
        let watch = store.watch();
        let snapshot = watch.snapshot();
        assert_eq!(snapshot["sessions"].as_array().unwrap().len(), 2);
        store.agent(&["ask", "S-2"]);
        let asked = watch.expect_event("asked", "S-2");
        assert_eq!(asked["session"]["needs_you"], true, "{generation}");
        store.agent(&["working", "S-2"]);
        let state = watch.expect_event("state", "S-2");
        assert_eq!(state["session"]["needs_you"], false);
        assert_eq!(state["previous_needs_you"], true);
        store.agent(&["hand-back", "S-1"]);
        watch.expect_event("asked", "S-1");
        store.agent(&["complete", "S-1"]);
        let resolved = watch.expect_event("resolved", "S-1");
        assert_eq!(resolved["session"]["id"], "S-1");
        // Exactly once: nothing more about either within a quiet second.
        watch.no_more_session_lines(generation);
    }
}

#[test]
fn a_session_that_turns_waiting_by_quiet_alone_is_asked_without_any_write() {
    for generation in ["d", "d0"] {
        let store = Store::new(generation);
        store.sessions(&[spec(&store, "S-q", "alpha")]);
        let watch = store.watch();
        watch.snapshot();
        let before = Instant::now();
        // Output without a signal: Waiting once lf's quiet time passes, which no write
        // announces. D's reader arms that deadline itself; on D0 the tray's clock does.
        store.agent(&["quiet", "S-q"]);
        let asked = watch.expect_event("asked", "S-q");
        let took = before.elapsed();
        assert_eq!(asked["session"]["needs_you"], true);
        assert!(
            took >= Duration::from_secs(2),
            "{generation}: asked before the quiet time passed ({took:?})"
        );
    }
}

/// lf's lists held after they read the sessions (the stand-in's `pause-list` knob), so that
/// a test can commit what such a list then misses.
struct HeldLists {
    sim: PathBuf,
}

impl HeldLists {
    fn new(store: &Store) -> HeldLists {
        let sim = store.f.root.join("sim");
        std::fs::write(sim.join("pause-list"), "").unwrap();
        HeldLists { sim }
    }

    /// Waits until a list holds.
    #[track_caller]
    fn until_one_holds(&self, what: &str) {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while !self.sim.join("list-paused").exists() {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn release(self) {
        std::fs::remove_file(self.sim.join("pause-list")).unwrap();
    }
}

impl Store {
    /// The session asks the person, as this generation's lf records it: C's lf has no
    /// agent verbs, and someone's review asks for a reply.
    fn asks(&self, id: &str) {
        match self.generation {
            "c" => {
                let mut db = self.f.sim.store().unwrap();
                db.review_attention(id, Some("reply")).unwrap();
            }
            _ => self.agent(&["ask", id]),
        }
    }
}

#[test]
fn an_ask_committed_while_the_trays_first_list_runs_is_told_within_seconds() {
    for generation in ["c", "d0", "e2"] {
        let store = Store::new(generation);
        store.sessions(&[spec(&store, "S-1", "alpha")]);
        let held = HeldLists::new(&store);
        let watch = store.watch();
        // The tray's first list has read the sessions; the agent's lf commits the ask
        // before that list answers, so the list does not show it.
        held.until_one_holds(&format!("{generation}: the first list never ran"));
        store.asks("S-1");
        let committed = Instant::now();
        held.release();
        let snapshot = watch.snapshot();
        assert_eq!(
            snapshot["sessions"][0]["needs_you"], false,
            "{generation}: {snapshot}"
        );
        // Not at the safety list a minute later: the write came while the tray's own lf
        // ran and looked like its own.
        held_ask_told(&watch, committed, generation);
    }
}

#[test]
fn an_ask_committed_while_a_list_for_a_write_that_changed_nothing_runs_is_told_within_seconds() {
    // Where lf keeps `store_revisions` (E2) a write that changed no session lists nothing;
    // an ask committed while any list runs there is tests/tests/no_change_missed.rs's.
    for generation in ["c", "d0"] {
        let store = Store::new(generation);
        store.sessions(&[spec(&store, "S-1", "alpha")]);
        let watch = store.watch();
        watch.snapshot();
        store.settled_lf_runs();
        let held = HeldLists::new(&store);
        // Someone's lf writes lf's database (its Process row) and changes no session: the
        // tray lists for it, and that list holds after reading the sessions...
        let out = Command::new(&store.f.lf)
            .args(["session", "--help"])
            .env("LF_HOME", store.f.home())
            .env("LF_SIM_GENERATION", generation)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        held.until_one_holds(&format!("{generation}: no list for the write"));
        // ...while the agent's lf commits the ask.
        store.asks("S-1");
        let committed = Instant::now();
        held.release();
        held_ask_told(&watch, committed, generation);
    }
}

/// S-1's ask, committed while a list was held, is told within seconds, not at the safety
/// list a minute later.
#[track_caller]
fn held_ask_told(watch: &Watch, committed: Instant, generation: &str) {
    watch.expect_event("asked", "S-1");
    let took = committed.elapsed();
    eprintln!("{generation}: ask committed while a list was held → asked in {took:?}");
    assert!(
        took < Duration::from_secs(10),
        "{generation}: told after {took:?}"
    );
}

#[test]
fn an_idle_tray_never_wakes_itself_through_its_own_lf_runs() {
    for generation in ["d", "d0", "e2", "c"] {
        let store = Store::new(generation);
        store.sessions(&[spec(&store, "S-1", "alpha")]);
        let watch = store.watch();
        watch.snapshot();
        // Start-up: `lf session --help` (and on D-era builds three more help texts), the
        // first list, where lf keeps no `store_revisions` (C, D0) the list a second after
        // it (the first list wrote its Process row while it ran, and an ask committed then
        // would look the same) and, on D, one reader, which starts after the first
        // snapshot.
        let settled = match generation {
            "d" | "d0" => 6,
            "e2" => 5,
            _ => 3,
        };
        let deadline = Instant::now() + EVENT_TIMEOUT;
        while store.lf_runs() < settled {
            assert!(
                Instant::now() < deadline,
                "{generation}: {} lf runs to start, not {settled}",
                store.lf_runs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // On D the tray follows lf's reader; before D there is none to follow, and on E
        // its reader would sync the person's planning.
        let log = std::fs::read_to_string(store.f.root.join("sim/argv.jsonl")).unwrap();
        assert_eq!(
            log.contains(r#""monitor","work""#),
            generation == "d",
            "{generation}: {log}"
        );
        // Every lf run writes a Process row to the database the tray watches; none of
        // them may cause another.
        std::thread::sleep(Duration::from_secs(5));
        assert_eq!(
            store.lf_runs(),
            settled,
            "{generation}: lf ran while nothing changed"
        );
        drop(watch);
    }
}

#[test]
fn an_lf_upgraded_while_the_tray_runs_is_detected_and_followed() {
    let store = Store::new("d");
    store.sessions(&[spec(&store, "S-new", "alpha")]);
    store
        .f
        .sim
        .store()
        .unwrap()
        .activity("S-new", lf_sim::Activity::Ask)
        .unwrap();
    // The tray starts with an old lf (generation A here), whose files show nothing.
    let wrapper = store.f.root.join("bin/lf-wrapped");
    let script = |generation: &str| {
        format!(
            "#!/bin/sh\nLF_SIM_GENERATION={generation} exec {} \"$@\"\n",
            stand_in_lf().display()
        )
    };
    std::fs::write(&wrapper, script("a")).unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let child = store
        .f
        .command(
            &["watch", "--json", "--lf", wrapper.to_str().unwrap()],
            false,
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let watch = Watch::from_child(child);
    assert_eq!(watch.snapshot()["sessions"].as_array().unwrap().len(), 0);
    // A package manager replaces the program: a new file renamed into place.
    let staged = store.f.root.join("bin/.lf-wrapped.new");
    std::fs::write(&staged, script("d")).unwrap();
    std::fs::set_permissions(&staged, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::rename(&staged, &wrapper).unwrap();
    let asked = watch.expect_event("asked", "S-new");
    assert_eq!(asked["session"]["attention"], "waiting");
}

#[test]
fn a_reader_that_goes_silent_is_started_again_and_followed() {
    let store = Store::new("d");
    store.sessions(&[spec(&store, "S-1", "alpha")]);
    let watch = store.watch();
    watch.snapshot();
    let mute = store.f.root.join("sim/mute-monitor");
    let readers = || {
        std::fs::read_to_string(store.f.root.join("sim/argv.jsonl"))
            .unwrap()
            .matches(r#""monitor","work""#)
            .count()
    };
    // Once the reader runs, let it hang (it sends nothing at all, maybe not even its
    // first frame: silence is silence).
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while readers() < 1 {
        assert!(Instant::now() < deadline, "no reader was started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&mute, "").unwrap();
    let warning = watch.expect("a warning about the silent reader", |e| {
        e["type"] == "warning"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("lf monitor work") && m.contains("sent nothing"))
    });
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("started again"),
        "{warning}"
    );
    std::fs::remove_file(&mute).unwrap();
    let deadline = Instant::now() + EVENT_TIMEOUT;
    while readers() < 2 {
        assert!(Instant::now() < deadline, "no second reader was started");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Changes keep arriving, through the new reader.
    store.agent(&["ask", "S-1"]);
    watch.expect_event("asked", "S-1");
}

// ---- Generation E (loopflow-model.md §10) ------------------------------------------------

fn planning_syncs(store: &Store) -> usize {
    std::fs::read_to_string(store.f.root.join("sim/planning-syncs.jsonl"))
        .map(|log| log.lines().count())
        .unwrap_or(0)
}

#[test]
fn generation_e_is_named_and_followed_without_readers_that_sync_planning() {
    for generation in ["e1", "e2"] {
        let store = Store::new(generation);
        std::fs::create_dir_all(store.repo("gamma").join(".git")).unwrap();
        store.sessions(&[
            spec(&store, "S-a", "alpha"),
            spec(&store, "S-b", "beta"),
            spec(&store, "S-g", "gamma"),
        ]);
        let out = store.command(&["--version", "--verbose"]).output().unwrap();
        let about = String::from_utf8_lossy(&out.stdout);
        assert!(about.contains("(generation E)"), "{generation}: {about}");
        let out = store.command(&["list"]).output().unwrap();
        let status = String::from_utf8_lossy(&out.stderr);
        assert!(status.contains("(generation E)"), "{generation}: {status}");

        let watch = store.watch();
        assert_eq!(watch.snapshot()["sessions"].as_array().unwrap().len(), 3);
        let before = Instant::now();
        store.agent(&["ask", "S-g"]);
        let asked = watch.expect_event("asked", "S-g");
        assert_eq!(asked["session"]["needs_you"], true);
        assert!(
            before.elapsed() < Duration::from_millis(1500),
            "{generation}"
        );
        // The quiet rule holds on E too, through the tray's own clock.
        store.agent(&["quiet", "S-b"]);
        watch.expect_event("asked", "S-b");
        let log = std::fs::read_to_string(store.f.root.join("sim/argv.jsonl")).unwrap();
        assert!(
            !log.contains(r#""monitor","work""#),
            "{generation}: a reader was started on E: {log}"
        );
        assert_eq!(planning_syncs(&store), 0, "{generation}");
    }
}

#[test]
fn why_the_agent_waits_is_told_and_a_new_reason_is_a_new_ask() {
    let store = Store::new("e2");
    store.sessions(&[spec(&store, "S-1", "alpha")]);
    let watch = store.watch();
    watch.snapshot();
    let permission = [
        "status",
        "S-1",
        "blocked",
        "--kind",
        "permission",
        "--title",
        "Run cargo publish --dry-run",
        "--msg",
        "Bash wants to run a command",
    ];
    store.agent(&permission);
    let asked = watch.expect_event("asked", "S-1");
    assert_eq!(
        asked["session"]["reason"],
        serde_json::json!({"kind": "permission", "title": "Run cargo publish --dry-run",
                           "msg": "Bash wants to run a command"})
    );
    // lf's own report comes through as it came.
    let reports = asked["session"]["program_status"]["records"]
        .as_array()
        .unwrap();
    assert_eq!(reports.last().unwrap()["state"], "blocked");
    // The same report again is no news; another one is.
    store.agent(&permission);
    store.agent(&[
        "status",
        "S-1",
        "blocked",
        "--kind",
        "question",
        "--title",
        "Which branch?",
    ]);
    let again = watch.expect("the next line about S-1", |e| e["session"]["id"] == "S-1");
    assert_eq!(again["type"], "asked", "{again}");
    assert_eq!(again["session"]["reason"]["kind"], "question");
    // Cleared: it no longer waits.
    store.agent(&["status", "S-1", "clear"]);
    let state = watch.expect_event("state", "S-1");
    assert_eq!(state["session"]["needs_you"], false);
    assert_eq!(state["session"]["reason"], Value::Null);
}

/// An lf run as in a terminal of the person's: its own session, whose controlling terminal
/// is a fresh pty it reads and writes. lf runs its agent as its child there (E2, §10.6).
/// Killed (with its process group) and reaped when dropped.
struct OnTerminal {
    lf: Child,
    master: std::fs::File,
}

impl OnTerminal {
    fn start(store: &Store, args: &[&str], terminal_id: Option<&str>) -> OnTerminal {
        use std::os::unix::process::CommandExt;
        let (master, slave) = lf_sim::pty();
        let tty = lf_sim::tty_name(&slave);
        let mut command = Command::new(&store.f.lf);
        command
            .args(args)
            .env("LF_HOME", store.f.home())
            .env("LF_SIM_GENERATION", store.generation)
            .env("LF_SIM_QUIET_SECONDS", QUIET)
            .current_dir(store.repo("alpha").join("src"))
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave);
        if let Some(id) = terminal_id {
            // A launcher's mark (Loopflow.app's, or the tray's own terminals): lf lists it.
            command
                .env("LF_TERMINAL_ID", id)
                .env("LF_TERMINAL_TTY", &tty);
        }
        // SAFETY: setsid and ioctl are async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        OnTerminal {
            lf: command.spawn().unwrap(),
            master,
        }
    }

    /// What the person types there.
    fn type_line(&mut self, line: &str) {
        use std::io::Write;
        self.master.write_all(line.as_bytes()).unwrap();
        self.master.write_all(b"\n").unwrap();
    }

    /// The lf and every process on its terminal killed at once, as a crash or the OOM
    /// killer does: nothing is written.
    fn kill_all(&mut self) {
        // SAFETY: signals lf's own process group (it is its session's leader).
        unsafe { libc::kill(-(self.lf.id() as i32), libc::SIGKILL) };
        let _ = self.lf.wait();
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl Store {
    /// Each session's agent pid, as lf's own process list names it, once every one of
    /// `ids` has a live agent.
    fn agent_pids(&self, ids: &[&str]) -> Vec<u32> {
        let lf = |args: &[&str]| -> Value {
            let out = Command::new(&self.f.lf)
                .args(args)
                .env("LF_HOME", self.f.home())
                .env("LF_SIM_GENERATION", self.generation)
                .output()
                .unwrap();
            assert!(out.status.success(), "lf {args:?}: {out:?}");
            serde_json::from_slice(&out.stdout).unwrap()
        };
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            let list = lf(&["session", "list", "--json", "--all", "--limit", "0"]);
            let ps = lf(&["monitor", "ps", "--json"]);
            let pids: Vec<Option<u32>> = ids
                .iter()
                .map(|id| {
                    let record = list.as_array()?.iter().find(|r| r["id"] == *id)?;
                    let agent = record["agent_process_id"].as_str()?;
                    let node = ps["nodes"]
                        .as_array()?
                        .iter()
                        .find(|n| n["id"] == format!("process:{agent}"))?;
                    (record["state"] == "active").then_some(node["pid"].as_u64()? as u32)
                })
                .collect();
            if let Some(pids) = pids.into_iter().collect::<Option<Vec<u32>>>() {
                return pids;
            }
            assert!(Instant::now() < deadline, "no live agents for {ids:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// How many `lf monitor ps` runs were logged so far.
    fn process_lists(&self) -> usize {
        std::fs::read_to_string(self.f.root.join("sim/argv.jsonl"))
            .map(|log| {
                log.lines()
                    .filter(|l| l.contains(r#""monitor","ps""#))
                    .count()
            })
            .unwrap_or(0)
    }
}

fn kill(pid: u32) {
    // SAFETY: signals a process this test started (through lf).
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

#[test]
fn todays_agents_are_found_by_lf_id_and_each_death_is_told_at_once() {
    let store = Store::new("e2");
    store.sessions(&[
        spec(&store, "S-native", "alpha"),
        spec(&store, "S-crash", "alpha"),
        spec(&store, "S-headless", "beta"),
        spec(&store, "S-seen", "beta"),
    ]);
    // Agents as lf runs them: in the person's own terminals (`lf session connect`, no
    // terminal id), headless, and in a terminal whose launcher marked it.
    let mut native = OnTerminal::start(&store, &["session", "connect", "S-native"], None);
    let mut crash = OnTerminal::start(&store, &["session", "connect", "S-crash"], None);
    store.agent(&["agent", "S-headless", "headless"]);
    let mut seen = OnTerminal::start(&store, &["session", "connect", "S-seen"], Some("T-seen"));
    let pids = store.agent_pids(&["S-native", "S-crash", "S-headless", "S-seen"]);
    let (native_agent, headless_agent) = (pids[0], pids[2]);
    let ps_before = store.process_lists();
    let watch = store.watch();
    let snapshot = watch.snapshot();
    let states: Vec<&str> = snapshot["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["active"; 4]);

    // An ask is told at once, whoever's terminal it is in.
    let before = Instant::now();
    store.agent(&["ask", "S-native"]);
    let asked = watch.expect_event("asked", "S-native");
    println!("ask → asked: {:?}", before.elapsed());
    assert_eq!(asked["session"]["needs_you"], true);
    assert_eq!(asked["session"]["terminal_ids"], serde_json::json!([]));

    // The agent killed alone: its lf writes the exit.
    let before = Instant::now();
    kill(native_agent);
    let stopped = watch.expect_event("stopped", "S-native");
    let took = before.elapsed();
    println!("native agent killed alone → stopped: {took:?}");
    assert_eq!(stopped["session"]["state"], "closed");
    assert_eq!(stopped["session"]["needs_you"], false);
    assert!(took < Duration::from_secs(2), "told after {took:?}");
    native.kill_all();

    // Killed with its lf, nothing written: the tray's own watch tells it.
    let before = Instant::now();
    crash.kill_all();
    watch.expect_event("stopped", "S-crash");
    let took = before.elapsed();
    println!("native agent killed with its lf → stopped: {took:?}");
    assert!(took < Duration::from_secs(2), "told after {took:?}");

    let before = Instant::now();
    kill(headless_agent);
    watch.expect_event("stopped", "S-headless");
    let took = before.elapsed();
    println!("headless agent killed → stopped: {took:?}");
    assert!(took < Duration::from_secs(2), "told after {took:?}");

    // The person quits it in the terminal lf lists: a state line, no `stopped`.
    seen.type_line("/exit");
    let quit = watch.expect("the next line about S-seen", |e| {
        e["session"]["id"] == "S-seen"
    });
    assert_eq!(quit["type"], "state", "{quit}");
    assert_eq!(quit["session"]["stopped"], true);
    watch.no_more_session_lines("e2");
    // One process list per new agent at most (the four were new together: one).
    let lists = store.process_lists() - ps_before;
    assert!((1..=4).contains(&lists), "{lists} process lists");
    // And the dead agents, which lf still names, wake nothing while idle.
    let runs = store.settled_lf_runs();
    std::thread::sleep(QUIET_SECOND);
    let log = std::fs::read_to_string(store.f.root.join("sim/argv.jsonl")).unwrap();
    let late: Vec<&str> = log.lines().skip(runs).collect();
    assert!(late.is_empty(), "lf ran while nothing changed: {late:#?}");
}

// --- Nothing left behind: every process the tray starts ends with it ----------------------

/// A stand-in `ssh` first on the tray's PATH: it records its pid, answers the probe with an
/// lf-tray there, and for the watch prints a snapshot of no sessions and then waits, as
/// a connection to an idle machine does. `exec` keeps its pid for the waiting part.
struct StandInSsh {
    dir: PathBuf,
    pids: PathBuf,
}

impl StandInSsh {
    fn new(root: &Path) -> StandInSsh {
        let dir = root.join("ssh-bin");
        std::fs::create_dir(&dir).unwrap();
        let pids = root.join("ssh-pids");
        let text = format!(
            r#"#!/bin/sh
echo $$ >> '{pids}'
for last; do :; done
case "$last" in
  *'command -v'*) echo lf-tray=/far/bin/lf-tray; exit 0 ;;
esac
echo '{{"type":"snapshot","at":"2026-01-01T00:00:00Z","sessions":[]}}'
exec /bin/sleep 600
"#,
            pids = pids.display()
        );
        // Written by a child `sh`: a fork of another test's thread could otherwise hold the
        // file open for writing while it is run ("text file busy").
        let mut sh = Command::new("/bin/sh")
            .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
            .arg(dir.join("ssh"))
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        sh.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        assert!(sh.wait().unwrap().success());
        StandInSsh { dir, pids }
    }

    /// Every ssh the tray ran that is still running.
    fn running(&self) -> Vec<u32> {
        std::fs::read_to_string(&self.pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(|&pid| running(pid))
            .collect()
    }

    /// The ssh of a followed machine: one that passed the probe and now waits.
    fn connected(&self) -> Vec<u32> {
        self.running()
            .into_iter()
            .filter(|pid| cmdline(*pid).starts_with("/bin/sleep"))
            .collect()
    }
}

/// A process that runs: it exists and is not a zombie waiting to be reaped.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// Every running process started by this fixture's trays, found by what they all inherit:
/// the fixture's own `LF_SIM_DIR` (the tray itself has it too).
fn started_here(root: &Path) -> Vec<(u32, String)> {
    let mark = format!("LF_SIM_DIR={}", root.join("sim").display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|&b| b == 0).any(|v| v == mark.as_bytes()) && running(pid) {
            found.push((pid, cmdline(pid)));
        }
    }
    found
}

/// How long what a tray started may take to go after the tray has: the kernel signals
/// them as it exits, and a loaded machine schedules the dying processes within this.
const ALL_GONE: Duration = Duration::from_secs(2);

/// The process audit: nothing this fixture's trays started is still running, waited for
/// within [`ALL_GONE`] after the last tray ended.
#[track_caller]
fn assert_nothing_left(root: &Path) {
    let deadline = Instant::now() + ALL_GONE;
    loop {
        let left = started_here(root);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still running {ALL_GONE:?} after the tray ended: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[track_caller]
fn wait_for<T>(what: &str, within: Duration, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(it) = found() {
            return it;
        }
        assert!(Instant::now() < deadline, "no {what} within {within:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How the process ended, once it did within `within`, and how long that took.
#[track_caller]
fn exit_within(child: &mut Child, within: Duration) -> (std::process::ExitStatus, Duration) {
    let started = Instant::now();
    let status = wait_for("exit of lf-tray", within, || child.try_wait().unwrap());
    (status, started.elapsed())
}

fn signal(pid: u32, name: &str) {
    let sent = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -s {name} {pid}");
}

impl Store {
    /// `lf-tray watch --json --remote box` with the stand-in ssh first on its PATH, over a
    /// generation-D store with a session in `alpha`, so lf's reader runs too.
    fn watch_remote(&self, ssh: &StandInSsh, stdin: Stdio) -> Child {
        self.command(&["watch", "--json", "--remote", "box"])
            .env("PATH", &ssh.dir)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Waits until the tray follows the machine through its ssh and reads the store
    /// through lf's reader; the ssh's pid.
    #[track_caller]
    fn until_following(&self, ssh: &StandInSsh) -> u32 {
        wait_for("ssh to the machine and lf reader", EVENT_TIMEOUT, || {
            let reader = started_here(&self.f.root)
                .iter()
                .any(|(_, argv)| argv.contains("monitor work"));
            match ssh.connected()[..] {
                [pid] if reader => Some(pid),
                _ => None,
            }
        })
    }
}

#[test]
fn sigterm_sigint_and_sigkill_of_the_tray_leave_no_ssh_and_no_lf_reader() {
    for (name, code, killed) in [
        ("TERM", Some(143), None),
        ("INT", Some(130), None),
        ("KILL", None, Some(9)),
    ] {
        let store = Store::new("d");
        store.sessions(&[spec(&store, "S-1", "alpha")]);
        let ssh = StandInSsh::new(&store.f.root);
        let mut tray = store.watch_remote(&ssh, Stdio::null());
        let connection = store.until_following(&ssh);
        signal(tray.id(), name);
        let (status, _) = exit_within(&mut tray, EVENT_TIMEOUT);
        assert_eq!(status.code(), code, "SIG{name}: {status:?}");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            killed,
            "SIG{name}: {status:?}"
        );
        assert_nothing_left(&store.f.root);
        assert!(
            !running(connection),
            "SIG{name}: the ssh {connection} runs on"
        );
    }
}

#[test]
fn twenty_restarts_never_have_two_ssh_for_one_machine() {
    let store = Store::new("d");
    store.sessions(&[spec(&store, "S-1", "alpha")]);
    let ssh = StandInSsh::new(&store.f.root);
    let mut most = 0;
    for round in 0..20 {
        let mut tray = store.watch_remote(&ssh, Stdio::null());
        store.until_following(&ssh);
        let now = ssh.running().len();
        most = most.max(now);
        assert_eq!(now, 1, "round {round}: ssh running {:?}", ssh.running());
        // A restart as the desktop's session manager does it, or a crash.
        signal(tray.id(), ["TERM", "KILL", "INT"][round % 3]);
        exit_within(&mut tray, EVENT_TIMEOUT);
        // Its ssh and reader go within a moment, not with the tray: until they have, the
        // next round would take them for its own (a loaded run did).
        assert_nothing_left(&store.f.root);
    }
    assert_eq!(most, 1);
    assert_nothing_left(&store.f.root);
}

/// What a script that stops listening sees: the watch ends within a second of its stdin
/// closing, and nothing it started is left.
#[test]
fn watch_ends_within_a_second_when_its_stdin_pipe_closes() {
    let store = Store::new("d");
    store.sessions(&[spec(&store, "S-1", "alpha")]);
    let ssh = StandInSsh::new(&store.f.root);
    let mut tray = store.watch_remote(&ssh, Stdio::piped());
    let _stdout = tray.stdout.take();
    store.until_following(&ssh);
    drop(tray.stdin.take());
    let (status, took) = exit_within(&mut tray, Duration::from_secs(1));
    assert!(status.success(), "{status:?}");
    eprintln!("stdin closed → lf-tray watch gone: {took:?}");
    assert_nothing_left(&store.f.root);
}

/// Its reader gone while nothing changes: no event is due, so no write fails; the watch
/// still ends within a second, in JSON and as text.
#[test]
fn watch_ends_within_a_second_when_its_stdout_reader_goes_with_no_event_due() {
    for json in [true, false] {
        let store = Store::new("d");
        store.sessions(&[spec(&store, "S-1", "alpha")]);
        let ssh = StandInSsh::new(&store.f.root);
        let args: &[&str] = if json {
            &["watch", "--json", "--remote", "box"]
        } else {
            &["watch", "--remote", "box"]
        };
        let mut tray = store
            .command(args)
            .env("PATH", &ssh.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(tray.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        assert!(!first.is_empty(), "no first line");
        store.until_following(&ssh);
        drop(stdout);
        let (status, took) = exit_within(&mut tray, Duration::from_secs(1));
        assert!(status.success(), "json {json}: {status:?}");
        eprintln!("json {json}: stdout's reader gone → lf-tray watch gone: {took:?}");
        assert_nothing_left(&store.f.root);
    }
}
