//! `cargo bench -p lf-tray --no-default-features --bench watch`
//!
//! Figures for the engine as a user runs it: `lf-tray watch --json` as a process on a home
//! written the way lf writes it, at 10 and at 10 000 Runs. Prints; asserts nothing.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use lf_sim::{Activity, Outcome, RunSpec, SessionSpec, SimHome, Surface};
use lf_tray_core::files::records::Records;
use lf_tray_core::Home;
use serde_json::Value;

mod common;
use common::stand_in_lf;

/// Enough samples for a p99 that is not just the maximum of a handful.
const EVENTS: usize = 400;
/// The idle window the goal is stated for.
const IDLE: Duration = Duration::from_secs(60);

fn main() {
    // `cargo bench` passes `--bench`; `--no-idle` skips the idle spells, and naming parts
    // (`files`, `d`, `e2`) runs only those.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let idle = !args.iter().any(|a| a == "--no-idle");
    let parts: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| ["files", "d", "e2"].contains(a))
        .collect();
    let runs_part = |part: &str| parts.is_empty() || parts.contains(&part);
    if runs_part("files") {
        files(idle);
    }
    for generation in ["d", "e2"] {
        if runs_part(generation) {
            store_generation(generation, idle);
        }
    }
}

/// Generations A and B: records in files, at 10 and at 10 000 Runs.
fn files(idle: bool) {
    let mut per_change = Vec::new();
    for runs in [10, 10_000] {
        let dir = tempfile::tempdir().unwrap();
        let sim = SimHome::new(dir.path().join("home"));
        let made = Instant::now();
        populate(&sim, runs);
        println!(
            "\n== {runs} Runs in the home (written in {:.1?})",
            made.elapsed()
        );

        let mut scans: Vec<Duration> = (0..5)
            .map(|_| {
                let started = Instant::now();
                let mut records = Records::new(Home::at(sim.home()), None);
                records.rescan();
                std::hint::black_box(records.sessions());
                started.elapsed()
            })
            .collect();
        scans.sort();
        println!("cold scan (in process, median of 5): {:.1?}", scans[2]);

        let started = Instant::now();
        let watch = Watch::start(sim.home());
        watch.next(|e| e["type"] == "snapshot");
        println!(
            "process start to first snapshot line: {:.1?}",
            started.elapsed()
        );

        let asks = dir.path().join("home/human-sessions");
        let cpu_before = watch.cpu();
        let mut latencies = Vec::with_capacity(EVENTS);
        for i in 0..EVENTS {
            let id = format!("ask_{i:032x}");
            let (tmp, path) = stage_ask(&asks, &id, &format!("Benchmark question {i}"));
            let t0 = Instant::now();
            fs::rename(&tmp, &path).unwrap();
            watch.next(|e| e["type"] == "asked" && e["session"]["id"] == id.as_str());
            latencies.push(t0.elapsed());
            // The Ask is answered and removed, as `lf ask` does, so every change meets the
            // same small list and only the home's size differs between the two runs.
            fs::remove_file(&path).unwrap();
            watch.next(|e| e["type"] == "resolved" && e["session"]["id"] == id.as_str());
        }
        let cpu = watch.cpu() - cpu_before;
        latencies.sort();
        let pct =
            |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
        println!(
            "rename → event line, {EVENTS} Asks: p50 {:.2?}, p99 {:.2?}, max {:.2?}",
            pct(0.50),
            pct(0.99),
            latencies.last().unwrap()
        );
        let change = cpu / (2 * EVENTS as u32);
        println!("CPU per Ask change (appear or disappear): {change:.1?}");
        per_change.push(change);

        if idle && runs == 10_000 {
            let before = watch.cpu();
            std::thread::sleep(IDLE);
            println!(
                "CPU while idle for {IDLE:?}, files only: {:.2?}",
                watch.cpu() - before
            );
            // With lf the safety timer runs `lf session list` once a minute; this counts
            // the tray's own CPU for it (fork, exec, reading the answer), not lf's.
            let lf = dir.path().join("lf");
            let stand_in = stand_in_lf();
            assert!(
                stand_in.is_file(),
                "no stand-in lf: run `cargo build --release -p lf-sim --bin lf` first"
            );
            std::os::unix::fs::symlink(&stand_in, &lf).unwrap();
            let with_lf = Watch::start_with(sim.home(), Some(&lf));
            with_lf.next(|e| e["type"] == "snapshot");
            let before = with_lf.cpu();
            std::thread::sleep(IDLE);
            println!(
                "CPU while idle for {IDLE:?}, with lf (one safety list): {:.2?}",
                with_lf.cpu() - before
            );
        }
        println!("peak RSS: {} KiB", watch.peak_rss_kib());
        println!("inotify watches: {}", watch.inotify_watches());
    }
    println!(
        "\ncost of one Ask change at 10 000 Runs relative to 10: {:.2}",
        per_change[1].as_secs_f64() / per_change[0].as_secs_f64()
    );
}

