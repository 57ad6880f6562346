//! The stand-in `lf` of generation E, variants E1 and E2 (loopflow-model.md §10): what
//! tells E apart, the record's new keys, the program's own status deciding Waiting, an
//! agent's death read at query time, and a `monitor work` reader that re-reads Sessions
//! on a clock and starts a planning sync for the repository it is scoped to.

mod common;

use std::fs;
use std::process::{Child, Command};
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::monitor::Monitor;
use common::{ids, top_level_keys, Lf, D_KEYS};
use lf_sim::SessionSpec;
use serde_json::{json, Value};

/// The first word of each line under `Commands:`.
fn verbs(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .map_while(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

/// A process that stands for an agent; killed and reaped by [`Agent::die`].
struct Agent(Child);

impl Agent {
    fn start() -> Agent {
        Agent(Command::new("sleep").arg("1000").spawn().unwrap())
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }

    /// Dead and reaped, so that no zombie is left to look alive to anyone.
    fn die(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const ACTIVE_ELSEWHERE: &str =
    "This Session is active in another terminal; use Move here to transfer it";

fn new_session(lf: &Lf, id: &str, extra: &[&str]) {
    let repo = lf.repo_a().display().to_string();
    let mut args = vec!["sim", "new", id, "--title", id, "--cwd", &repo];
    args.extend_from_slice(extra);
    lf.ok(&args);
}

fn record(lf: &Lf, id: &str) -> Value {
    lf.json(&["session", "connect", "--json", id])
}

fn waiting_ids(lf: &Lf) -> Vec<String> {
    let args = [
        "session",
        "list",
        "--json",
        "--all",
        "--waiting",
        "--interactive",
        "all",
        "--limit",
        "0",
    ];
    ids(&lf.json(&args))
}

#[test]
fn help_texts_tell_e_apart() {
    for generation in ["e1", "e2", "e"] {
        let lf = Lf::new(generation);
        let top = lf.ok(&["--help"]);
        assert_eq!(
            verbs(&top),
            ["session", "monitor", "history", "desktop"],
            "{top}"
        );
        assert!(
            top.contains("-a, --agent <PROVIDER[:MODEL]>") && !top.contains("--model"),
            "{top}"
        );
        assert_eq!(
            verbs(&lf.ok(&["monitor", "--help"])),
            ["active", "work", "ps", "top", "prune"]
        );
        // §10: the verbs of `lf session` are D's; observe-status is no longer hidden.
        assert_eq!(
            verbs(&lf.ok(&["session", "--help"])),
            [
                "resume",
                "history",
                "list",
                "connect",
                "ensure",
                "replace",
                "rename",
                "bind",
                "observe-status"
            ]
        );
        let list = lf.ok(&["session", "list", "--help"]);
        assert!(
            list.contains("--waiting") && !list.contains("--needs-me"),
            "{list}"
        );
        let history = lf.ok(&["history", "--help"]);
        assert_eq!(verbs(&history), ["pages", "show", "usage", "replay"]);
        for args in [
            &["desktop", "open"][..],
            &["desktop", "open", "--session", "x"],
        ] {
            let err = lf.fails(1, args);
            assert!(err.starts_with("Error: lf desktop needs macOS"), "{err}");
        }
        // The agent flag is accepted before the command.
        lf.ok(&["-a", "codex:gpt-5-codex", "session", "list", "--json"]);
        lf.ok(&["--agent=claude", "session", "list", "--json"]);
        assert_eq!(lf.ok(&["--version"]), "lf 0.63.0\n");
    }
    // What E added is not in D.
    let d = Lf::new("d");
    assert_eq!(verbs(&d.ok(&["--help"])), ["session", "monitor"]);
    assert!(d
        .fails(2, &["history", "--help"])
        .contains("unrecognized subcommand 'history'"));
    assert!(d
        .fails(2, &["session", "observe-status", "x"])
        .contains("unrecognized subcommand 'observe-status'"));
    assert_eq!(verbs(&d.ok(&["monitor", "--help"])), ["work", "active"]);
    let err = Lf::new("e3").fails(1, &["--version"]);
    assert!(err.contains("a, c, d0, d, e1 or e2"), "{err}");
}

#[test]
fn observe_status_is_refused_but_recorded_like_every_call() {
    let lf = Lf::new("e2");
    new_session(&lf, "s", &[]);
    let args = ["session", "observe-status", "s", "--terminal", "T-1"];
    let err = lf.fails(1, &args);
    assert!(err.starts_with("Error: lf session observe-status"), "{err}");
    assert!(err.contains("a tray must never call it"), "{err}");
    assert_eq!(lf.calls().last().unwrap()["argv"], json!(args));
    let store = lf.store();
    assert_eq!(store.process_argvs().unwrap().last().unwrap()[1..], args);
    assert_eq!(record(&lf, "s")["program_status"], Value::Null);
}

#[test]
fn records_add_program_status_and_each_variants_own_key() {
    for (generation, extra) in [("e1", "provider_generation"), ("e2", "agent_process_id")] {
        let lf = Lf::new(generation);
        new_session(&lf, "s", &["--provider", "codex", "--model", "gpt-5-codex"]);
        let text = lf.ok(&["session", "connect", "--json", "s"]);
        let mut keys: Vec<&str> = D_KEYS.to_vec();
        keys.extend(["program_status", extra]);
        assert_eq!(top_level_keys(&text), keys, "{generation}");
        let fresh: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(fresh["program_status"], Value::Null);
        assert_eq!(fresh["flow_membership"], json!({"kind": "independent"}));
        assert_eq!(fresh["state"], "unknown");
        assert_eq!(fresh["open_argv"][0], "/usr/bin/env");

        lf.ok(&[
            "sim",
            "status",
            "s",
            "working",
            "--app",
            "codex",
            "--progress",
            "40",
        ]);
        lf.ok(&[
            "sim",
            "status",
            "s",
            "blocked",
            "--kind",
            "question",
            "--title",
            "Which cache?",
            "--msg",
            "LRU or LFU",
            "--id",
            "q-7",
        ]);
        let listed = lf.json(&["session", "list", "--json", "--all"]);
        assert_eq!(
            listed[0]["program_status"],
            record(&lf, "s")["program_status"]
        );
        assert_eq!(
            listed[0]["program_status"],
            json!({"seen": false, "records": [
                {"state": "working", "id": "status-1", "kind": null, "progress": 40,
                 "app": "codex", "title": null, "msg": null},
                {"state": "blocked", "id": "q-7", "kind": "question", "progress": null,
                 "app": null, "title": "Which cache?", "msg": "LRU or LFU"}
            ]}),
            "oldest first, newest last"
        );
        let page = lf.json(&["session", "list", "--json", "--all", "--page"]);
        assert_eq!(page["entries"][0], listed[0]);
    }

    let e1 = Lf::new("e1");
    new_session(&e1, "s", &[]);
    assert_eq!(record(&e1, "s")["provider_generation"], 1);
    let (first, second) = (Agent::start(), Agent::start());
    e1.ok(&["sim", "agent", "s", &first.pid()]);
    e1.ok(&["sim", "agent", "s", &first.pid()]);
    assert_eq!(record(&e1, "s")["provider_generation"], 1);
    e1.ok(&["sim", "agent", "s", &second.pid()]);
    let r = record(&e1, "s");
    assert_eq!(r["provider_generation"], 2, "a new agent process");
    assert!(r.get("agent_process_id").is_none(), "{r}");

    let e2 = Lf::new("e2");
    new_session(&e2, "s", &[]);
    assert_eq!(record(&e2, "s")["agent_process_id"], Value::Null);
    e2.ok(&["sim", "agent", "s", &first.pid()]);
    let r = record(&e2, "s");
    // lf's Process id of the agent (§10.6): a UUID v4, not the OS pid.
    let agent_id = r["agent_process_id"].as_str().unwrap().to_string();
    let uuid = uuid::Uuid::parse_str(&agent_id).unwrap();
    assert_eq!(uuid.get_version_num(), 4, "{agent_id}");
    assert!(r.get("provider_generation").is_none(), "{r}");
    e2.ok(&["sim", "agent", "s", &first.pid()]);
    assert_eq!(
        record(&e2, "s")["agent_process_id"],
        agent_id.as_str(),
        "the same process keeps its id"
    );
    e2.ok(&["sim", "agent", "s", &second.pid()]);
    assert_ne!(record(&e2, "s")["agent_process_id"], agent_id.as_str());
    e2.ok(&["sim", "agent", "s", "none"]);
    assert_eq!(record(&e2, "s")["agent_process_id"], Value::Null);

    // Usage errors, and the verbs exist only from E on.
    for bad in [
        &["sim", "status", "s", "asleep"][..],
        &["sim", "status", "s", "blocked", "--kind", "nap"],
        &["sim", "status", "s"],
        &["sim", "agent", "s", "pid-1"],
        &["sim", "agent", "s"],
    ] {
        e2.fails(2, bad);
    }
    assert!(e2
        .fails(1, &["sim", "agent", "nope", "123"])
        .contains("Session nope was not found"));
    let d = Lf::new("d");
    new_session(&d, "s", &[]);
    d.fails(2, &["sim", "status", "s", "blocked"]);
    d.fails(2, &["sim", "agent", "s", "123"]);
}

#[test]
fn the_newest_program_status_decides_waiting_over_inference() {
    let quiet = 1.0;
    for generation in ["e1", "e2"] {
        let lf = Lf::new(generation).with_quiet(quiet);
        new_session(&lf, "i", &[]);
        new_session(&lf, "h", &["--headless"]);
        let store = lf.store();
        let sessions = || store.revisions().unwrap().sessions;

        let before = sessions();
        lf.ok(&[
            "sim",
            "status",
            "i",
            "blocked",
            "--kind",
            "permission",
            "--title",
            "Run cargo publish --dry-run",
            "--msg",
            "Bash wants to run a command",
        ]);
        assert_eq!(sessions(), before + 1, "a report commits");
        assert_eq!(waiting_ids(&lf), ["i"]);
        let r = record(&lf, "i");
        assert_eq!(r["attention"], "waiting");
        let newest = r["program_status"]["records"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(newest["kind"], "permission");
        assert_eq!(newest["title"], "Run cargo publish --dry-run");
        let text = lf.ok(&["session", "list", "--all"]);
        assert!(text.starts_with("i  waiting Repository  i\n"), "{text}");

        // Working supersedes blocked; a question the stream saw cannot override it.
        lf.ok(&["sim", "status", "i", "working"]);
        lf.ok(&["sim", "ask", "i"]);
        assert_eq!(waiting_ids(&lf), Vec::<String>::new());

        // Idle waits on an interactive Session only.
        lf.ok(&["sim", "status", "i", "idle"]);
        lf.ok(&["sim", "status", "h", "idle"]);
        assert_eq!(waiting_ids(&lf), ["i"]);
        lf.ok(&["sim", "status", "h", "blocked", "--kind", "auth"]);
        assert_eq!(waiting_ids(&lf), ["h", "i"]);

        // An explicit clear suppresses inference too, even past the quiet window.
        for id in ["i", "h"] {
            lf.ok(&["sim", "status", id, "clear"]);
            lf.ok(&["sim", "quiet", id]);
        }
        sleep(Duration::from_secs_f64(quiet + 0.3));
        assert_eq!(waiting_ids(&lf), Vec::<String>::new());
        for id in ["i", "h"] {
            let r = record(&lf, id);
            assert_eq!(r["attention"], Value::Null);
            let records = r["program_status"]["records"].as_array().unwrap();
            assert_eq!(records.last().unwrap()["state"], "clear");
        }

        // Without any report, E infers as D does.
        new_session(&lf, "plain", &[]);
        lf.ok(&["sim", "hand-back", "plain"]);
        assert_eq!(waiting_ids(&lf), ["plain"]);
        lf.ok(&["sim", "complete", "plain"]);
        new_session(&lf, "done", &[]);
        lf.ok(&["sim", "status", "done", "blocked"]);
        lf.ok(&["sim", "complete", "done"]);
        assert_eq!(
            waiting_ids(&lf),
            Vec::<String>::new(),
            "completed never waits"
        );
    }
}

#[test]
fn a_dead_agent_never_waits_and_closes_an_e2_session_without_a_commit() {
    let lf = Lf::new("e2");
    new_session(&lf, "s", &[]);
    new_session(&lf, "other", &[]);
    let mut agent = Agent::start();
    lf.ok(&["sim", "agent", "s", &agent.pid()]);
    lf.ok(&["sim", "status", "s", "blocked", "--kind", "permission"]);
    let alive = record(&lf, "s");
    assert_eq!(
        (alive["state"].clone(), alive["attention"].clone()),
        (json!("active"), json!("waiting"))
    );
    // Actions follow `state` (§10.6): a live agent refuses Open here and offers Move
    // here, though no terminal is known.
    assert_eq!(alive["actions"][0]["unavailable_reason"], ACTIVE_ELSEWHERE);
    assert_eq!(alive["actions"][1]["kind"], "move_here");
    assert_eq!(alive["terminal_ids"], json!([]));
    assert_eq!(waiting_ids(&lf), ["s"]);

    let store = lf.store();
    let before = store.revisions().unwrap().sessions;
    agent.die();
    let dead = record(&lf, "s");
    assert_eq!(dead["state"], "closed");
    assert_eq!(dead["attention"], Value::Null);
    assert_eq!(dead["agent_process_id"], alive["agent_process_id"]);
    assert_eq!(
        dead["actions"],
        json!([{"kind": "open", "label": "Open here",
        "help": "Open this Session in a terminal", "unavailable_reason": null}])
    );
    // Still open: listed without --history, and no longer waiting.
    assert_eq!(
        ids(&lf.json(&["session", "list", "--json", "--all"])),
        ["other", "s"]
    );
    assert_eq!(waiting_ids(&lf), Vec::<String>::new());
    let text = lf.ok(&["session", "list", "--all", "--search", "s"]);
    assert!(text.contains("s  closed  Repository  s\n"), "{text}");
    assert_eq!(
        store.revisions().unwrap().sessions,
        before,
        "death is read, not written"
    );

    // Without an agent, E2 keeps D's rule minus `interrupted`.
    lf.ok(&["sim", "agent", "s", "none"]);
    lf.ok(&["sim", "interrupt", "s"]);
    let r = record(&lf, "s");
    assert_eq!(
        (r["state"].clone(), r["attention"].clone()),
        (json!("unknown"), json!("waiting"))
    );
    let mut client = Agent::start();
    lf.ok(&["sim", "attach", "s", &client.pid()]);
    let attached = record(&lf, "s");
    assert_eq!(attached["state"], "active");
    assert_eq!(attached["actions"][1]["kind"], "move_here");
    assert_eq!(attached["terminal_ids"], json!([]), "lf never makes one up");
    client.die();
    assert_eq!(record(&lf, "s")["state"], "unknown");
    // A client its launcher marked is listed by that mark, only when the mark's tty is
    // the terminal its stdin is on (§10.6).
    let (_master, slave) = common::pty();
    let tty = common::tty_name(&slave);
    for (mark_tty, listed) in [
        (Some(tty.as_str()), json!(["T-MARK"])),
        (Some("/dev/pts/9999"), json!([])),
        (None, json!([])),
    ] {
        let mut command = Command::new("sleep");
        command
            .arg("1000")
            .env("LF_TERMINAL_ID", "T-MARK")
            .stdin(slave.try_clone().unwrap());
        match mark_tty {
            Some(tty) => command.env("LF_TERMINAL_TTY", tty),
            None => command.env_remove("LF_TERMINAL_TTY"),
        };
        let mut marked = Agent(command.spawn().unwrap());
        lf.ok(&["sim", "attach", "s", &marked.pid()]);
        assert_eq!(record(&lf, "s")["terminal_ids"], listed, "{mark_tty:?}");
        marked.die();
    }
}

#[test]
fn on_e1_a_dead_agent_only_stops_waiting() {
    let lf = Lf::new("e1");
    new_session(&lf, "s", &[]);
    let mut agent = Agent::start();
    lf.ok(&["sim", "agent", "s", &agent.pid()]);
    lf.ok(&["sim", "ask", "s"]);
    let r = record(&lf, "s");
    assert_eq!(
        (r["state"].clone(), r["attention"].clone()),
        (json!("unknown"), json!("waiting"))
    );
    agent.die();
    let r = record(&lf, "s");
    assert_eq!(
        (r["state"].clone(), r["attention"].clone()),
        (json!("unknown"), Value::Null)
    );
    lf.ok(&["sim", "interrupt", "s"]);
    assert_eq!(record(&lf, "s")["state"], "interrupted");
    lf.ok(&["sim", "agent", "s", "none"]);
    assert_eq!(record(&lf, "s")["attention"], "waiting");
}

fn planning_syncs(lf: &Lf) -> Vec<Value> {
    fs::read_to_string(lf.sim_dir().join("planning-syncs.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn scope(monitor: &mut Monitor, id: u64, repo: Option<&std::path::Path>) {
    monitor.send(
        json!({"action": "scope", "id": id, "repo": repo, "headless": false,
                        "task": null, "wave": null, "activity": null}),
    );
}

/// The frame that answers request `id` with `part`.
fn answer(monitor: &Monitor, part: &str, id: u64) -> Value {
    monitor
        .until(Duration::from_secs(3), |f| {
            f["part"] == part && f["answers"] == id
        })
        .unwrap_or_else(|| panic!("no {part} frame answered {id}"))
}

#[test]
fn a_repo_scope_starts_one_planning_sync_and_a_null_scope_none() {
    let lf = Lf::new("e2");
    lf.store()
        .create_sessions(&[
            SessionSpec::new("a-1", "A", lf.repo_a()),
            SessionSpec::new("b-1", "B", lf.repo_b()),
        ])
        .unwrap();
    let store = lf.store();
    let mut monitor = Monitor::start(&lf);
    monitor.next("planning", Duration::from_secs(5)).unwrap();
    let start = store.revisions().unwrap().planning;

    scope(&mut monitor, 1, None);
    monitor.send(json!({"action": "refresh", "id": 2}));
    answer(&monitor, "planning", 2);
    assert_eq!(planning_syncs(&lf), Vec::<Value>::new());
    assert_eq!(store.revisions().unwrap().planning, start);

    let before = Instant::now();
    scope(&mut monitor, 3, Some(&lf.repo_a().join("src")));
    let frame = answer(&monitor, "sessions", 3);
    assert_eq!(ids(&frame["body"]["entries"]), ["a-1"]);
    let syncs = planning_syncs(&lf);
    assert_eq!(syncs.len(), 1, "{syncs:?}");
    assert_eq!(syncs[0]["pid"], monitor.child.id());
    assert_eq!(syncs[0]["repo"], json!(lf.repo_a()));
    let at = syncs[0]["at"].as_f64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        at <= now && now - at < before.elapsed().as_secs_f64() + 0.5,
        "{at}"
    );
    // The reader committed on its own, and its frame already shows it.
    assert_eq!(store.revisions().unwrap().planning, start + 1);
    assert_eq!(frame["revisions"]["planning"], start + 1);
    assert_eq!(
        store.planning_syncs().unwrap(),
        [(lf.repo_a().display().to_string(), monitor.child.id())]
    );

    // The same repository again keeps its sync; another one starts one more.
    scope(&mut monitor, 4, Some(&lf.repo_a()));
    answer(&monitor, "sessions", 4);
    assert_eq!(planning_syncs(&lf).len(), 1);
    scope(&mut monitor, 5, Some(&lf.repo_b()));
    answer(&monitor, "sessions", 5);
    let syncs = planning_syncs(&lf);
    assert_eq!(syncs.len(), 2);
    assert_eq!(syncs[1]["repo"], json!(lf.repo_b()));
    assert_eq!(store.revisions().unwrap().planning, start + 2);
    // Not inside a repository: no Sessions part and no sync.
    scope(&mut monitor, 6, Some(&lf.outside()));
    let frame = answer(&monitor, "sessions", 6);
    assert!(frame["unavailable"].is_string(), "{frame}");
    assert_eq!(planning_syncs(&lf).len(), 2);
    assert_eq!(monitor.close(), (Some(0), String::new()));

    // D's reader stays read-only.
    let d = Lf::new("d");
    d.store()
        .create_session(&SessionSpec::new("a-1", "A", d.repo_a()))
        .unwrap();
    let mut monitor = Monitor::start(&d);
    let planning = d.store().revisions().unwrap().planning;
    scope(&mut monitor, 1, Some(&d.repo_a()));
    answer(&monitor, "sessions", 1);
    assert_eq!(planning_syncs(&d), Vec::<Value>::new());
    assert_eq!(d.store().revisions().unwrap().planning, planning);
}

fn entry(frame: &Value, id: &str) -> Value {
    frame["body"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {frame}"))
        .clone()
}

#[test]
fn an_agents_death_reaches_a_scoped_reader_within_two_seconds_without_a_commit() {
    let lf = Lf::new("e2");
    new_session(&lf, "a-1", &[]);
    new_session(&lf, "a-2", &[]);
    let mut agents = [Agent::start(), Agent::start()];
    lf.ok(&["sim", "agent", "a-1", &agents[0].pid()]);
    lf.ok(&["sim", "agent", "a-2", &agents[1].pid()]);
    lf.ok(&["sim", "status", "a-1", "blocked", "--kind", "permission"]);
    let mut monitor = Monitor::start(&lf);
    scope(&mut monitor, 1, Some(&lf.repo_a()));
    let frame = answer(&monitor, "sessions", 1);
    let a1 = entry(&frame, "a-1");
    assert_eq!(
        (a1["state"].clone(), a1["attention"].clone()),
        (json!("active"), json!("waiting"))
    );
    let sessions = frame["revisions"]["sessions"].clone();

    // Nothing commits after the death: only the reader's clock finds it.
    let died = Instant::now();
    agents[0].die();
    let closed = |f: &Value| f["part"] == "sessions" && entry(f, "a-1")["state"] == "closed";
    let frame = monitor
        .until(Duration::from_secs(4), closed)
        .expect("the death reached the stream");
    let took = died.elapsed();
    assert!(took < Duration::from_millis(2800), "{took:?}");
    assert_eq!(entry(&frame, "a-1")["attention"], Value::Null);
    assert_eq!(
        frame["revisions"]["sessions"], sessions,
        "no commit announced it"
    );

    eprintln!("a death with no commit reached the reader in {took:?}");

    // A Process commit (any lf call, as an agent's own lf makes) makes the reader look
    // again at once, well before its next 2 s reading.
    let died = Instant::now();
    agents[1].die();
    lf.ok(&["--version"]);
    let frame = monitor
        .until(Duration::from_secs(3), |f| {
            f["part"] == "sessions" && entry(f, "a-2")["state"] == "closed"
        })
        .unwrap();
    let took = died.elapsed();
    assert!(took < Duration::from_millis(1200), "{took:?}");
    assert_eq!(frame["revisions"]["sessions"], sessions);
    eprintln!("a death followed by a Process commit reached the reader in {took:?}");
    monitor.close();
}

/// `lf sim many`: a home of many Sessions in one call, every Nth waiting (the window's
/// ten-thousand-session suite makes its home so).
#[test]
fn sim_many_makes_sessions_every_nth_waiting() {
    let lf = Lf::new("e2");
    let repo = lf.repo_a().display().to_string();
    lf.ok(&["sim", "many", "25", "--cwd", &repo, "--ask-every", "10"]);
    let all = lf.json(&[
        "session",
        "list",
        "--json",
        "--all",
        "--interactive",
        "all",
        "--limit",
        "0",
    ]);
    let listed = ids(&all);
    assert_eq!(listed.len(), 25, "{listed:?}");
    assert!(listed.contains(&"S-00024".to_string()), "{listed:?}");
    assert_eq!(waiting_ids(&lf), ["S-00000", "S-00010", "S-00020"]);
    let refused = lf.fails(2, &["sim", "many", "lots", "--cwd", &repo]);
    assert!(refused.contains("invalid value 'lots'"), "{refused}");
}
