//! The headless tray with more live sessions than its descriptor limit allows one pidfd
//! each (issue 47): it stays within the limit, says once what it gave up, and still tells
//! every change.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use lf_sim::{Activity, SessionSpec, SimHome};
use serde_json::Value;

/// A list of 2 000 sessions by a debug stand-in, on a busy 2-core machine, takes a few
/// seconds; each wait allows several.
const EVENT_TIMEOUT: Duration = Duration::from_secs(60);
/// The usual soft limit of a desktop session, which the tray is started with here as hard
/// limit too, so that it cannot raise it.
const LIMIT: u64 = 1024;
const SESSIONS: usize = 2000;
/// More agents than a limit of 1 024 leaves pidfds for, two sessions each.
const AGENTS: usize = 1000;

fn stand_in_lf() -> PathBuf {
    let lf = Path::new(env!("CARGO_BIN_EXE_lf-tray")).with_file_name("lf");
    assert!(
        lf.is_file(),
        "no stand-in lf at {}: run `cargo build -p lf-sim --bin lf` first",
        lf.display()
    );
    lf
}

/// Processes that run until the test ends.
struct Agents(Vec<Child>);

impl Agents {
    fn start(n: usize) -> Agents {
        Agents(
            (0..n)
                .map(|_| Command::new("sleep").arg("600").spawn().unwrap())
                .collect(),
        )
    }

    fn kill(&mut self, i: usize) {
        self.0[i].kill().unwrap();
        self.0[i].wait().unwrap();
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

struct Watch {
    child: Child,
    lines: Receiver<Value>,
    seen: Vec<Value>,
}

impl Watch {
    #[track_caller]
    fn expect(&mut self, what: &str, want: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(event) => {
                    let found = want(&event);
                    self.seen.push(event);
                    if found {
                        return;
                    }
                }
                Err(_) => panic!("no {what} within {EVENT_TIMEOUT:?}"),
            }
        }
    }

    fn descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .count()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is(event: &Value, kind: &str, id: &str) -> bool {
    event["type"] == kind && event["session"]["id"] == id
}

#[test]
fn at_a_limit_of_1024_with_2000_live_sessions_every_change_is_still_told() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let repo = root.join("alpha");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("sim")).unwrap();
    let sim = SimHome::new(root.join("home"));
    let ids: Vec<String> = (0..SESSIONS).map(|i| format!("S-{i:04}")).collect();
    let specs: Vec<SessionSpec> = ids
        .iter()
        .map(|id| SessionSpec::new(id, format!("Title {id}"), &repo))
        .collect();
    let mut store = sim.store().unwrap();
    store.create_sessions(&specs).unwrap();
    let mut agents = Agents::start(AGENTS);
    let named: Vec<(&str, u32)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), agents.0[i / 2].id()))
        .collect();
    store.set_agents(&named).unwrap();

    let mut command = Command::new(env!("CARGO_BIN_EXE_lf-tray"));
    command
        .args(["watch", "--json", "--home"])
        .arg(sim.home())
        .arg("--lf")
        .arg(stand_in_lf())
        .env_clear()
        .env("HOME", root.join("user"))
        .env("PATH", root.join("empty"))
        .env("LF_SIM_DIR", root.join("sim"))
        .env("LF_SIM_GENERATION", "e2")
        .current_dir(&repo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe and changes only the child's own limit.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            let limit = libc::rlimit {
                rlim_cur: LIMIT as libc::rlim_t,
                rlim_max: LIMIT as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let mut watch = Watch {
        child,
        lines,
        seen: Vec::new(),
    };
    watch.expect("the snapshot", |e| e["type"] == "snapshot");
    let snapshot = watch.seen.last().unwrap();
    assert_eq!(snapshot["sessions"].as_array().unwrap().len(), SESSIONS);
    // The agents are found by one `lf monitor ps`, and watched as far as the limit
    // allows: past it, said once.
    watch.expect("the warning that agents go unwatched", |e| {
        e["type"] == "warning" && e.to_string().contains("open-file limit")
    });
    let held = watch.descriptors();
    assert!(
        (held as u64) < LIMIT * 3 / 4 + 64,
        "{held} descriptors held at a limit of {LIMIT}"
    );

    // A watched agent's death is told without any write; the first agents are found and
    // watched first (lf's ids sort as the sessions do not, so which are watched is not
    // known: both ends are killed, and a write makes lf list them all).
    agents.kill(0);
    agents.kill(AGENTS - 1);
    store.activity("S-1000", Activity::Ask).unwrap();
    watch.expect("S-1000 asked", |e| is(e, "asked", "S-1000"));
    for id in ["S-0000", "S-0001", "S-1998", "S-1999"] {
        if !watch.seen.iter().any(|e| is(e, "stopped", id)) {
            watch.expect(&format!("{id} stopped"), |e| is(e, "stopped", id));
        }
    }
    // Still within the limit, lf still runs, and changes are still told.
    store.activity("S-1500", Activity::Ask).unwrap();
    watch.expect("S-1500 asked", |e| is(e, "asked", "S-1500"));
    let warnings = watch
        .seen
        .iter()
        .filter(|e| e["type"] == "warning" && e.to_string().contains("open-file limit"))
        .count();
    assert_eq!(warnings, 1, "said once: {:#?}", watch.seen);
}
