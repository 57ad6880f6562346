//! SimHome writes what lf writes, where lf writes it, the way lf writes it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use lf_sim::{AskSpec, FlowSpec, Generation, Outcome, RunSpec, SimHome, State};
use serde_json::Value;

fn read_json(path: impl AsRef<Path>) -> Value {
    let path = path.as_ref();
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Every directory lf made is 0700, every file 0600, and no staging name is left.
fn assert_published(root: &Path) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            assert!(
                !name.ends_with(".tmp") && !name.ends_with(".staging"),
                "left behind: {}",
                path.display()
            );
            if path.is_dir() {
                assert_eq!(mode(&path), 0o700, "{}", path.display());
                stack.push(path);
            } else {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
            }
        }
    }
}

fn home() -> (tempfile::TempDir, SimHome) {
    let dir = tempfile::tempdir().unwrap();
    let home = SimHome::new(dir.path().join("lf"));
    (dir, home)
}

#[test]
fn a_generation_a_ask_is_a_private_pretty_record_with_its_asking_run() {
    let (_dir, sim) = home();
    let mut spec = AskSpec::new(
        "\n  Which release target first?\nDetails follow.",
        "/src/app",
    );
    spec.work = Some("task:task_11112222333344445555666677778888".into());
    let id = sim.ask(&spec).unwrap();
    assert!(id.starts_with("ask_") && id.len() == 36, "{id}");

    let path = sim.home().join("human-sessions").join(format!("{id}.json"));
    let text = fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("{\n  \"id\": "),
        "not lf's pretty JSON: {text}"
    );
    let record: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(record["title"], "Which release target first?");
    assert_eq!(
        record["prompt"],
        "Which release target first?\nDetails follow."
    );
    assert_eq!(record["detail"], "Human ask");
    assert_eq!(record["status"], "waiting");
    assert_eq!(record["model"], "claude:opus");
    assert_eq!(record["session_run_id"], Value::Null);
    assert_eq!(record["work"]["kind"], "task");
    assert_eq!(
        record["work_selector"],
        "task:task_11112222333344445555666677778888"
    );
    assert!(record.get("skill").is_none() && record.get("retain_completed").is_none());

    let parent = record["parent_run_id"].as_str().unwrap();
    assert_eq!(
        PathBuf::from(record["parent_run_dir"].as_str().unwrap()),
        sim.run_dir(parent)
    );
    let manifest = read_json(sim.run_dir(parent).join("manifest.json"));
    assert_eq!(manifest["surface"], "headless");
    assert_eq!(manifest["harness"], "claude");
    assert_eq!(manifest["model"], "opus");
    assert_eq!(
        manifest["subjects"][0]["selector"],
        "task:task_11112222333344445555666677778888"
    );
    assert!(manifest.get("flow").is_none());
    assert_published(sim.home());
}

#[test]
fn a_b_prime_ask_has_its_fields_and_a_prepared_run() {
    let (_dir, sim) = home();
    let sim = sim.with_generation(Generation::BPrime);
    let id = sim.ask(&AskSpec::new("Ship?", "/src/app")).unwrap();
    let record = read_json(sim.ask_path(&id));
    assert_eq!(record["skill"], Value::Null);
    assert_eq!(record["retain_completed"], false);
    assert_eq!(record["detail"], "Request for input");

    let run = sim.ask_session_run(&id).unwrap().expect("prepared Run");
    assert_eq!(record["session_run_id"], run.as_str());
    let dir = sim.run_dir(&run);
    assert!(dir.join("prepared").is_file());
    let manifest = read_json(dir.join("manifest.json"));
    assert_eq!(manifest["surface"], "tui");
    assert_eq!(manifest["parent_run_id"], record["parent_run_id"]);
    assert_eq!(manifest["flow"]["kind"], "independent");

    // The provider starting is when a prepared Run stops being prepared.
    sim.provider_session(&run).unwrap();
    assert!(!dir.join("prepared").exists() && !dir.join("launching").exists());
    assert_published(sim.home());
}