/// lf's real quiet time, and the idle window the goals for D and E are stated for.
const LF_QUIET: Duration = Duration::from_secs(120);
const IDLE_STORE: Duration = Duration::from_secs(600);
/// Agent deaths timed on E: each costs one list, so a few dozen give a stable p99.
const DEATHS: usize = 30;

/// Today's lfs (generations D and E): sessions only in a real SQLite store, in three
/// repositories; D followed through its `lf monitor work` readers, E through the store and
/// its agents' processes. Attention written to the store → `asked` on stdout; on E an
/// agent's death → `stopped`; a session that turns Waiting by lf's quiet time alone; and an
/// idle tray plus its lf children over ten minutes, with the planning syncs lf started.
fn store_generation(generation: &str, idle: bool) {
    let dir = tempfile::tempdir().unwrap();
    let repos = ["alpha", "beta", "gamma"].map(|name| dir.path().join(name));
    for repo in &repos {
        fs::create_dir_all(repo.join(".git")).unwrap();
    }
    let sim = SimHome::new(dir.path().join("home"));
    let specs: Vec<SessionSpec> = (0..99)
        .map(|i| SessionSpec::new(format!("S-{i:03}"), format!("Session {i}"), &repos[i % 3]))
        .collect();
    let mut store = sim.store().unwrap();
    store.create_sessions(&specs).unwrap();
    let calls = dir.path().join("calls");
    fs::create_dir_all(&calls).unwrap();
    let lf = dir.path().join("lf");
    let stand_in = stand_in_lf();
    fs::write(
        &lf,
        format!(
            "#!/bin/sh\nLF_SIM_GENERATION={generation} LF_SIM_DIR={} exec {} \"$@\"\n",
            calls.display(),
            stand_in.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&lf, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let count = |file: &str| {
        fs::read_to_string(calls.join(file))
            .map(|log| log.lines().count())
            .unwrap_or(0)
    };

    println!("\n== generation {generation}: 99 sessions in three repositories, SQLite store");
    let started = Instant::now();
    let watch = Watch::start_with(sim.home(), Some(&lf));
    watch.next(|e| e["type"] == "snapshot");
    println!(
        "process start to first snapshot line: {:.1?}",
        started.elapsed()
    );
    // D's readers send their first frames.
    std::thread::sleep(Duration::from_secs(3));

    let mut asked = Vec::new();
    let mut cleared = Vec::new();
    let runs_before = count("argv.jsonl");
    for _ in 0..2 {
        for spec in &specs {
            let t = Instant::now();
            store.activity(&spec.id, Activity::Ask).unwrap();
            watch.next(|e| e["type"] == "asked" && e["session"]["id"] == spec.id.as_str());
            asked.push(t.elapsed());
            let t = Instant::now();
            store.activity(&spec.id, Activity::Working).unwrap();
            watch.next(|e| e["type"] == "state" && e["session"]["id"] == spec.id.as_str());
            cleared.push(t.elapsed());
        }
    }
    let (p50, p99) = percentiles(&mut asked);
    println!(
        "attention written → asked line: p50 {p50:.1?}, p99 {p99:.1?} over {} (goal p50 ≤ 0.5 s, p99 ≤ 1.5 s)",
        asked.len()
    );
    let (p50, p99) = percentiles(&mut cleared);
    println!("attention cleared → state line: p50 {p50:.1?}, p99 {p99:.1?}");
    // Each change is one write by someone else; the lists it cost, the safety list aside.
    let changes = asked.len() + cleared.len();
    println!(
        "lf runs per change: {:.2} ({} runs for {changes} changes, one at a time)",
        (count("argv.jsonl") - runs_before) as f64 / changes as f64,
        count("argv.jsonl") - runs_before
    );
    // Changes apart, the tray left alone between them as a person's sessions change: what
    // one costs in lf runs, the list that rechecks a list someone may have written during
    // included. 2 s apart: past that recheck (1 s), and short of the safety list.
    let runs_before = count("argv.jsonl");
    let apart = 10;
    for spec in specs.iter().take(apart) {
        store.activity(&spec.id, Activity::Ask).unwrap();
        watch.next(|e| e["type"] == "asked" && e["session"]["id"] == spec.id.as_str());
        std::thread::sleep(Duration::from_secs(2));
        store.activity(&spec.id, Activity::Working).unwrap();
        watch.next(|e| e["type"] == "state" && e["session"]["id"] == spec.id.as_str());
        std::thread::sleep(Duration::from_secs(2));
    }
    let runs = count("argv.jsonl") - runs_before;
    println!(
        "lf runs per change, changes 2 s apart: {:.2} ({runs} runs for {} changes)",
        runs as f64 / (2 * apart) as f64,
        2 * apart
    );
    if generation.starts_with('e') {
        let process_lists = || {
            fs::read_to_string(calls.join("argv.jsonl"))
                .map(|log| {
                    log.lines()
                        .filter(|l| l.contains(r#""monitor","ps""#))
                        .count()
                })
                .unwrap_or(0)
        };
        let (runs_before, lists_before) = (count("argv.jsonl"), process_lists());
        let mut deaths = Vec::with_capacity(DEATHS);
        for spec in specs.iter().take(DEATHS) {
            let mut agent = Command::new("sleep").arg("1000").spawn().unwrap();
            store.set_agent(&spec.id, Some(agent.id())).unwrap();
            watch.next(|e| {
                e["type"] == "state"
                    && e["session"]["state"] == "active"
                    && e["session"]["id"] == spec.id.as_str()
            });
            let t = Instant::now();
            agent.kill().unwrap();
            agent.wait().unwrap();
            watch.next(|e| e["type"] == "stopped" && e["session"]["id"] == spec.id.as_str());
            deaths.push(t.elapsed());
        }
        let (p50, p99) = percentiles(&mut deaths);
        println!(
            "agent killed (no write) → stopped line: p50 {p50:.1?}, p99 {p99:.1?} over {DEATHS}"
        );
        // Each agent: lf names it (a write), the tray asks lf which process it is, and its
        // death is listed.
        println!(
            "lf runs per agent, from its start to its stop: {:.2}, of which `lf monitor ps`: {:.2}",
            (count("argv.jsonl") - runs_before) as f64 / DEATHS as f64,
            (process_lists() - lists_before) as f64 / DEATHS as f64
        );
    }
    if !idle {
        return;
    }

    // lf's real quiet rule: output without a signal, then nothing at all for 120 s.
    let written = Instant::now();
    store.activity("S-098", Activity::Quiet).unwrap();
    // Nothing at all is written for two minutes: the line may take that long.
    watch.next_within(LF_QUIET * 2, |e| {
        e["type"] == "asked" && e["session"]["id"] == "S-098"
    });
    let late = written.elapsed().saturating_sub(LF_QUIET);
    println!("waiting by quiet alone (no write): asked {late:.1?} after lf's 120 s deadline (goal ≤ 2 s)");

    std::thread::sleep(Duration::from_secs(3));
    let (runs_before, syncs_before) = (count("argv.jsonl"), count("planning-syncs.jsonl"));
    let planning_before = store.revisions().unwrap().planning;
    let (own_before, all_before) = (watch.cpu(), watch.cpu_with_children());
    std::thread::sleep(IDLE_STORE);
    let minutes = (IDLE_STORE.as_secs() / 60) as u32;
    let own = (watch.cpu() - own_before) / minutes;
    let all = (watch.cpu_with_children() - all_before) / minutes;
    let runs = count("argv.jsonl") - runs_before;
    let readers = if generation == "d" {
        " (the stand-in reader checks the store every 100 ms)"
    } else {
        ""
    };
    println!(
        "idle for {IDLE_STORE:?}: {runs} lf runs (safety lists at most {minutes}; goal: 0 self-caused); \
         CPU per minute: the tray {own:.1?}, with its lf children {all:.1?}{readers}"
    );
    println!(
        "planning syncs lf started for the tray: {} since start, {} while idle; planning \
         commits while idle: {} (goal on E: 0)",
        count("planning-syncs.jsonl"),
        count("planning-syncs.jsonl") - syncs_before,
        store.revisions().unwrap().planning - planning_before
    );
    println!("peak RSS: {} KiB", watch.peak_rss_kib());
}

fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

/// A realistic busy home: nearly all Runs are finished headless work, one in a hundred
/// is an interactive conversation with a provider session.
fn populate(sim: &SimHome, runs: usize) {
    let cwd = sim.home().join("work");
    for i in 0..runs {
        let interactive = i % 100 == 0;
        let mut spec = RunSpec::interactive(&cwd, format!("Conversation {i}"));
        if !interactive {
            spec.surface = Surface::Headless;
            spec.title = None;
        }
        let run = sim.run(&spec).unwrap();
        if interactive {
            sim.provider_session(&run).unwrap();
        } else {
            sim.terminal_receipt(&run, Outcome::Completed).unwrap();
        }
    }
}

/// An Ask record in a temporary beside its final name, synced, ready to be renamed in the
/// way lf publishes it (so the measured time starts at the rename).
fn stage_ask(dir: &Path, id: &str, title: &str) -> (PathBuf, PathBuf) {
    fs::create_dir_all(dir).unwrap();
    let record = serde_json::json!({
        "id": id, "parent_run_id": "run_00000000000000000000000000000001",
        "parent_run_dir": "/tmp/parent", "work": null, "work_selector": null,
        "title": title, "detail": "Human ask", "prompt": title, "cwd": "/tmp",
        "model": "claude", "session_run_id": null, "ready_summary": null, "status": "waiting",
    });
    let tmp = dir.join(format!("{id}.{}.tmp", std::process::id()));
    let mut file = fs::File::create(&tmp).unwrap();
    file.write_all(serde_json::to_string_pretty(&record).unwrap().as_bytes())
        .unwrap();
    file.sync_all().unwrap();
    (tmp, dir.join(format!("{id}.json")))
}

struct Watch {
    child: Child,
    lines: Receiver<Value>,
}

impl Watch {
    fn start(home: &Path) -> Watch {
        Watch::start_with(home, None)
    }

    fn start_with(home: &Path, lf: Option<&Path>) -> Watch {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lf-tray"));
        command
            .args(["watch", "--json", "--home"])
            .arg(home)
            .env("PATH", "/nonexistent")
            .env_remove("LF_BIN");
        if let Some(lf) = lf {
            command.arg("--lf").arg(lf);
        }
        // Not the runner's stdin: a watch ends at the end of a stdin pipe.
        let mut child = command
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
        self.next_within(Duration::from_secs(30), want)
    }

    /// The next line matching `want`, waiting up to `quiet` for each line.
    fn next_within(&self, quiet: Duration, want: impl Fn(&Value) -> bool) -> Value {
        loop {
            let event = self
                .lines
                .recv_timeout(quiet)
                .expect("lf-tray watch stopped answering");
            if want(&event) {
                return event;
            }
        }
    }

    /// CPU time of every thread of the process, in nanoseconds of `schedstat` (the
    /// jiffies in `stat` are too coarse for one event).
    fn cpu(&self) -> Duration {
        let tasks = format!("/proc/{}/task", self.child.id());
        let ns: u64 = fs::read_dir(tasks)
            .unwrap()
            .flatten()
            .filter_map(|t| fs::read_to_string(t.path().join("schedstat")).ok())
            .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        Duration::from_nanos(ns)
    }

    /// CPU time of the process and of its children (lf's readers, lf lists in flight).
    fn cpu_with_children(&self) -> Duration {
        let me = self.child.id().to_string();
        let children: Vec<u32> = fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    // The parent pid is the second field after the `)` that ends the name.
                    stat.rsplit_once(')')
                        .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(|p| p == me))
                        .unwrap_or(false)
                })
            })
            .collect();
        let cpu_of = |pid: u32| -> Duration {
            let ns: u64 = fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|t| fs::read_to_string(t.path().join("schedstat")).ok())
                .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .sum();
            Duration::from_nanos(ns)
        };
        self.cpu() + children.into_iter().map(cpu_of).sum::<Duration>()
    }

    fn status_field(&self, field: &str) -> String {
        fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(field).map(|v| v.trim().to_string()))
            .unwrap_or_default()
    }

    fn peak_rss_kib(&self) -> String {
        self.status_field("VmHWM:")
            .trim_end_matches(" kB")
            .to_string()
    }

    fn inotify_watches(&self) -> usize {
        let fds = format!("/proc/{}/fdinfo", self.child.id());
        fs::read_dir(fds)
            .unwrap()
            .flatten()
            .filter_map(|f| fs::read_to_string(f.path()).ok())
            .map(|info| {
                info.lines()
                    .filter(|l| l.starts_with("inotify wd:"))
                    .count()
            })
            .sum()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
