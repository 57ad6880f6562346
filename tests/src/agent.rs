//! Generation E2's agent processes (loopflow-model.md §10.6): lf runs a native agent as
//! its own child on the same terminal and stdio, records it as a Process row with its
//! own lf id (a UUID) and the OS pid and start time liveness is judged by, waits for it,
//! and records its exit when it outlives it. `lf monitor ps --json` lists the agents not
//! proven dead. The agent itself is this same binary re-executed under the provider's
//! name (`argv[0]` = `claude`), with [`PLAY_AGENT`] telling it to play the agent, so no
//! agent's command line names a Session id, as with real lf.

use std::env;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, BufRead, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::inventory::Lf;
use crate::process::process_start_time;
use crate::records::WorkRef;
use crate::store::{judge, AgentRow, AgentStart, Liveness, Store};

/// Set (to `native` or `headless`) in an agent's environment: the binary plays the
/// agent instead of lf, and writes nothing anywhere.
pub(crate) const PLAY_AGENT: &str = "LF_SIM_PLAY_AGENT";

/// Set to a program's path in lf's environment, a native agent becomes that program (by
/// exec, so its pid and start time stay the ones lf recorded): a test's stand-in for the
/// agent itself, such as one that runs the agent's hooks. Unset, the agent echoes.
pub(crate) const AGENT_PROGRAM: &str = "LF_SIM_AGENT_PROGRAM";

/// lf's grace between SIGTERM and SIGKILL when Move here stops the other terminal's
/// client (§10.6: "SIGKILL after 2 s").
const MOVE_GRACE: Duration = Duration::from_secs(2);

/// How long Move here waits for a SIGKILLed agent to be gone (reaped by its own lf, or a
/// zombie, which lf counts as dead). A SIGKILL is not refusable, so this bound is only
/// there for a wedged kernel; it is generous because the machine may be busy.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// Poll interval while waiting for a stopped agent to go: short against the 2 s grace.
const POLL: Duration = Duration::from_millis(20);

/// How long `ensure` waits for the lf in its tmux pane to record the agent: that lf's
/// start and its database commits, which take seconds on a slow, busy machine. The wait
/// ends as soon as the agent is there.
const ENSURE_WAIT: Duration = Duration::from_secs(30);

/// Poll interval while `ensure` waits for the pane's agent: each poll opens the database
/// and may run tmux, so not much faster than a person would notice.
const ENSURE_POLL: Duration = Duration::from_millis(50);

/// What lf strips from the environment of the tmux sessions it starts (§10.6): the
/// launcher's terminal is not the pane's.
const NOT_FOR_TMUX: [&str; 2] = ["LF_TERMINAL_ID", "LF_TERMINAL_TTY"];

/// The agent's side: a native agent tells what it is and echoes each line it reads
/// until `/exit` or the end of its input; a headless one waits until it is killed.
pub(crate) fn play(mode: &str) -> i32 {
    let name = env::args_os()
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "agent".into());
    set_process_name(&name);
    if let Some(program) = env::var_os(AGENT_PROGRAM).filter(|_| mode == "native") {
        let error = Command::new(&program)
            .args(env::args_os().skip(1))
            .env_remove(PLAY_AGENT)
            .env_remove(AGENT_PROGRAM)
            .exec();
        eprintln!("{}: {error}", Path::new(&program).display());
        return 127;
    }
    if mode == "headless" {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let mut out = io::stdout().lock();
    let _ = writeln!(
        out,
        "(simulated {name}: each line you type comes back; /exit or end of input leaves)"
    );
    let _ = out.flush();
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim() == "/exit" {
            break;
        }
        let _ = writeln!(out, "{name}: {line}");
        let _ = out.flush();
    }
    0
}

/// `/proc/<pid>/comm` follows the executable's file name (`lf`); a real agent's is its
/// own name, so a reader that looks there sees the provider.
fn set_process_name(name: &str) {
    let mut bytes: Vec<u8> = name.bytes().filter(|b| *b != 0).take(15).collect();
    bytes.push(0);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, bytes.as_ptr() as libc::c_ulong, 0, 0, 0);
    }
}