#[test]
fn an_ask_is_completed_only_once_ready_and_then_consumed() {
    let (_dir, sim) = home();
    let id = sim.ask(&AskSpec::new("Ship?", "/src/app")).unwrap();
    let err = sim.complete(&id).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "Ask session \"{id}\" is not ready; its agent must run `lf session ready \"<summary>\"` first"
        )
    );

    // Generation A records the session's Run once its provider started.
    let run = sim.run(&RunSpec::interactive("/src/app", "Ship?")).unwrap();
    sim.provider_session(&run).unwrap();
    sim.set_ask_session_run(&id, &run).unwrap();
    sim.set_ready(&id, "Ship macOS first").unwrap();
    assert_eq!(
        read_json(sim.ask_path(&id))["ready_summary"],
        "Ship macOS first"
    );

    assert_eq!(sim.complete(&id).unwrap(), "Ship macOS first");
    let record = read_json(sim.ask_path(&id));
    assert_eq!(record["status"]["completed"]["summary"], "Ship macOS first");
    assert!(sim.run_dir(&run).join("session-resolution.json").is_file());
    assert!(sim.complete(&id).is_err());

    sim.remove_ask(&id).unwrap();
    assert!(!sim.ask_path(&id).exists());
    assert_eq!(
        sim.set_ready(&id, "x").unwrap_err().to_string(),
        format!("Session {id} was not found")
    );
    assert_published(sim.home());
}

