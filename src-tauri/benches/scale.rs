//! `cargo build --release -p lf-sim --bin lf && cargo bench -p lf-tray --no-default-features --bench scale`
//!
//! Issue 47's table: the release `lf-tray watch --json` against the stand-in lf of
//! generation E2 with N open sessions (about 1 % waiting, every one with a live agent, the
//! agents ten processes shared by all), at 10, 1 000 and 10 000 (or the counts named as
//! arguments). Per N: one more session set waiting per trial, median of 5, change →
//! `asked` line and the tray's own CPU for it, and of the lists the tray ran meanwhile
//! (timed by the `lf` it is pointed at) how many there were and how long after the one
//! that saw the change ended the line came; lf's own list time, and its JSON's size and
//! the time to read it into its elements (the floor under the tray's work); the tray's RSS
//! and anonymous memory (also per session), and its descriptors. Prints; asserts nothing.
//! `LF_TRAY_BENCH_BIN=<path>` measures that `lf-tray` instead (a main's, for a before →
//! after run back to back).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lf_sim::{Activity, SessionSpec, SimHome};
use lf_tray_core::lf::{Dialect, Generation};
use serde_json::value::RawValue;
use serde_json::Value;

mod common;

const TRIALS: usize = 5;
/// Agent processes, shared by all the sessions: issue 47's "10 000 sessions sharing 10
/// agents", whose descriptors the table counts.
const AGENTS: usize = 10;
/// After a change's line, the tray may still run the list that rechecks one someone wrote
/// during (a second after) and find the agents of what changed: its CPU for the change is
/// counted until then.
const SETTLE: Duration = Duration::from_secs(2);
/// A first list of 10 000 sessions, the agents' search and the snapshot take seconds on a
/// busy machine; a change's line well under one. Generous, to fail rather than hang.
const WAIT: Duration = Duration::from_secs(120);