/// The provider's own argv after its name: a first launch starts a conversation, a
/// later one resumes it by the provider's conversation id (never the Session id).
fn provider_args(conversation: &str, resumed: bool, headless: bool) -> Vec<String> {
    let mut args = Vec::new();
    if headless {
        args.extend(["--print", "--output-format", "stream-json"].map(String::from));
    }
    if resumed {
        args.extend(["--resume".to_string(), conversation.to_string()]);
    }
    args
}

fn agent_command(provider: &str, args: &[String], cwd: &str, mode: &str) -> Result<Command> {
    let exe = env::current_exe().context("find the stand-in's own executable")?;
    let mut command = Command::new(exe);
    command.arg0(provider).args(args).env(PLAY_AGENT, mode);
    if Path::new(cwd).is_dir() {
        command.current_dir(cwd);
    }
    Ok(command)
}

/// This lf's own identity for its agent's row: a new lf Process id, its pid and start.
fn this_lf(label: &str) -> (String, u32, Option<i64>, String) {
    let pid = std::process::id();
    (
        uuid::Uuid::new_v4().to_string(),
        pid,
        process_start_time(pid).ok(),
        label.to_string(),
    )
}

/// Runs the Session's agent here, as this lf's child on this terminal, and waits for it.
/// When it exits (and this lf outlives it) the exit is recorded; when it was stopped by a
/// Move here elsewhere, this terminal says so. Returns lf's exit code.
pub(crate) fn run_here(
    store: &mut Store,
    session_id: &str,
    provider: &str,
    cwd: &str,
    label: &str,
) -> Result<i32> {
    let (conversation, resumed) = store.conversation(session_id)?;
    let args = provider_args(&conversation, resumed, false);
    let mut child = agent_command(provider, &args, cwd, "native")?
        .spawn()
        .with_context(|| format!("start {provider}"))?;
    let pid = child.id();
    // The child exists from here on; its start time is read as lf reads it, once.
    let os_started_at = process_start_time(pid).ok();
    let recorded = store.start_agent(&AgentStart {
        session_id: session_id.to_string(),
        provider: provider.to_string(),
        pid,
        os_started_at,
        headless: false,
        lf: Some(this_lf(label)),
    });
    let agent_id = match recorded {
        Ok(id) => id,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    // The person's Ctrl-C and Ctrl-\ are for the agent, which shares the terminal's
    // foreground group; this lf stays to record the end. (Set after spawn: an ignored
    // signal would be inherited across exec.)
    // SAFETY: signal() with SIG_IGN installs no handler code.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let status = child.wait().context("wait for the agent")?;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    store.record_agent_exit(&agent_id, Some(code))?;
    if store.agent_moved(&agent_id)? {
        println!("Session moved to another terminal.");
        return Ok(0);
    }
    Ok(code)
}

/// lf's tmux session for a Session's conversation (§10.6): `lf-human-` and the id's first
/// 12 characters. tmux turns `.` and `:` in a session name into `_`; so does this, so the
/// name is the one tmux keeps and `has-session -t =<name>` finds.
pub(crate) fn tmux_session_name(session_id: &str) -> String {
    let head: String = session_id
        .chars()
        .take(12)
        .map(|c| if matches!(c, '.' | ':') { '_' } else { c })
        .collect();
    format!("lf-human-{head}")
}

/// `tmux <args>`, its output captured; argv only, never through a shell.
fn tmux(args: &[&OsStr]) -> Result<Output> {
    match Command::new("tmux")
        .args(args)
        .stdin(Stdio::null())
        .output()
    {
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "lf session ensure runs the conversation in a tmux session, and tmux is not \
             installed (no tmux on PATH)"
        ),
        other => other.context("run tmux"),
    }
}