#[test]
fn a_run_lives_its_life_in_its_sharded_directory() {
    let (_dir, sim) = home();
    let mut spec = RunSpec::interactive("/src/app", "Fix session restore\nplease");
    spec.subjects = vec!["project:proj_1".into()];
    let run = sim.run(&spec).unwrap();
    assert!(run.starts_with("run_") && run.len() == 36, "{run}");
    let dir = sim.home().join("runs").join(&run[4..6]).join(&run);
    assert_eq!(dir, sim.run_dir(&run));

    let manifest = read_json(dir.join("manifest.json"));
    assert_eq!(manifest["schema_version"], 1);
    assert_eq!(manifest["run_id"], run.as_str());
    assert_eq!(manifest["surface"], "tui");
    assert_eq!(manifest["cwd"], "/src/app");
    assert_eq!(manifest["subjects"][0]["source"], "declared");
    time::OffsetDateTime::parse(
        manifest["created_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(
        read_json(dir.join("context.json"))["context"]["task"]["text"],
        "Fix session restore\nplease"
    );

    sim.provider_session(&run).unwrap();
    let session = read_json(dir.join("provider-session.json"));
    assert_eq!(session["schema_version"], 1);
    assert!(!session["provider_session_id"].as_str().unwrap().is_empty());

    sim.provider_session_event(&run).unwrap();
    sim.provider_session_event(&run).unwrap();
    let events = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let seqs: Vec<Value> = events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .inspect(|e| assert_eq!(e["type"], "provider_session_observed"))
        .map(|e| e["seq"].clone())
        .collect();
    assert_eq!(seqs, [1, 2]);

    let pid = std::process::id();
    let started = lf_sim::process_start_time(pid).unwrap();
    sim.client(&run, pid, started).unwrap();
    let client = read_json(dir.join("provider-clients").join(format!("{pid}.json")));
    assert_eq!(client["pid"], pid);
    assert_eq!(client["schema_version"], 1);
    let at = time::OffsetDateTime::parse(
        client["started_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(at.unix_timestamp(), started);
    assert!(sim.client(&run, 1, started).is_err(), "lf refuses pid 1");
    assert_published(sim.home());

    sim.remove_client(&run, pid).unwrap();
    assert!(!dir
        .join("provider-clients")
        .join(format!("{pid}.json"))
        .exists());

    sim.resolve(&run).unwrap();
    let resolution = read_json(dir.join("session-resolution.json"));
    assert_eq!(resolution["schema_version"], 1);

    sim.terminal_receipt(&run, Outcome::Completed).unwrap();
    assert_eq!(read_json(dir.join("terminal.json"))["outcome"], "completed");
    assert!(
        sim.terminal_receipt(&run, Outcome::Failed).is_err(),
        "a second outcome conflicts"
    );
    assert_eq!(read_json(dir.join("terminal.json"))["outcome"], "completed");

    assert!(sim.name(&run, "Restore").is_err(), "names are B′ records");
    assert!(sim
        .provider_session("run_ffffffffffffffffffffffffffffffff")
        .is_err());
    assert_published(sim.home());
}

#[test]
fn b_prime_runs_record_flow_membership_and_names() {
    let (_dir, sim) = home();
    let sim = sim.with_generation(Generation::BPrime);
    let run = sim.run(&RunSpec::interactive("/src/app", "t")).unwrap();
    let dir = sim.run_dir(&run);
    assert_eq!(
        read_json(dir.join("manifest.json"))["flow"]["kind"],
        "independent"
    );
    sim.name(&run, "Session restore").unwrap();
    let name = read_json(dir.join("session-name.json"));
    assert_eq!(name["title"], "Session restore");
    assert_eq!(name["source"], "human");
    assert_published(sim.home());
}

#[test]
fn runs_and_the_database_follow_the_control_home() {
    let dir = tempfile::tempdir().unwrap();
    let sim = SimHome::new(dir.path().join("a")).with_control_home(dir.path().join("c"));
    let id = sim.ask(&AskSpec::new("q", "/src")).unwrap();
    assert!(dir
        .path()
        .join("a/human-sessions")
        .join(format!("{id}.json"))
        .is_file());
    let parent = read_json(sim.ask_path(&id))["parent_run_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(sim.run_dir(&parent).starts_with(dir.path().join("c/runs")));
    sim.flows(&[FlowSpec::new("f", "t", "review", "/src")])
        .unwrap();
    assert!(dir.path().join("c/loopflow.db").is_file());
}

#[test]
fn flows_are_kept_at_the_database_path() {
    let (_dir, sim) = home();
    assert_eq!(sim.flow_list().unwrap(), []);
    let mut ready = FlowSpec::new("task_1:ship:review:0", "Ship it", "review", "/src/app");
    ready.ready_summary = Some("Looks done".into());
    ready.work = Some("task:task_1".into());
    let waiting = FlowSpec::new("task_2:ship:review:1", "Other", "review", "/src/b");
    sim.flows(&[ready.clone(), waiting.clone()]).unwrap();
    assert_eq!(sim.flow_list().unwrap(), [ready.clone(), waiting]);
    assert_eq!(ready.listed_state(), State::Ready);
    assert!(sim.db_path().is_file());
    sim.flows(&[]).unwrap();
    assert_eq!(sim.flow_list().unwrap(), []);
    assert_published(sim.home());
}

#[test]
fn flows_are_rows_of_a_sqlite_database_in_wal_mode() {
    let (_dir, sim) = home();
    // SQLite removes the log when its last connection closes; holding one keeps it.
    let reader = sim.store().unwrap();
    let before = reader.revisions().unwrap().flows;
    sim.flows(&[FlowSpec::new("f", "t", "review", "/src")])
        .unwrap();
    let header = fs::read(sim.db_path()).unwrap();
    assert!(header.starts_with(b"SQLite format 3\0"));
    // File format version numbers 2/2 mean WAL.
    assert_eq!(header[18..20], [2, 2]);
    let wal = sim.home().join("loopflow.db-wal");
    assert!(wal.is_file());
    assert_eq!(mode(&wal), 0o600);
    assert_eq!(reader.revisions().unwrap().flows, before + 1);
    assert_eq!(sim.flow_list().unwrap().len(), 1);
}

#[test]
fn raw_bytes_are_published_like_records_but_stay_inside_the_home() {
    let (_dir, sim) = home();
    sim.raw("human-sessions/ask_broken.json", b"{not json")
        .unwrap();
    assert_eq!(
        fs::read(sim.home().join("human-sessions/ask_broken.json")).unwrap(),
        b"{not json"
    );
    assert!(sim.raw("../escape.json", b"x").is_err());
    assert!(sim.raw("/etc/escape.json", b"x").is_err());
    assert_published(sim.home());
}
