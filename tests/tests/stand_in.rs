//! The stand-in `lf`, run as a program the way the tray runs lf.

use std::fs;
use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use lf_sim::{AskSpec, FlowSpec, RunSpec, SimHome};
use serde_json::Value;

const LF: &str = env!("CARGO_BIN_EXE_lf");

struct Sim {
    dir: tempfile::TempDir,
    home: SimHome,
}

impl Sim {
    fn new() -> Sim {
        let dir = tempfile::tempdir().unwrap();
        let home = SimHome::new(dir.path().join("home"));
        fs::create_dir(dir.path().join("sim")).unwrap();
        Sim { dir, home }
    }

    fn sim_dir(&self) -> PathBuf {
        self.dir.path().join("sim")
    }

    fn command(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("LF_SIM_DIR", self.sim_dir())
            // lf prints no backtrace with its errors, whatever the environment says.
            .env("RUST_BACKTRACE", "1")
            .envs(self.home.env())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        command
    }

    fn lf(&self, args: &[&str]) -> Output {
        self.command(LF, args).output().unwrap()
    }

    /// Runs lf, expecting success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.lf(args);
        assert!(out.status.success(), "lf {args:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs lf, expecting exit code `code`; returns stderr.
    fn fails(&self, code: i32, args: &[&str]) -> String {
        let out = self.lf(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "lf {args:?}: {}",
            stderr(&out)
        );
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        stderr(&out)
    }

    fn list(&self) -> Vec<Value> {
        serde_json::from_str(&self.ok(&["session", "list", "--json", "--all"])).unwrap()
    }

    fn calls(&self) -> Vec<Value> {
        fs::read_to_string(self.sim_dir().join("argv.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn ready_ask(&self, prompt: &str) -> String {
        let id = self.home.ask(&AskSpec::new(prompt, "/src/app")).unwrap();
        self.home.set_ready(&id, "All done").unwrap();
        id
    }

    fn interactive(&self) -> String {
        let run = self
            .home
            .run(&RunSpec::interactive("/src/app", "Fix restore"))
            .unwrap();
        self.home.provider_session(&run).unwrap();
        run
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn flow(id: &str, title: &str) -> FlowSpec {
    let mut flow = FlowSpec::new(id, title, "review", "/src/flow");
    flow.work = Some("task:task_1".into());
    flow
}

#[test]
fn list_shows_flows_and_open_asks_in_title_order() {
    let sim = Sim::new();
    assert_eq!(sim.list(), Vec::<Value>::new());
    assert_eq!(sim.ok(&["session", "list"]), "No Sessions.\n");

    let waiting = sim
        .home
        .ask(&AskSpec::new("Beta question\nmore", "/src/app"))
        .unwrap();
    let ready = sim.ready_ask("Alpha question");
    let done = sim.ready_ask("Aardvark");
    sim.home.complete(&done).unwrap();
    let mut reviewed = flow("task_1:ship:review:0", "Beta question");
    reviewed.ready_summary = Some("Reviewed".into());
    sim.home.flows(&[reviewed.clone()]).unwrap();

    let listed = sim.list();
    let ids: Vec<&str> = listed.iter().map(|s| s["id"].as_str().unwrap()).collect();
    let mut betas = [waiting.as_str(), reviewed.id.as_str()];
    betas.sort();
    assert_eq!(
        ids,
        [ready.as_str(), betas[0], betas[1]],
        "completed Asks are not listed"
    );

    let ask = &listed[0];
    assert_eq!(ask["kind"], "ask");
    assert_eq!(ask["state"], "ready");
    assert_eq!(ask["ready_summary"], "All done");
    assert_eq!(ask["title"], "Alpha question");
    assert_eq!(ask["detail"], "Human ask");
    assert_eq!(ask["cwd"], "/src/app");
    assert_eq!(
        ask["open_argv"],
        serde_json::json!([LF, "session", "open", ready])
    );
    let by_id = |id: &str| listed.iter().find(|s| s["id"] == id).unwrap().clone();
    assert_eq!(by_id(&waiting)["state"], "waiting");
    let flow = by_id(&reviewed.id);
    assert_eq!(flow["kind"], "flow");
    assert_eq!(flow["state"], "ready");
    assert_eq!(flow["detail"], "review");
    assert_eq!(
        flow["work"],
        serde_json::json!({"kind": "task", "id": "task_1"})
    );

    let text = sim.ok(&["session", "list"]);
    assert!(
        text.lines()
            .any(|l| l == format!("{ready}  ready   run  Alpha question")),
        "{text}"
    );
}

#[test]
fn one_bad_ask_record_fails_the_whole_list_like_lf() {
    let sim = Sim::new();
    sim.ready_ask("Fine");
    sim.home
        .raw("human-sessions/ask_broken.json", b"{not json")
        .unwrap();
    let err = sim.fails(1, &["session", "list", "--json", "--all"]);
    assert!(
        err.starts_with(
            "Error: parse human session record\n\nCaused by:\n    key must be a string"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 4, "{err}");

    fs::remove_file(sim.home.ask_path("ask_broken")).unwrap();
    let other = sim.ready_ask("Other");
    let record = fs::read(sim.home.ask_path(&other)).unwrap();
    sim.home
        .raw("human-sessions/ask_renamed.json", &record)
        .unwrap();
    let err = sim.fails(1, &["session", "list", "--json"]);
    assert_eq!(
        err,
        "Error: human session record \"ask_renamed\" is invalid\n"
    );
}

#[test]
fn every_call_is_recorded_with_its_directory_and_lf_environment() {
    let sim = Sim::new();
    let out = sim
        .command(LF, &["session", "complete", "--", "-rf"])
        .env("LF_RUN_ID", "run_inherited")
        .env("OTHER", "not recorded")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let calls = sim.calls();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(
        call["argv"],
        serde_json::json!(["session", "complete", "--", "-rf"])
    );
    assert_eq!(call["cwd"], sim.dir.path().to_str().unwrap());
    assert_eq!(call["env"]["LF_RUN_ID"], "run_inherited");
    assert_eq!(call["env"]["LF_HOME"], sim.home.home().to_str().unwrap());
    assert!(call["env"].get("OTHER").is_none());
    assert!(call["pid"].as_u64().unwrap() > 1);
}

#[test]
fn the_fail_knob_fails_every_call_with_its_message() {
    let sim = Sim::new();
    fs::write(sim.sim_dir().join("fail"), "database is locked\n").unwrap();
    let err = sim.fails(1, &["session", "list", "--json", "--all"]);
    assert_eq!(err, "Error: database is locked\n");
    fs::remove_file(sim.sim_dir().join("fail")).unwrap();
    sim.list();
}

#[test]
fn the_hang_knob_keeps_lf_from_answering() {
    let sim = Sim::new();
    fs::write(sim.sim_dir().join("hang"), "").unwrap();
    let mut child = sim
        .command(LF, &["session", "list", "--json"])
        .spawn()
        .unwrap();
    // Hanging is the absence of an exit, so it can only be observed for a while.
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        assert!(child.try_wait().unwrap().is_none(), "lf exited");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sim.calls().len(), 1, "the call is recorded before hanging");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn session_help_names_generation_a_verbs() {
    let sim = Sim::new();
    let help = sim.ok(&["session", "--help"]);
    for verb in ["list", "open", "complete", "approve", "iterate"] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(verb)),
            "{verb}: {help}"
        );
    }
    assert!(!help.contains("rename") && !help.contains("connect"));
    sim.fails(2, &["session", "rename", "x", "y"]);
    sim.fails(2, &["session"]);
}

#[test]
fn completing_an_ask_needs_ready_and_happens_once() {
    let sim = Sim::new();
    let id = sim.home.ask(&AskSpec::new("Ship?", "/src/app")).unwrap();
    assert_eq!(
        sim.fails(1, &["session", "complete", &id]),
        format!(
            "Error: Ask session \"{id}\" is not ready; its agent must run `lf session ready \"<summary>\"` first\n"
        )
    );
    sim.home.set_ready(&id, "Ship macOS first").unwrap();
    assert_eq!(
        sim.ok(&["session", "complete", "--", &id]),
        "Ask session completed: Ship macOS first\n"
    );
    let record: Value = serde_json::from_slice(&fs::read(sim.home.ask_path(&id)).unwrap()).unwrap();
    assert_eq!(record["status"]["completed"]["summary"], "Ship macOS first");
    assert_eq!(
        sim.fails(1, &["session", "complete", &id]),
        format!("Error: human session \"{id}\" is already resolved\n")
    );
}

#[test]
fn completing_an_interactive_session_resolves_its_run() {
    let sim = Sim::new();
    let run = sim.interactive();
    let pid = std::process::id();
    let started = lf_sim::process_start_time(pid).unwrap();
    sim.home.client(&run, pid, started).unwrap();
    assert_eq!(
        sim.ok(&["session", "complete", &run]),
        format!("Session {run} completed; its provider history remains resumable.\n")
    );
    let dir = sim.home.run_dir(&run);
    assert!(dir.join("session-resolution.json").is_file());
    assert!(!dir
        .join("provider-clients")
        .join(format!("{pid}.json"))
        .exists());
    assert_eq!(
        sim.fails(1, &["session", "complete", &run]),
        format!("Error: Session {run} is resolved\n")
    );

    let fresh = sim
        .home
        .run(&RunSpec::interactive("/src/app", "No provider yet"))
        .unwrap();
    assert_eq!(
        sim.fails(1, &["session", "complete", &fresh]),
        format!("Error: Session {fresh} has no provider history yet\n")
    );
}

#[test]
fn flows_are_decided_and_other_kinds_are_completed() {
    let sim = Sim::new();
    let ask = sim.ready_ask("Ship?");
    let run = sim.interactive();
    let mut first = flow("task_1:ship:review:0", "Ship");
    first.ready_summary = Some("Ready to ship".into());
    let second = flow("task_2:ship:review:0", "Other");
    sim.home.flows(&[first.clone(), second.clone()]).unwrap();

    assert_eq!(
        sim.fails(1, &["session", "complete", &first.id]),
        "Error: Task FlowStep Sessions use `lf session approve` or `lf session iterate`\n"
    );
    assert_eq!(
        sim.fails(1, &["session", "approve", &ask, "ok"]),
        "Error: Ad-hoc Ask Sessions use `lf session complete`\n"
    );
    assert_eq!(
        sim.fails(1, &["session", "iterate", &run, "again"]),
        "Error: Interactive Sessions use `lf session complete`\n"
    );
    assert_eq!(
        sim.fails(1, &["session", "approve", &first.id, "  "]),
        "Error: approval summary cannot be empty\n"
    );
    assert_eq!(
        sim.fails(1, &["session", "iterate", &first.id, ""]),
        "Error: iteration direction cannot be empty\n"
    );
    sim.fails(2, &["session", "approve", &first.id]);

    assert_eq!(
        sim.ok(&["session", "iterate", &first.id, "Add", "tests"]),
        "Task FlowStep returned to autonomous work for another iteration.\n"
    );
    let flows = sim.home.flow_list().unwrap();
    assert_eq!(flows[0].ready_summary, None);
    assert_eq!(flows[0].state, lf_sim::State::Waiting);

    assert_eq!(
        sim.ok(&["session", "approve", "--", &second.id, "Ship it"]),
        "Task FlowStep approved; the Task may continue.\n"
    );
    assert_eq!(
        sim.home
            .flow_list()
            .unwrap()
            .iter()
            .map(|f| f.id.as_str())
            .collect::<Vec<_>>(),
        [first.id.as_str()]
    );
    assert_eq!(
        sim.fails(1, &["session", "approve", &second.id, "again"]),
        format!("Error: Session {} was not found\n", second.id)
    );
}

#[test]
fn ids_and_text_after_double_dash_are_never_options() {
    let sim = Sim::new();
    sim.home.flows(&[flow("-rf", "Hostile")]).unwrap();
    let err = sim.fails(2, &["session", "approve", "-rf", "ok"]);
    assert!(err.contains("'-rf'") && err.contains("-- -rf"), "{err}");
    assert_eq!(
        sim.fails(1, &["session", "complete", "--", "--json"]),
        "Error: Session --json was not found\n"
    );
    assert_eq!(
        sim.ok(&["session", "iterate", "--", "-rf", "--all", "-x"]),
        "Task FlowStep returned to autonomous work for another iteration.\n"
    );
    assert_eq!(
        sim.ok(&["session", "approve", "--", "-rf", "--json"]),
        "Task FlowStep approved; the Task may continue.\n"
    );
    assert!(sim.home.flow_list().unwrap().is_empty());
}

#[test]
fn unknown_sessions_are_not_found() {
    let sim = Sim::new();
    for verb in ["complete", "open"] {
        assert_eq!(
            sim.fails(1, &["session", verb, "ask_missing"]),
            "Error: Session ask_missing was not found\n"
        );
    }
}

#[test]
fn open_shows_the_session_and_waits_for_the_person() {
    let sim = Sim::new();
    let id = sim.ready_ask("Ship?\nsoon");
    let mut child = sim
        .command(LF, &["session", "open", "--", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&id) && text.contains("Ship?"), "{text}");
    assert!(text.contains("/src/app"), "{text}");
    assert!(
        text.contains("(simulated lf: press Enter to leave)"),
        "{text}"
    );

    // A closed stdin ends it too.
    let run = sim.interactive();
    let shown = sim.ok(&["session", "open", &run, "--replace"]);
    assert!(shown.contains("Fix restore"), "{shown}");
    assert_eq!(
        sim.fails(1, &["session", "open", &id, "--replace"]),
        "Error: --replace and --try apply only to interactive provider sessions\n"
    );
}

fn open_argv_zero(mut command: Command) -> String {
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    listed[0]["open_argv"][0].as_str().unwrap().to_string()
}

#[test]
fn open_argv_names_lf_as_invoked_even_through_a_symlink() {
    let sim = Sim::new();
    sim.ready_ask("q");
    let bin = sim.dir.path().join("bin");
    fs::create_dir(&bin).unwrap();
    symlink(LF, bin.join("lf")).unwrap();
    let args = ["session", "list", "--json", "--all"];

    let direct = open_argv_zero(sim.command(bin.join("lf"), &args));
    assert_eq!(Path::new(&direct), bin.join("lf"));

    // Relative to the working directory, made absolute but not resolved.
    let relative = open_argv_zero(sim.command("./bin/lf", &args));
    assert_eq!(Path::new(&relative), bin.join("lf"));

    // Found on PATH: argv[0] is the bare name.
    let mut through_path = sim.command("lf", &args);
    through_path.env("PATH", &bin);
    assert_eq!(Path::new(&open_argv_zero(through_path)), bin.join("lf"));
}
