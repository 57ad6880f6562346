//! lf's agent processes (generation E2, loopflow-model.md §10.6): which process on this
//! machine is the agent lf names by its own id (`agent_process_id`, a UUID), read from
//! `lf monitor ps --json` or an older build's `lf monitor active --json`, and whether a
//! pid still is that process.
//!
//! lf writes nothing when an agent dies together with its lf, and reads the death only
//! at its next query; the tray learns of it at once by watching the process.

use serde_json::Value;

use crate::lf::record::Runs;

/// lf's rule against a reused pid: the process must have started within 3 s of the start
/// lf recorded (`os_started_at`, from `ps` etime, about 1 s resolution).
const START_TOLERANCE_SECS: f64 = 3.0;

/// One process lf lists: its lf id (without the `process:` of a node id), its pid and
/// start (unix seconds) where lf knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub id: String,
    pub pid: Option<u32>,
    pub started_at: Option<i64>,
}

/// An agent lf named, as found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub pid: u32,
    pub started_at: Option<i64>,
    pub runs: Runs,
}

/// The agent processes of `lf monitor ps --json`: its `agent_process` nodes. lf lists
/// only processes not proven dead, so an agent missing here is dead or finished.
pub(crate) fn decode_ps(out: &[u8]) -> Result<Vec<Process>, String> {
    let doc: Value = serde_json::from_slice(out).map_err(|e| format!("not JSON: {e}"))?;
    let nodes = doc
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or("no `nodes` list")?;
    Ok(nodes
        .iter()
        .filter(|node| node.get("kind").and_then(Value::as_str) == Some("agent_process"))
        .filter_map(|node| process(node, "started_at"))
        .collect())
}

/// The processes of an older build's `lf monitor active --json` (E2a):
/// `sessions[].processes[]`, with pids but no start times.
pub(crate) fn decode_active(out: &[u8]) -> Result<Vec<Process>, String> {
    let doc: Value = serde_json::from_slice(out).map_err(|e| format!("not JSON: {e}"))?;
    let sessions = doc
        .get("sessions")
        .and_then(Value::as_array)
        .ok_or("no `sessions` list")?;
    Ok(sessions
        .iter()
        .filter_map(|s| s.get("processes").and_then(Value::as_array))
        .flatten()
        .filter_map(|p| process(p, "started_at"))
        .collect())
}

fn process(node: &Value, started_key: &str) -> Option<Process> {
    let id = node.get("id")?.as_str()?;
    let id = id.strip_prefix("process:").unwrap_or(id).trim();
    if id.is_empty() {
        return None;
    }
    Some(Process {
        id: id.to_string(),
        pid: node
            .get("pid")
            .and_then(Value::as_u64)
            .and_then(|pid| u32::try_from(pid).ok())
            .filter(|pid| *pid > 1),
        started_at: node.get(started_key).and_then(Value::as_i64),
    })
}

/// Whether `pid` is still the process lf recorded, started at `started_at`: running (not
/// a zombie) and started within lf's tolerance of it. Without a recorded start only the
/// pid can be checked. `None` where this system cannot tell.
pub(crate) fn is_still(pid: u32, started_at: Option<i64>) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        let Some(start) = crate::proc::start_time(pid as i32) else {
            return Some(false);
        };
        Some(started_at.is_none_or(|at| (start - at as f64).abs() <= START_TOLERANCE_SECS))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pid, started_at, START_TOLERANCE_SECS);
        None
    }
}

