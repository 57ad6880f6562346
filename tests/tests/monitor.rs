//! `lf monitor work --watch --json` of the stand-in (loopflow-model.md §9.5), driven as
//! a tray drives it: requests on stdin, frames on stdout, other processes writing.

mod common;

use std::fs;
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::monitor::Monitor;
use common::Lf;
use lf_sim::SessionSpec;
use serde_json::{json, Value};

fn attention(frame: &Value, id: &str) -> Value {
    frame["body"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {frame}"))["attention"]
        .clone()
}

fn setup(quiet: f64) -> Lf {
    let lf = Lf::new("d").with_quiet(quiet);
    let mut headless = SessionSpec::new("a-headless", "Headless", lf.repo_a());
    headless.interactive = false;
    let mut specs = vec![
        SessionSpec::new("a-2", "Second", lf.repo_a().join("src")),
        SessionSpec::new("a-1", "First", lf.repo_a()),
        SessionSpec::new("b-1", "Other repo", lf.repo_b()),
        headless,
    ];
    specs.push(SessionSpec::new("a-done", "Done", lf.repo_a()));
    let mut store = lf.store();
    store.create_sessions(&specs).unwrap();
    store.complete("a-done").unwrap();
    lf
}

#[test]
fn a_scope_gets_its_repos_open_sessions_and_changes_arrive_within_a_second() {
    let lf = setup(120.0);
    let store = lf.store();
    let processes = store.process_count().unwrap();
    let mut monitor = Monitor::start(&lf);
    let planning = monitor.next("planning", Duration::from_secs(5)).unwrap();
    assert_eq!(planning["home"], json!(lf.home()));
    assert_eq!(store.process_count().unwrap(), processes + 1);

    monitor.scope(7, &lf.repo_a().join("src"));
    let frame = monitor.next("sessions", Duration::from_secs(2)).unwrap();
    assert_eq!(frame["answers"], 7);
    assert_eq!(frame["unavailable"], Value::Null);
    assert_eq!(frame["body"]["repo"], json!(lf.repo_a()));
    assert_eq!(frame["body"]["includes_headless"], false);
    assert_eq!(common::ids(&frame["body"]["entries"]), ["a-1", "a-2"]);
    assert_eq!(frame["body"]["entries"][0]["open_argv"][0], "/usr/bin/env");
    let revisions = frame["revisions"].clone();
    for domain in ["planning", "sessions", "flows", "processes", "usage"] {
        assert!(revisions[domain].is_i64(), "{revisions}");
    }
    assert!(frame["sequence"].as_u64().unwrap() > planning["sequence"].as_u64().unwrap());

    let asked = Instant::now();
    lf.ok(&["sim", "ask", "a-2"]);
    let frame = monitor.next("sessions", Duration::from_secs(1)).unwrap();
    assert!(asked.elapsed() < Duration::from_secs(1));
    assert_eq!(attention(&frame, "a-2"), "waiting");
    assert_eq!(attention(&frame, "a-1"), Value::Null);

    // Another repository's change moves the revision but not this part's content.
    lf.ok(&["sim", "ask", "b-1"]);
    let heartbeat = monitor.next("heartbeat", Duration::from_secs(3)).unwrap();
    assert_eq!(heartbeat["body"], json!({"projections": {}}));
    assert!(
        monitor.frames.try_recv().is_err(),
        "nothing but the heartbeat"
    );

    // The reader commits nothing while it watches.
    let before = store.revisions().unwrap();
    sleep(Duration::from_millis(500));
    assert_eq!(store.revisions().unwrap(), before);

    monitor.send(json!({"action": "refresh", "id": 9}));
    let frame = monitor.next("sessions", Duration::from_secs(2)).unwrap();
    assert_eq!(frame["answers"], 9);

    monitor.send(
        json!({"action": "scope", "id": 10, "repo": null, "headless": true,
                        "task": null, "wave": null, "activity": null}),
    );
    lf.ok(&["sim", "ask", "a-1"]);
    assert!(monitor
        .next("sessions", Duration::from_millis(800))
        .is_none());

    assert_eq!(monitor.close(), (Some(0), String::new()));
}

#[test]
fn the_quiet_deadline_sends_a_frame_without_any_write() {
    let quiet = 1.5;
    let lf = setup(quiet);
    let mut monitor = Monitor::start(&lf);
    monitor.scope(1, &lf.repo_a());
    monitor.next("sessions", Duration::from_secs(2)).unwrap();
    lf.ok(&["sim", "ask", "a-1"]);
    let frame = monitor.next("sessions", Duration::from_secs(1)).unwrap();
    assert_eq!(attention(&frame, "a-1"), "waiting");
    // Output without a signal: no longer Waiting until the quiet window passes.
    lf.ok(&["sim", "quiet", "a-1"]);
    let quieted = Instant::now();
    let frame = monitor.next("sessions", Duration::from_secs(1)).unwrap();
    assert_eq!(attention(&frame, "a-1"), Value::Null);
    let revision = frame["revisions"]["sessions"].clone();

    let frame = monitor
        .next("sessions", Duration::from_secs_f64(quiet + 1.0))
        .unwrap();
    let waited = quieted.elapsed().as_secs_f64();
    assert!(waited >= quiet - 0.05 && waited < quiet + 1.0, "{waited}");
    assert_eq!(attention(&frame, "a-1"), "waiting");
    assert_eq!(
        frame["revisions"]["sessions"], revision,
        "no write announced it"
    );
    monitor.close();
}

#[test]
fn headless_scopes_include_headless_runs() {
    let lf = setup(120.0);
    let mut monitor = Monitor::start(&lf);
    monitor.send(
        json!({"action": "scope", "id": 1, "repo": lf.repo_a(), "headless": true,
                        "task": null, "wave": null, "activity": null}),
    );
    let frame = monitor.next("sessions", Duration::from_secs(2)).unwrap();
    assert_eq!(frame["body"]["includes_headless"], true);
    assert_eq!(
        common::ids(&frame["body"]["entries"]),
        ["a-1", "a-2", "a-headless"]
    );
}

#[test]
fn a_muted_reader_sends_nothing_until_unmuted() {
    let lf = setup(120.0);
    let mut monitor = Monitor::start(&lf);
    monitor.scope(1, &lf.repo_a());
    monitor.next("sessions", Duration::from_secs(2)).unwrap();
    let mute = lf.sim_dir().join("mute-monitor");
    fs::write(&mute, "").unwrap();
    sleep(Duration::from_millis(50));
    while monitor.frames.try_recv().is_ok() {}
    lf.ok(&["sim", "ask", "a-1"]);
    assert!(
        monitor
            .frames
            .recv_timeout(Duration::from_millis(2500))
            .is_err(),
        "no frame, not even a heartbeat"
    );
    fs::remove_file(&mute).unwrap();
    let frame = monitor.next("sessions", Duration::from_secs(1)).unwrap();
    assert_eq!(attention(&frame, "a-1"), "waiting");
    monitor.next("heartbeat", Duration::from_secs(3)).unwrap();
}

#[test]
fn bad_requests_end_the_reader() {
    let lf = setup(120.0);
    let mut monitor = Monitor::start(&lf);
    monitor.send(json!({"action": "refresh", "id": 1, "extra": true}));
    let (code, stderr) = monitor.close();
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("Error: invalid reader request: "),
        "{stderr}"
    );
}

#[test]
fn only_generation_d_has_a_monitor() {
    let lf = Lf::new("d0");
    let err = lf.fails(2, &["monitor", "work", "--watch", "--json"]);
    assert!(err.contains("unrecognized subcommand 'monitor'"), "{err}");
}
