//! E2's agents as lf runs them (loopflow-model.md §10.6): a native agent is lf's own
//! child on the terminal lf runs on, with the provider's argv; a live agent refuses a
//! plain connect; Move here stops it and resumes here; a headless agent is left running;
//! an agent that dies with its lf writes nothing.

mod common;

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::process::CommandExt;

use common::{until, Lf, Reaped};
use serde_json::Value;

const ACTIVE_ELSEWHERE: &str =
    "This Session is active in another terminal; use Move here to transfer it";

/// `lf <args>` on a new terminal of its own, as a terminal window runs it: a new
/// session whose controlling terminal is the pty. Its output is read from the master.
fn on_terminal(lf: &Lf, args: &[&str]) -> (Reaped, File) {
    let (master, slave) = common::pty();
    let mut command = lf.command_in(&lf.repo_a(), args);
    command
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave);
    // SAFETY: setsid and ioctl are async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
    (Reaped(command.spawn().unwrap()), master)
}

/// Everything the terminal showed until it closed (or the child's end).
fn drain(mut master: File) -> String {
    let mut out = Vec::new();
    // EIO once the last process on the terminal is gone: the end of its output.
    let _ = master.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn record(lf: &Lf, id: &str) -> Value {
    lf.json(&["session", "connect", "--json", id])
}

fn agent_pid_of(lf: &Lf, id: &str, not: Option<&str>) -> (String, u32) {
    until("a live agent", || {
        let r = record(lf, id);
        let agent = r["agent_process_id"].as_str()?.to_string();
        if r["state"] != "active" || Some(agent.as_str()) == not {
            return None;
        }
        let ps = lf.json(&["monitor", "ps", "--json"]);
        let node = ps["nodes"]
            .as_array()?
            .iter()
            .find(|n| n["id"] == format!("process:{agent}"))?
            .clone();
        Some((agent, node["pid"].as_u64()? as u32))
    })
}

fn stat_field(pid: u32, n: usize) -> String {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(n).unwrap().to_string()
}

fn cmdline(pid: u32) -> Vec<String> {
    fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .unwrap()
        .split('\0')
        .filter(|a| !a.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn connect_runs_the_agent_here_and_move_here_takes_it_over() {
    let lf = Lf::new("e2");
    let repo = lf.repo_a().display().to_string();
    lf.ok(&[
        "sim",
        "new",
        "s",
        "--title",
        "Fix it",
        "--cwd",
        &repo,
        "--provider",
        "claude",
    ]);
    let (first_lf, first_term) = on_terminal(&lf, &["session", "connect", "s"]);
    let (first, first_pid) = agent_pid_of(&lf, "s", None);
    assert!(uuid::Uuid::parse_str(&first).is_ok(), "{first}");
    // lf's child, on lf's controlling terminal, with the provider's argv.
    assert_eq!(
        stat_field(first_pid, 1),
        first_lf.0.id().to_string(),
        "ppid"
    );
    assert_eq!(
        stat_field(first_pid, 4),
        stat_field(first_lf.0.id(), 4),
        "tty_nr"
    );
    assert_ne!(stat_field(first_pid, 4), "0");
    assert_eq!(cmdline(first_pid), ["claude"]);
    let live = record(&lf, "s");
    assert_eq!(live["actions"][0]["unavailable_reason"], ACTIVE_ELSEWHERE);
    assert_eq!(live["terminal_ids"], serde_json::json!([]));
    let ps = lf.json(&["monitor", "ps", "--json"]);
    let node = |id: &str| {
        ps["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .cloned()
            .unwrap()
    };
    let agent_node = node(&format!("process:{first}"));
    assert_eq!(agent_node["kind"], "agent_process");
    assert_eq!(agent_node["label"], "claude");
    let parent = node(agent_node["parent_id"].as_str().unwrap());
    assert_eq!(parent["kind"], "process");
    assert_eq!(parent["pid"], first_lf.0.id());

    // A plain connect elsewhere is refused with lf's words.
    assert_eq!(
        lf.fails(1, &["session", "connect", "s"]),
        format!("Error: {ACTIVE_ELSEWHERE}\n")
    );
    assert_eq!(
        lf.fails(1, &["session", "connect", "--try", "s"])
            .trim_end(),
        format!("Error: {ACTIVE_ELSEWHERE}")
    );

    // Move here: the first terminal's agent stops, its lf says so and ends; the
    // conversation resumes here as a new agent process, by the provider's own id.
    let (_second_lf, _second_term) = on_terminal(&lf, &["session", "connect", "--replace", "s"]);
    let (second, second_pid) = agent_pid_of(&lf, "s", Some(&first));
    assert_ne!(second, first);
    let argv = cmdline(second_pid);
    assert_eq!(argv[..2], ["claude", "--resume"]);
    assert_ne!(
        argv[2], "s",
        "the provider's conversation id, not the Session id"
    );
    let mut first_lf = first_lf;
    let status = first_lf.0.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let shown = drain(first_term);
    assert!(
        shown.contains("Session moved to another terminal."),
        "{shown}"
    );
    // The first agent's exit was recorded by its lf: it is gone from monitor ps.
    let ps = lf.json(&["monitor", "ps", "--json"]);
    assert!(!ps.to_string().contains(&first), "{ps}");
}

#[test]
fn move_here_beside_a_headless_agent_stops_nothing() {
    let lf = Lf::new("e2");
    lf.ok(&[
        "sim",
        "new",
        "h",
        "--title",
        "Batch",
        "--provider",
        "claude",
    ]);
    let started: Value = serde_json::from_str(&lf.ok(&["sim", "agent", "h", "headless"])).unwrap();
    let headless = started["agent_process_id"].as_str().unwrap().to_string();
    let headless_pid = started["pid"].as_u64().unwrap() as u32;
    let r = record(&lf, "h");
    assert_eq!(
        (r["state"].as_str(), r["agent_process_id"].as_str()),
        (Some("active"), Some(headless.as_str()))
    );
    // No terminal: its own session, stdin from /dev/null.
    assert_eq!(stat_field(headless_pid, 4), "0", "tty_nr");
    assert_eq!(
        stat_field(headless_pid, 3),
        headless_pid.to_string(),
        "session id"
    );
    lf.fails(1, &["session", "connect", "h"]);
    let (_lf, _term) = on_terminal(&lf, &["session", "connect", "--replace", "h"]);
    let (native, _) = agent_pid_of(&lf, "h", Some(&headless));
    assert_ne!(native, headless);
    let ps = lf.json(&["monitor", "ps", "--json"]);
    assert!(ps.to_string().contains(&headless), "still running: {ps}");
    // SAFETY: kill only sends a signal, to the agent this test started.
    unsafe { libc::kill(headless_pid as i32, libc::SIGKILL) };
    until("the headless agent gone from monitor ps", || {
        let ps = lf.json(&["monitor", "ps", "--json"]);
        (!ps.to_string().contains(&headless)).then_some(())
    });
}

#[test]
fn an_agent_dying_with_its_lf_writes_nothing_and_reads_closed() {
    let lf = Lf::new("e2");
    let (mut term_lf, master) = on_terminal(&lf, &["-a", "claude"]);
    let id = until("the new Session", || {
        let list = lf.json(&["session", "list", "--json", "--all"]);
        list[0]["id"].as_str().map(String::from)
    });
    let (_, agent_pid) = agent_pid_of(&lf, &id, None);
    let r = record(&lf, &id);
    assert_eq!(r["provider"], "claude");
    assert_eq!(r["cwd"], lf.repo_a().display().to_string());
    let store = lf.store();
    let before = store.revisions().unwrap();
    // The terminal is killed: lf first (SIGKILL), then its agent.
    term_lf.0.kill().unwrap();
    term_lf.0.wait().unwrap();
    // SAFETY: kill only sends a signal, to the agent this test's lf started.
    unsafe { libc::kill(agent_pid as i32, libc::SIGKILL) };
    drop(master);
    until("the Session closed", || {
        (record(&lf, &id)["state"] == "closed").then_some(())
    });
    let after = store.revisions().unwrap();
    assert_eq!(
        after.sessions, before.sessions,
        "nothing written for the deaths"
    );
}

#[test]
fn e2a_still_prints_interrupted_and_observe_status_names_each_variants_flag() {
    for (generation, state) in [("e2a", "interrupted"), ("e2", "unknown")] {
        let lf = Lf::new(generation);
        lf.ok(&["sim", "new", "s", "--title", "s"]);
        lf.ok(&["sim", "interrupt", "s"]);
        let r = record(&lf, "s");
        assert_eq!(r["state"], state, "{generation}");
        assert_eq!(
            r.get("agent_process_id"),
            Some(&Value::Null),
            "{generation}"
        );
    }
    for (generation, flag) in [
        ("e2a", "--agent-process <ID>"),
        ("e2", "--agent-process <ID>"),
        ("e1", "--generation <N>"),
    ] {
        let help = Lf::new(generation).ok(&["session", "observe-status", "--help"]);
        assert!(help.contains(flag), "{generation}: {help}");
    }
}

/// A private tmux server for one test (`TMUX_TMPDIR`), killed with the test: its panes'
/// lf and agents get their hangup then.
struct TmuxServer(std::path::PathBuf);

impl TmuxServer {
    fn command(&self) -> std::process::Command {
        let mut command = std::process::Command::new("tmux");
        command.env_remove("TMUX").env("TMUX_TMPDIR", &self.0);
        command
    }

    fn out(&self, args: &[&str]) -> Option<String> {
        let out = self.command().args(args).output().unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").output();
    }
}

fn tmux_installed() -> bool {
    std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success())
}

#[test]
fn ensure_runs_the_conversation_in_its_own_tmux_session_once() {
    assert!(
        tmux_installed(),
        "tmux must be installed for this test: `lf session ensure` runs the conversation in \
         tmux (scripts/deps.sh installs it)"
    );
    for generation in ["e2", "e2a"] {
        ensure_once_on(generation);
    }
}

fn ensure_once_on(generation: &'static str) {
    let lf = Lf::new(generation);
    let id = "S-0123456789abcdef";
    let name = "lf-human-S-0123456789";
    let repo = lf.repo_a().display().to_string();
    lf.ok(&[
        "sim",
        "new",
        id,
        "--title",
        "Ensured",
        "--cwd",
        &repo,
        "--provider",
        "claude",
    ]);
    let tmux = TmuxServer(lf.root().join("tmux"));
    fs::create_dir(&tmux.0).unwrap();
    let ensure = || {
        let out = lf
            .command_in(&lf.outside(), &["session", "ensure", "--", id])
            .env("TMUX_TMPDIR", &tmux.0)
            // A launcher's terminal: lf must not hand it to the pane.
            .env("LF_TERMINAL_ID", "launcher-terminal")
            .env("LF_TERMINAL_TTY", "/dev/null")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "lf session ensure: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let said = ensure();
    assert!(said.contains(name), "{said}");
    assert_eq!(
        tmux.out(&["list-sessions", "-F", "#{session_name}"])
            .unwrap(),
        name
    );
    let target = format!("={name}");
    let pane = tmux
        .out(&[
            "list-panes",
            "-s",
            "-t",
            &target,
            "-F",
            "#{pane_pid} #{pane_tty}",
        ])
        .unwrap();
    let (pane_pid, pane_tty) = pane.split_once(' ').unwrap();
    let pane_pid: u32 = pane_pid.parse().unwrap();
    // The pane's process is lf itself (env execs it), connecting this Session by argv.
    assert_eq!(
        cmdline(pane_pid)[1..],
        ["session", "connect", "--", id],
        "{:?}",
        cmdline(pane_pid)
    );
    let environ = fs::read(format!("/proc/{pane_pid}/environ")).unwrap();
    let environ: Vec<String> = environ
        .split(|b| *b == 0)
        .map(|kv| String::from_utf8_lossy(kv).into_owned())
        .collect();
    assert!(
        environ.contains(&format!("LF_HOME={}", lf.home().display())),
        "{environ:?}"
    );
    assert!(environ.contains(&format!("LF_SIM_GENERATION={generation}")));
    assert!(
        !environ.iter().any(|kv| kv.starts_with("LF_TERMINAL_")),
        "{environ:?}"
    );

    // ensure returned once the agent was recorded: lf's child, on the pane's tty.
    let r = record(&lf, id);
    assert_eq!(r["state"], "active", "{r}");
    assert_eq!(r["terminal_ids"], serde_json::json!([]));
    let (agent, agent_pid) = agent_pid_of(&lf, id, None);
    assert_eq!(stat_field(agent_pid, 1), pane_pid.to_string(), "ppid");
    assert_eq!(
        fs::read_link(format!("/proc/{agent_pid}/fd/0")).unwrap(),
        std::path::Path::new(pane_tty)
    );
    assert_eq!(stat_field(agent_pid, 4), stat_field(pane_pid, 4), "tty_nr");
    assert_eq!(cmdline(agent_pid), ["claude"]);

    // A second ensure finds the live agent and starts nothing.
    let said = ensure();
    assert!(said.contains("already running"), "{said}");
    assert_eq!(
        tmux.out(&["list-sessions", "-F", "#{session_name}"])
            .unwrap(),
        name
    );
    assert_eq!(
        tmux.out(&["list-panes", "-s", "-t", &target, "-F", "#{pane_pid}"])
            .unwrap(),
        pane_pid.to_string()
    );
    assert_eq!(agent_pid_of(&lf, id, None).0, agent);
}

#[test]
fn ensure_without_tmux_says_so_and_other_generations_do_not_simulate_it() {
    let lf = Lf::new("e2");
    lf.ok(&["sim", "new", "s", "--title", "s"]);
    let no_tools = lf.root().join("no-tools");
    fs::create_dir(&no_tools).unwrap();
    let out = lf
        .command_in(&lf.outside(), &["session", "ensure", "--", "s"])
        .env("PATH", &no_tools)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("tmux is not installed"), "{said}");
    assert_eq!(record(&lf, "s")["state"], "unknown", "nothing started");
    for generation in ["e1", "d", "c"] {
        let lf = Lf::new(generation);
        let said = lf.fails(1, &["session", "ensure", "s"]);
        assert!(
            said.contains("does not implement `ensure`"),
            "{generation}: {said}"
        );
    }
}