/// `lf session ensure`'s start (E2): a detached tmux session `name` whose one pane runs
/// this lf's `session connect -- <ID>` in the Session's directory, with this lf's `LF_*`
/// environment but the launcher's terminal id, so the agent runs as that lf's child on
/// the pane's tty. A tmux session of that name already there is left alone. Returns
/// whether it started one, once the pane's lf has recorded a live agent.
pub(crate) fn ensure_in_tmux(lf: &Lf, session_id: &str, cwd: &str, name: &str) -> Result<bool> {
    let target = format!("={name}");
    let exists = |target: &str| -> Result<bool> {
        Ok(tmux(&[
            OsStr::new("has-session"),
            OsStr::new("-t"),
            OsStr::new(target),
        ])?
        .status
        .success())
    };
    let started = !exists(&target)?;
    if started {
        let mut args: Vec<OsString> = ["new-session", "-d", "-s", name]
            .iter()
            .map(OsString::from)
            .collect();
        if Path::new(cwd).is_dir() {
            args.extend([OsString::from("-c"), OsString::from(cwd)]);
        }
        // A pane gets the tmux server's environment, which is whoever started the server
        // first: `env` sets this lf's own `LF_*` over it and strips what lf strips.
        args.extend(["--", "/usr/bin/env"].map(OsString::from));
        for var in NOT_FOR_TMUX {
            args.extend([OsString::from("-u"), OsString::from(var)]);
        }
        for (key, value) in env::vars_os() {
            let key_text = key.to_string_lossy();
            if key_text.starts_with("LF_")
                && !NOT_FOR_TMUX.contains(&key_text.as_ref())
                && key_text != PLAY_AGENT
            {
                let mut pair = key.clone();
                pair.push("=");
                pair.push(&value);
                args.push(pair);
            }
        }
        args.extend(
            [lf.program.as_str(), "session", "connect", "--", session_id].map(OsString::from),
        );
        let refs: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        let out = tmux(&refs)?;
        if !out.status.success() {
            bail!(
                "tmux could not start session {name}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
    let deadline = Instant::now() + ENSURE_WAIT;
    loop {
        let agent = lf.store()?.current_agent(session_id)?;
        if agent.is_some_and(|a| !a.headless && a.liveness() == Liveness::Alive) {
            return Ok(started);
        }
        if !exists(&target)? {
            bail!("the conversation in tmux session {name} ended before its agent started");
        }
        if Instant::now() >= deadline {
            bail!(
                "no agent of Session {session_id} started in tmux session {name} within {} s",
                ENSURE_WAIT.as_secs()
            );
        }
        std::thread::sleep(ENSURE_POLL);
    }
}

/// `lf sim agent <ID> headless`: a detached agent with no terminal (its own session,
/// stdin from /dev/null), recorded like any other; this lf does not wait for it.
pub(crate) fn start_headless(
    store: &mut Store,
    session_id: &str,
    provider: &str,
    cwd: &str,
) -> Result<(String, u32)> {
    let (conversation, resumed) = store.conversation(session_id)?;
    let args = provider_args(&conversation, resumed, true);
    let mut command = agent_command(provider, &args, cwd, "headless")?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe; it detaches the child from any terminal.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command
        .spawn()
        .with_context(|| format!("start {provider}"))?;
    let pid = child.id();
    let os_started_at = process_start_time(pid).ok();
    let id = store.start_agent(&AgentStart {
        session_id: session_id.to_string(),
        provider: provider.to_string(),
        pid,
        os_started_at,
        headless: true,
        lf: None,
    })?;
    // Not waited for: when this lf exits the agent is reparented and reaped there.
    drop(child);
    Ok((id, pid))
}

/// Move here's stop: SIGTERM to the other terminal's client (for Claude the agent
/// itself), SIGKILL after [`MOVE_GRACE`] if it is still there. The agent's own lf learns
/// of the move from `moved_at`, set first.
pub(crate) fn stop_for_move(store: &mut Store, agent: &AgentRow) -> Result<()> {
    store.mark_moved(&agent.id)?;
    let Some(pid) = agent.pid else { return Ok(()) };
    let alive = || judge(agent.pid, agent.os_started_at) == Liveness::Alive;
    // Signals go only to the process lf recorded, never to a pid reused since.
    for (signal, within) in [(libc::SIGTERM, MOVE_GRACE), (libc::SIGKILL, KILL_WAIT)] {
        if !alive() {
            return Ok(());
        }
        // SAFETY: kill only sends a signal.
        unsafe {
            libc::kill(pid as libc::pid_t, signal);
        }
        let deadline = Instant::now() + within;
        while alive() && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
    }
    if alive() {
        anyhow::bail!("the other terminal's agent (pid {pid}) did not stop");
    }
    Ok(())
}

/// The ps state letter in lf's words (`working | waiting | stalled | unknown`): running
/// or in disk wait works, sleeping waits, stopped or traced is stalled.
fn ps_state(pid: Option<u32>) -> &'static str {
    let Some(pid) = pid else { return "unknown" };
    let letter = fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(String::from))
        });
    match letter.as_deref() {
        Some("R" | "D") => "working",
        Some("S" | "I") => "waiting",
        Some("T" | "t") => "stalled",
        _ => "unknown",
    }
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// `lf monitor ps --json`: the lf processes that launched a listed agent, then the
/// agents not proven dead. An agent missing here is dead or finished.
pub(crate) fn monitor_ps(store: &Store) -> Result<Value> {
    let mut parents = Vec::new();
    let mut agents = Vec::new();
    let mut listed_parents = std::collections::BTreeSet::new();
    for agent in store.unfinished_agents()? {
        let liveness = agent.liveness();
        if liveness == Liveness::Dead {
            continue;
        }
        let parent = agent
            .lf_id
            .as_ref()
            .filter(|_| judge(agent.lf_pid, agent.lf_os_started_at) != Liveness::Dead);
        if let Some(lf_id) = parent {
            if listed_parents.insert(lf_id.clone()) {
                parents.push(json!({
                    "id": format!("process:{lf_id}"),
                    "parent_id": null,
                    "kind": "process",
                    "label": agent.lf_label.clone().unwrap_or_else(|| "lf".into()),
                    "repo": agent.repo,
                    "worktree": agent.cwd,
                    "wave": null,
                    "pid": agent.lf_pid,
                    "started_at": agent.lf_os_started_at,
                    "state": ps_state(agent.lf_pid),
                }));
            }
        }
        let (pid, state) = match liveness {
            Liveness::Alive => (agent.pid, ps_state(agent.pid)),
            _ => (
                agent.pid.filter(|_| agent.os_started_at.is_some()),
                "unknown",
            ),
        };
        agents.push(json!({
            "id": format!("process:{}", agent.id),
            "parent_id": parent.map(|id| format!("process:{id}")),
            "kind": "agent_process",
            "label": agent.provider,
            "repo": agent.repo,
            "worktree": agent.cwd,
            "wave": null,
            "pid": pid,
            "started_at": agent.os_started_at,
            "state": state,
        }));
    }
    parents.extend(agents);
    Ok(json!({
        "schema_version": 1,
        "observed_at": unix_now(),
        "nodes": parents,
    }))
}

