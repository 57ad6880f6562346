//! The story on today's lf (generation E): agents that say why they wait, two claude
//! agents asking through Claude Code's own hook (a permission, a question), a codex agent's
//! question, and an agent that dies.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::Duration;

use anyhow::{Context, Result};
use lf_sim::SimHome;
use tauri::AppHandle;

use super::{locked, say, start_agent, stop, Agent, Shared, STEP};

/// Today's lf: the agents report why they wait (`program_status`), and lf reads an agent
/// that died as `closed` while its session stays open.
pub(super) fn story_e(
    app: &AppHandle,
    sim: &SimHome,
    project: &Path,
    bin: &Path,
    agent: &Agent,
    asking: &[Agent; 2],
) -> Result<()> {
    use lf_sim::StatusReport;
    // One connection for the whole story, the answer threads' writes included: a second
    // connection in this process, once closed, left the next write on the first failing
    // with "database disk image is malformed" (seen in the demo; likely because the binary
    // carries two SQLite libraries, rusqlite's bundled one and WebKit's, while the file's
    // POSIX locks belong to the process).
    let store: Shared = Arc::new(Mutex::new(sim.store()?));
    sleep(STEP / 2);
    say("four agents work on today's lf (generation E): listed, not waiting");
    let [release, tag, schema, nightly] = four_at_work(&store, project)?;
    let pid = start_agent(bin, agent)?;
    locked(&store).set_agent(nightly, Some(pid))?;

    sleep(STEP);
    say("a claude agent asks permission to run a command, through Claude Code's hook: Allow or Deny it in the popup or the window");
    ask_through_the_hook(app, &store, tag, project, bin, &asking[0], &PUSH_THE_TAG)?;

    sleep(STEP);
    say("the codex agent asks a question (Codex has no hook for questions: its popup goes to its terminal)");
    locked(&store).report_status(
        schema,
        &StatusReport {
            state: "blocked".into(),
            kind: Some("question".into()),
            app: Some("claude".into()),
            title: Some("Keep the old keys for one release?".into()),
            msg: Some("Two clients still read them".into()),
            ..StatusReport::default()
        },
    )?;

    sleep(STEP);
    say("the claude agent asks which registry, through Claude Code's hook: pick one in the popup or the window");
    ask_through_the_hook(
        app,
        &store,
        release,
        project,
        bin,
        &asking[1],
        &WHICH_REGISTRY,
    )?;

    sleep(STEP);
    say("the nightly agent dies with nobody attached: the tray tells you it stopped");
    stop(agent);

    sleep(STEP);
    say("someone answers the codex agent elsewhere: its notification goes away by itself");
    locked(&store).report_status(
        schema,
        &StatusReport {
            state: "working".into(),
            ..StatusReport::default()
        },
    )?;

    say("your turn: Open a waiting session, or Open the stopped one to resume it. Quit from the tray to end the demo.");
    Ok(())
}

/// The story's four sessions on today's lf, each listed at work: the release, the tag,
/// the schema (a codex agent's) and the nightly bumps.
fn four_at_work(store: &Shared, project: &Path) -> Result<[&'static str; 4]> {
    use lf_sim::{Activity, SessionSpec};
    let session = |id: &str, title: &str, provider: &str, work: &str| {
        let mut spec = SessionSpec::new(id, title, project);
        spec.provider = Some(provider.into());
        spec.work_path = Some(work.into());
        spec
    };
    let release = "SESSION-release";
    let tag = "SESSION-tag";
    let schema = "SESSION-schema";
    let nightly = "SESSION-nightly";
    locked(store).create_sessions(&[
        session(
            release,
            "Publish the 0.4 crates",
            "claude",
            "product / LOO-501",
        ),
        session(tag, "Tag the 0.4 release", "claude", "product / LOO-504"),
        session(
            schema,
            "Migrate the settings schema",
            "codex",
            "product / LOO-502",
        ),
        session(
            nightly,
            "Nightly dependency bumps",
            "claude",
            "product / LOO-503",
        ),
    ])?;
    for id in [release, tag, schema, nightly] {
        locked(store).activity(id, Activity::Working)?;
    }
    Ok([release, tag, schema, nightly])
}

/// Something a demo claude agent asks through Claude Code's `PermissionRequest` hook: the
/// tool and its input as Claude sends them, what lf's `program_status` says meanwhile, and
/// how the demo tells what the agent got.
struct HookRequest {
    /// The name of the agent's process: each asking agent is a process of its own.
    process: &'static str,
    tool_name: &'static str,
    tool_input: fn() -> serde_json::Value,
    kind: &'static str,
    title: &'static str,
    told: fn(&serde_json::Value) -> String,
}

