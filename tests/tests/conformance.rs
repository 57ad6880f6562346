//! The stand-in's E2 against real lf's shapes (`tests/fixtures/e2/`, see its README):
//! every key of a fixture is in the output with the same JSON type, nested, and no key
//! the fixture lacks; `state` and `actions` are lf's words exactly; enum-like values come
//! from the fixture's sets. A drift of the stand-in from lf fails here.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::{top_level_keys, until, Lf, Reaped};
use serde_json::Value;

/// `cargo test` sets the manifest directory at run time too: that one is right even when
/// the test binary was built in another clone that shared the target directory (cargo
/// keeps such a build fresh, and its compiled-in path may no longer exist).
fn fixtures() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("fixtures/e2")
}

fn fixture(name: &str) -> Value {
    let path = fixtures().join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture_text(name: &str) -> String {
    let path = fixtures().join(name);
    std::fs::read_to_string(path).unwrap()
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The differences between `out` and the shape of `want`, each with its path.
fn shape(want: &Value, out: &Value, path: &str) -> Vec<String> {
    match (want, out) {
        (Value::Object(want), Value::Object(out)) => {
            let mut errors = Vec::new();
            for key in want.keys().filter(|k| !out.contains_key(*k)) {
                errors.push(format!("{path}.{key}: missing"));
            }
            for key in out.keys().filter(|k| !want.contains_key(*k)) {
                errors.push(format!("{path}.{key}: not in lf's shape"));
            }
            for (key, value) in want {
                if let Some(got) = out.get(key) {
                    errors.extend(shape(value, got, &format!("{path}.{key}")));
                }
            }
            errors
        }
        (Value::Array(want), Value::Array(out)) => {
            if want.is_empty() {
                return (!out.is_empty())
                    .then(|| format!("{path}: lf's is empty, this has {out:?}"))
                    .into_iter()
                    .collect();
            }
            let mut errors = Vec::new();
            for (i, got) in out.iter().enumerate() {
                // An element fits one of lf's elements of its own kind.
                let candidates: Vec<&Value> = want
                    .iter()
                    .filter(|w| w.get("kind").is_none() || w.get("kind") == got.get("kind"))
                    .collect();
                let path = format!("{path}[{i}]");
                let Some(first) = candidates.first() else {
                    errors.push(format!("{path}: kind {} not in lf's", got["kind"]));
                    continue;
                };
                if !candidates.iter().any(|w| shape(w, got, &path).is_empty()) {
                    errors.extend(shape(first, got, &path));
                }
            }
            errors
        }
        (want, out) if type_name(want) != type_name(out) => vec![format!(
            "{path}: lf has {}, this has {} ({out})",
            type_name(want),
            type_name(out)
        )],
        _ => Vec::new(),
    }
}

fn assert_shape(want: &Value, out: &Value, what: &str) {
    let errors = shape(want, out, "");
    assert!(
        errors.is_empty(),
        "{what} drifted from lf:\n  {}\n{out:#}",
        errors.join("\n  ")
    );
}

/// `value` is one of `values.json`'s set `set`.
fn assert_value(set: &str, value: &Value) {
    let values = fixture("values.json");
    let allowed = values[set].as_array().unwrap();
    assert!(allowed.contains(value), "{set}: {value} not in {allowed:?}");
}

fn assert_record_values(record: &Value) {
    assert_value("session.state", &record["state"]);
    assert_value("session.attention", &record["attention"]);
    assert_value("session.title_source", &record["title_source"]);
    assert_value(
        "session.flow_membership.kind",
        &record["flow_membership"]["kind"],
    );
    for action in record["actions"].as_array().unwrap() {
        assert_value("session.actions.kind", &action["kind"]);
    }
    if let Some(records) = record["program_status"]["records"].as_array() {
        for r in records {
            assert_value("program_status.records.state", &r["state"]);
            assert_value("program_status.records.kind", &r["kind"]);
        }
    }
}

fn new_session(lf: &Lf, id: &str) {
    let repo = lf.repo_a().display().to_string();
    lf.ok(&[
        "sim",
        "new",
        id,
        "--title",
        "Pick a cache policy",
        "--cwd",
        &repo,
        "--repo",
        &repo,
        "--provider",
        "claude",
        "--model",
        "opus",
        "--task",
        "task_0f0e0d0c0b0a09080706050403020100",
        "--work-path",
        "product / APP-7",
    ]);
}

#[test]
fn session_records_follow_lfs_shape_for_a_live_a_dead_and_an_agentless_session() {
    let lf = Lf::new("e2");
    for id in ["live", "dead", "none"] {
        new_session(&lf, id);
    }
    let live_agent = Reaped(Command::new("sleep").arg("1000").spawn().unwrap());
    let mut dead_agent = Reaped(Command::new("sleep").arg("1000").spawn().unwrap());
    lf.ok(&["sim", "agent", "live", &live_agent.0.id().to_string()]);
    lf.ok(&["sim", "agent", "dead", &dead_agent.0.id().to_string()]);
    lf.ok(&[
        "sim",
        "status",
        "live",
        "blocked",
        "--kind",
        "permission",
        "--app",
        "claude",
        "--title",
        "Run the tests",
        "--msg",
        "Bash wants to run a command",
    ]);
    dead_agent.0.kill().unwrap();
    dead_agent.0.wait().unwrap();

    let list = lf.json(&["session", "list", "--json", "--all"]);
    let page = lf.json(&["session", "list", "--json", "--all", "--page"]);
    for (id, name) in [
        ("live", "session_live.json"),
        ("dead", "session_dead.json"),
        ("none", "session_agentless.json"),
    ] {
        let want = fixture(name);
        let text = lf.ok(&["session", "connect", "--json", id]);
        assert_eq!(
            top_level_keys(&text),
            top_level_keys(&fixture_text(name)),
            "{id}: lf's keys in lf's order"
        );
        let record: Value = serde_json::from_str(&text).unwrap();
        let listed = list
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap();
        let paged = page["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap();
        for (what, out) in [
            ("connect --json", &record),
            ("list", listed),
            ("page", paged),
        ] {
            assert_shape(&want, out, &format!("{id} ({what})"));
            assert_record_values(out);
            assert_eq!(out["state"], want["state"], "{id} ({what})");
            assert_eq!(out["attention"], want["attention"], "{id} ({what})");
            assert_eq!(out["actions"], want["actions"], "{id} ({what}): lf's words");
        }
    }
    let page_want = serde_json::json!({"entries": [], "next": null});
    assert_eq!(
        page.as_object().unwrap().keys().collect::<Vec<_>>(),
        page_want.as_object().unwrap().keys().collect::<Vec<_>>()
    );
}

#[test]
fn monitor_ps_follows_lfs_shape() {
    let lf = Lf::new("e2");
    new_session(&lf, "native");
    new_session(&lf, "headless");
    // A native agent: `lf session connect` on a terminal runs it as lf's child.
    let (_master, slave) = common::pty();
    let _connect = Reaped(
        lf.command_in(&lf.outside(), &["session", "connect", "native"])
            .stdin(slave)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started: Value =
        serde_json::from_str(&lf.ok(&["sim", "agent", "headless", "headless"])).unwrap();
    let headless_pid = started["pid"].as_u64().unwrap() as i32;
    let doc = until("three nodes in lf monitor ps", || {
        let doc = lf.json(&["monitor", "ps", "--json"]);
        (doc["nodes"].as_array().unwrap().len() == 3).then_some(doc)
    });
    assert_shape(&fixture("monitor_ps.json"), &doc, "lf monitor ps --json");
    for node in doc["nodes"].as_array().unwrap() {
        assert_value("ps.nodes.kind", &node["kind"]);
        assert_value("ps.nodes.state", &node["state"]);
    }
    // SAFETY: kill only sends a signal, to the headless agent this test started.
    unsafe { libc::kill(headless_pid, libc::SIGKILL) };
}