/// Where the process runs: on a terminal (it has a controlling tty) or headless.
pub(crate) fn runs(pid: u32) -> Runs {
    #[cfg(target_os = "linux")]
    {
        match crate::proc::has_terminal(pid as i32) {
            Some(true) => Runs::Terminal,
            Some(false) => Runs::Headless,
            None => Runs::Unknown,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        Runs::Unknown
    }
}

/// The agents of `named` lf ids found among `processes`, with where each runs; an id
/// with no process (or none with a pid that is still the one lf recorded) is missing.
pub(crate) fn find(named: &[String], processes: &[Process]) -> Vec<(String, Option<Found>)> {
    named
        .iter()
        .map(|id| {
            let found = processes
                .iter()
                .find(|p| &p.id == id)
                .and_then(|p| Some((p.pid?, p.started_at)))
                .filter(|(pid, at)| is_still(*pid, *at) != Some(false))
                .map(|(pid, started_at)| Found {
                    pid,
                    started_at,
                    runs: runs(pid),
                });
            (id.clone(), found)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AGENT: &str = "44444444-4444-4444-8444-444444444444";

    fn now() -> i64 {
        time::OffsetDateTime::now_utc().unix_timestamp()
    }

    #[test]
    fn ps_nodes_give_the_agents_by_lf_id() {
        let doc = json!({"schema_version": 1, "observed_at": 1791600000, "nodes": [
            {"id": "process:11111111-1111-4111-8111-111111111111", "parent_id": null,
             "kind": "process", "label": "lf session", "pid": 4100, "started_at": 1791599000,
             "state": "waiting"},
            {"id": format!("process:{AGENT}"), "parent_id": "process:11111111-1111-4111-8111-111111111111",
             "kind": "agent_process", "label": "claude", "worktree": "/w", "wave": null,
             "pid": 4242, "started_at": 1791599001, "state": "waiting"},
            {"id": "process:unknown-one", "kind": "agent_process", "pid": null, "state": "unknown"},
            {"id": "process:new", "kind": "a_kind_from_tomorrow", "pid": 7}
        ]});
        let got = decode_ps(doc.to_string().as_bytes()).unwrap();
        assert_eq!(
            got,
            [
                Process {
                    id: AGENT.into(),
                    pid: Some(4242),
                    started_at: Some(1791599001)
                },
                Process {
                    id: "unknown-one".into(),
                    pid: None,
                    started_at: None
                }
            ]
        );
        assert!(decode_ps(b"{}").is_err());
        assert!(decode_ps(b"not json").is_err());
    }

    #[test]
    fn active_sessions_give_pids_without_starts() {
        let doc = json!({"sessions": [
            {"id": "S", "title": "t", "work": null,
             "processes": [{"id": AGENT, "pid": 4242, "provider": "claude", "state": "waiting"}]},
            {"id": "T", "processes": []}
        ]});
        let got = decode_active(doc.to_string().as_bytes()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].id.as_str(), got[0].pid), (AGENT, Some(4242)));
        assert_eq!(got[0].started_at, None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_reused_pid_is_not_the_agent() {
        let me = std::process::id();
        let born = crate::proc::start_time(me as i32).unwrap() as i64;
        assert_eq!(is_still(me, Some(born)), Some(true));
        assert_eq!(
            is_still(me, None),
            Some(true),
            "no start recorded: the pid alone"
        );
        // lf recorded a start well before this process began: another process had the pid.
        assert_eq!(is_still(me, Some(born - 60)), Some(false));
        assert_eq!(is_still(me, Some(now() + 60)), Some(false));
        let processes = [Process {
            id: AGENT.into(),
            pid: Some(me),
            started_at: Some(born - 60),
        }];
        let named = [AGENT.to_string(), "gone".to_string()];
        assert_eq!(
            find(&named, &processes),
            [(AGENT.into(), None), ("gone".into(), None)]
        );
        let processes = [Process {
            started_at: Some(born),
            ..processes[0].clone()
        }];
        let found = find(&named, &processes);
        assert_eq!(found[0].1.as_ref().map(|f| f.pid), Some(me));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_process_without_a_terminal_runs_headless() {
        let mut child = std::process::Command::new("setsid")
            .args(["sleep", "30"])
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // setsid forks when it is a group leader; wait until the pid runs sleep itself.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read(format!("/proc/{}/cmdline", child.id()))
            .is_ok_and(|c| !c.starts_with(b"sleep"))
            && std::time::Instant::now() < deadline
        {
            std::thread::yield_now();
        }
        assert_eq!(runs(child.id()), Runs::Headless);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(runs(child.id()), Runs::Unknown, "gone");
    }
}