/// The question: which registry, two options, answered from the popup's options or the
/// window's card.
const WHICH_REGISTRY: HookRequest = HookRequest {
    process: "claude-asks",
    tool_name: "AskUserQuestion",
    tool_input: || {
        serde_json::json!({"questions": [{
            "question": QUESTION,
            "header": "Registry",
            "multiSelect": false,
            "options": [
                {"label": "crates.io", "description": "the public registry"},
                {"label": "internal", "description": "the company's mirror"}
            ]
        }]})
    },
    kind: "question",
    title: QUESTION,
    told: |decision| {
        let answers = &decision["updatedInput"]["answers"];
        match answers.get(QUESTION).and_then(|a| a.as_str()) {
            Some(chosen) => format!("the claude agent got your answer: {chosen}"),
            None => {
                "the claude agent got no answer from the tray: its terminal asks instead".into()
            }
        }
    },
};

/// What the demo's claude agent asks through Claude Code's `PermissionRequest` hook.
const QUESTION: &str = "Which registry should 0.4 go to?";

/// The permission: a command to run, allowed or denied from the popup or the window.
const PUSH_THE_TAG: HookRequest = HookRequest {
    process: "claude-runs",
    tool_name: "Bash",
    tool_input: || serde_json::json!({"command": "git push origin v0.4.0", "description": "Push the release tag"}),
    kind: "permission",
    title: "Run git push origin v0.4.0",
    told: |decision| match decision["behavior"].as_str() {
        Some("allow") => "the claude agent runs git push origin v0.4.0: you allowed it".into(),
        Some("deny") => "the claude agent does not run git push: you denied it".into(),
        _ => "the claude agent got no answer from the tray: its terminal asks instead".into(),
    },
};

/// Play a claude agent that asks the way Claude Code does: a process of its own (listed as
/// the session's agent) runs this binary's `permission-hook` with the request on its stdin.
/// The person answers from the popup or the window; what the agent got is said when it
/// comes, and lf stops saying the session waits.
fn ask_through_the_hook(
    app: &AppHandle,
    store: &Shared,
    session: &str,
    project: &Path,
    bin: &Path,
    asker: &Agent,
    asks: &HookRequest,
) -> Result<()> {
    use lf_sim::StatusReport;
    let request = serde_json::json!({
        "session_id": "demo",
        "transcript_path": project.join("transcript.jsonl"),
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": asks.tool_name,
        "tool_input": (asks.tool_input)(),
    });
    let exe = std::env::current_exe().context("find lf-tray's own path")?;
    // Named as the agent lf lists; a shell that runs the hook once told to, so the tray has
    // listed it as the session's agent before the hook asks.
    let shell = bin.join(asks.process);
    std::os::unix::fs::symlink("/bin/sh", &shell)?;
    let mut child = Command::new(&shell)
        .arg("-c")
        .arg(r#"read go && printf '%s\n' "$1" | "$0" permission-hook"#)
        .arg(&exe)
        .arg(request.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("start the asking agent")?;
    let mut go = child.stdin.take().context("the asking agent's stdin")?;
    let answer = child.stdout.take().context("the asking agent's stdout")?;
    let pid = child.id();
    locked(store).set_agent(session, Some(pid))?;
    *asker.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
    locked(store).report_status(
        session,
        &StatusReport {
            state: "blocked".into(),
            kind: Some(asks.kind.into()),
            app: Some("claude".into()),
            title: Some(asks.title.into()),
            ..StatusReport::default()
        },
    )?;
    // A request made before the tray lists this process as the session's agent would find
    // no session to show it for: the hook asks once the tray does.
    if !listed_as_agent(app, session, pid) {
        say("the tray did not list the asking agent in time: its request goes to its terminal");
    }
    std::io::Write::write_all(&mut go, b"go\n")?;
    let store = Arc::clone(store);
    let session = session.to_string();
    let told = asks.told;
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = std::io::Read::read_to_string(&mut { answer }, &mut out);
        let decision: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_default();
        say(&told(&decision["hookSpecificOutput"]["decision"]));
        let working = StatusReport {
            state: "working".into(),
            ..StatusReport::default()
        };
        let _ = locked(&store).report_status(&session, &working);
    });
    Ok(())
}

/// How long the demo waits for the tray to list the asking agent: it does within a second
/// of lf's change (its debounce and one `lf monitor ps`); a busy machine gets far more.
const LISTED_WAIT: Duration = Duration::from_secs(30);

/// How often the demo looks whether the tray lists the asking agent. Looked at, not told:
/// the engine maps an agent's pid without an event of its own (the session did not change
/// for the person), and this runs for a second or two once per demo.
const LISTED_LOOK: Duration = Duration::from_millis(100);

/// Whether the tray lists `pid` as `session`'s agent within [`LISTED_WAIT`].
fn listed_as_agent(app: &AppHandle, session: &str, pid: u32) -> bool {
    use tauri::Manager;
    let shell = Arc::clone(&app.state::<Arc<crate::shell::Shell>>());
    let key = lf_tray_core::SessionKey::local(session);
    let until = std::time::Instant::now() + LISTED_WAIT;
    loop {
        let agent = shell
            .engine
            .session(&key)
            .and_then(|record| record.agent().cloned());
        if agent.and_then(|agent| agent.pid) == Some(pid) {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        sleep(LISTED_LOOK);
    }
}