fn main() {
    let counts = common::counts();
    let rows: Vec<String> = counts.into_iter().map(row).collect();
    println!(
        "\n| open sessions | change → event | lf's lists meanwhile | event after its list \
         ended | the tray's own CPU per change | lf's list | its JSON parsed (per session) | \
         tray RSS (anonymous) | anonymous per session | file descriptors |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}

fn row(sessions: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("alpha");
    fs::create_dir_all(repo.join(".git")).unwrap();
    let sim = SimHome::new(dir.path().join("home"));
    let ids: Vec<String> = (0..sessions).map(|i| format!("S-{i:05}")).collect();
    let specs: Vec<SessionSpec> = ids
        .iter()
        .map(|id| SessionSpec::new(id, format!("Session {id}"), &repo))
        .collect();
    let mut store = sim.store().unwrap();
    store.create_sessions(&specs).unwrap();
    let agents = Agents(
        (0..AGENTS)
            .map(|_| {
                Command::new("sleep")
                    .arg("3600")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    let named: Vec<(&str, u32)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), agents.0[i % AGENTS].id()))
        .collect();
    store.set_agents(&named).unwrap();
    // About 1 % waiting, at least one.
    for id in ids.iter().step_by(100) {
        store.activity(id, Activity::Ask).unwrap();
    }

    let lf = common::e2_lf(dir.path());
    let timed = dir.path().join("lists");
    let told_lf = timed_lists(&lf, &timed);

    let mut printed = Vec::new();
    let mut lists: Vec<Duration> = (0..TRIALS)
        .map(|_| {
            let started = Instant::now();
            let out = Command::new(&lf)
                // The very list the tray runs on generation E.
                .args(Dialect::of(Generation::E).list_args)
                .env("LF_HOME", sim.home())
                .current_dir(&repo)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let took = started.elapsed();
            printed = out.stdout;
            took
        })
        .collect();
    // The floor under the tray's own work: lf's JSON read into its elements, as the tray
    // must before it can tell which changed (each change costs two lists).
    let mut parses: Vec<Duration> = (0..TRIALS)
        .map(|_| {
            let started = Instant::now();
            let text = std::str::from_utf8(&printed).unwrap();
            let elements: Vec<&RawValue> = serde_json::from_str(text).unwrap();
            assert_eq!(elements.len(), sessions);
            started.elapsed()
        })
        .collect();

    let watch = Watch::start(sim.home(), &told_lf, &repo);
    let started = Instant::now();
    let snapshot = watch.next(|e| e["type"] == "snapshot");
    assert_eq!(snapshot["sessions"].as_array().unwrap().len(), sessions);
    let to_snapshot = started.elapsed();
    // The agents are found and watched after the snapshot: the first change is timed once
    // the tray is settled.
    std::thread::sleep(SETTLE);

    let mut latencies = Vec::new();
    let mut cpus = Vec::new();
    let mut during = Vec::new();
    let mut after_list = Vec::new();
    for trial in 0..TRIALS {
        // Not one of the waiting (every hundredth), nor one set in an earlier trial.
        let id = &ids[1 + trial * (sessions / TRIALS).max(2)];
        let cpu = watch.cpu();
        let t = Instant::now();
        let wrote = now_ns();
        store.activity(id, Activity::Ask).unwrap();
        watch.next(|e| e["type"] == "asked" && e["session"]["id"] == id.as_str());
        latencies.push(t.elapsed());
        let told = now_ns();
        // The lists that ran while the change was on its way, and the last to end before
        // the line: the one that saw it (a list that started before the write may not).
        let lists = read_lists(&timed);
        let meanwhile = lists
            .iter()
            .filter(|(start, end)| *end > wrote && *start < told);
        during.push(meanwhile.count());
        if let Some(end) = lists
            .iter()
            .map(|&(_, end)| end)
            .filter(|&end| end <= told)
            .max()
        {
            after_list.push(Duration::from_nanos(told - end));
        }
        std::thread::sleep(SETTLE);
        cpus.push(watch.cpu() - cpu);
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (rss, anon) = (watch.status_kib("VmRSS:"), watch.status_kib("RssAnon:"));
    let fds = watch.descriptors();
    during.sort();
    let row = format!(
        "| {sessions} | {:.0?} | {} | {:.0?} | {:.1?} | {:.0?} | {:.1?} ({:.1} KB) | {:.1} MB ({:.1}) | {:.1} KB | {fds} |",
        median(&mut latencies),
        during[during.len() / 2],
        median(&mut after_list),
        median(&mut cpus),
        median(&mut lists),
        median(&mut parses),
        printed.len() as f64 / sessions as f64 / 1024.0,
        rss as f64 / 1024.0,
        anon as f64 / 1024.0,
        anon as f64 / sessions as f64,
    );
    println!("{sessions} sessions: first snapshot after {to_snapshot:.1?}; {row}");
    drop(agents);
    row
}

/// An `lf` beside `lf` that runs it and, for each `session list`, appends its start and
/// end (Unix nanoseconds) to `log`: which lists the tray ran, and when. (`date` by its
/// path: the tray is run without a `PATH`.)
fn timed_lists(lf: &Path, log: &Path) -> PathBuf {
    let timed = lf.with_file_name("lf-timed");
    fs::write(
        &timed,
        format!(
            "#!/bin/sh\ncase \"$1 $2\" in\n\"session list\")\n  start=$(/bin/date +%s%N)\n  \
             {lf} \"$@\"\n  code=$?\n  echo \"$start $(/bin/date +%s%N)\" >> {log}\n  exit $code;;\n\
             esac\nexec {lf} \"$@\"\n",
            lf = lf.display(),
            log = log.display(),
        ),
    )
    .unwrap();
    fs::set_permissions(&timed, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    timed
}

/// The lists `timed_lists` wrote down: start and end, Unix nanoseconds.
fn read_lists(log: &Path) -> Vec<(u64, u64)> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let (start, end) = line.split_once(' ')?;
            Some((start.parse().ok()?, end.parse().ok()?))
        })
        .collect()
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The agents' processes, ended with the row, or when it fails.
struct Agents(Vec<Child>);

impl Drop for Agents {
    fn drop(&mut self) {
        for agent in &mut self.0 {
            let _ = agent.kill();
            let _ = agent.wait();
        }
    }
}

struct Watch {
    child: Child,
    lines: Receiver<Value>,
}

impl Watch {
    fn start(home: &Path, lf: &Path, repo: &Path) -> Watch {
        // Another build's binary in `LF_TRAY_BENCH_BIN` (a main's, kept aside) is measured
        // in its place: two builds run back to back on one machine's load.
        let tray = std::env::var_os("LF_TRAY_BENCH_BIN").map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_lf-tray")),
            PathBuf::from,
        );
        let mut child = Command::new(tray)
            .args(["watch", "--json", "--home"])
            .arg(home)
            .arg("--lf")
            .arg(lf)
            .env("PATH", "/nonexistent")
            .env_remove("LF_BIN")
            .current_dir(repo)
            // Not the runner's stdin: a watch ends at the end of a stdin pipe.
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    fn next(&self, want: impl Fn(&Value) -> bool) -> Value {
        loop {
            let event = self
                .lines
                .recv_timeout(WAIT)
                .expect("lf-tray watch stopped answering");
            if want(&event) {
                return event;
            }
        }
    }

    /// CPU time of every thread of the process (`schedstat`, in nanoseconds: the
    /// jiffies in `stat` are too coarse for one change).
    fn cpu(&self) -> Duration {
        let ns: u64 = fs::read_dir(format!("/proc/{}/task", self.child.id()))
            .unwrap()
            .flatten()
            .filter_map(|t| fs::read_to_string(t.path().join("schedstat")).ok())
            .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        Duration::from_nanos(ns)
    }

    fn status_kib(&self, field: &str) -> u64 {
        fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap_or(0)
    }

    fn descriptors(&self) -> usize {
        fs::read_dir(format!("/proc/{}/fd", self.child.id()))
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
