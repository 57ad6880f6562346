//! `lf-tray list` and `lf-tray watch` as processes, against a home written the way lf
//! writes it and the stand-in `lf` (this binary, invoked through a link named `lf`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use lf_sim::{AskSpec, FlowSpec, RunSpec, SimHome};
use serde_json::Value;

/// Long enough for a loaded 2-core CI machine; a passing run waits milliseconds.
const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

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
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_lf-tray"), &lf).unwrap();
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
            .env("LF_SIM_DIR", self.root.join("sim"));
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
        let mut child = self
            .command(&["watch", "--json"], with_lf)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
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
    /// The next event matching `want`, skipping others; fails after the timeout.
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
    let snapshot = watch.expect("snapshot", |e| e["type"] == "snapshot");
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
fn watch_reports_flow_sessions_through_lf_and_actions() {
    let f = Fixture::new();
    let watch = f.watch(true);
    watch.expect("snapshot", |e| e["type"] == "snapshot");
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
    let snapshot = watch.expect("snapshot", |e| e["type"] == "snapshot");
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
    watch.expect("snapshot", |e| e["type"] == "snapshot");
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