/// `lf monitor active --json` in E2a's spelling: the Sessions with a live agent process.
pub(crate) fn monitor_active(store: &Store) -> Result<Value> {
    let mut sessions: Vec<Value> = Vec::new();
    for agent in store.unfinished_agents()? {
        if agent.liveness() == Liveness::Dead {
            continue;
        }
        let process = json!({
            "id": agent.id,
            "pid": agent.pid,
            "provider": agent.provider,
            "state": ps_state(agent.pid),
        });
        if let Some(session) = sessions
            .iter_mut()
            .find(|s| s["id"] == agent.session_id.as_str())
        {
            if let Some(list) = session["processes"].as_array_mut() {
                list.push(process);
            }
            continue;
        }
        let (title, task) = store.session_title_and_task(&agent.session_id)?;
        sessions.push(json!({
            "id": agent.session_id,
            "title": title,
            "work": task.map(|id| WorkRef { kind: "task".into(), id }),
            "processes": [process],
        }));
    }
    Ok(json!({ "sessions": sessions }))
}

/// lf's `terminal_ids` entry for a live client: its `LF_TERMINAL_ID`, only when its
/// `LF_TERMINAL_TTY` names the terminal its stdin is on (§10.6). lf never makes one up.
pub(crate) fn terminal_id(pid: u32) -> Option<String> {
    let environ = fs::read(format!("/proc/{pid}/environ")).ok()?;
    let var = |name: &str| {
        environ
            .split(|b| *b == 0)
            .find_map(|kv| kv.strip_prefix(format!("{name}=").as_bytes()))
            .filter(|v| !v.is_empty())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let tty = var("LF_TERMINAL_TTY")?;
    let id = var("LF_TERMINAL_ID")?;
    let stdin = fs::read_link(format!("/proc/{pid}/fd/0")).ok()?;
    (stdin == Path::new(&tty)).then_some(id)
}
