//! The stand-in `lf` of generations D and D0 (loopflow-model.md §9): help texts, the
//! SQLite inventory behind `lf session list`, Waiting, `connect`, `rename`, and the
//! Process row every call commits.

mod common;

use std::fs;
use std::io::Read;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use common::{ids, pty, top_level_keys, Lf, D_KEYS};
use lf_sim::{Activity, AskSpec, SessionSpec};

#[test]
fn help_texts_tell_the_generations_apart() {
    let verbs = |help: &str| -> Vec<String> {
        help.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .map_while(|l| l.split_whitespace().next().map(String::from))
            .collect()
    };
    for generation in ["d", "d0"] {
        let lf = Lf::new(generation);
        let help = lf.ok(&["session", "--help"]);
        assert_eq!(
            verbs(&help),
            ["resume", "history", "list", "connect", "ensure", "replace", "rename", "bind"],
            "{help}"
        );
        assert_eq!(lf.ok(&["--version"]), "lf 0.63.0\n");
    }
    let d = Lf::new("d");
    let list = d.ok(&["session", "list", "--help"]);
    assert!(
        list.contains("--waiting") && !list.contains("--needs-me"),
        "{list}"
    );
    for flag in [
        "--json",
        "--all",
        "--interactive",
        "--history",
        "--limit",
        "--offset",
    ] {
        assert!(list.contains(flag), "{flag}: {list}");
    }
    for flag in ["--page", "--after", "--task", "--orphan", "--search"] {
        assert!(list.contains(flag), "{flag}: {list}");
    }
    assert_eq!(verbs(&d.ok(&["monitor", "--help"])), ["work", "active"]);

    let d0 = Lf::new("d0");
    let list = d0.ok(&["session", "list", "--help"]);
    assert!(
        list.contains("--needs-me") && !list.contains("--waiting"),
        "{list}"
    );
    for lf in [&d0, &Lf::new("c"), &Lf::new("a")] {
        let err = lf.fails(2, &["monitor", "--help"]);
        assert!(err.contains("unrecognized subcommand 'monitor'"), "{err}");
        assert_eq!(lf.ok(&["--version"]), "lf 0.63.0\n");
    }

    let c = Lf::new("c");
    assert_eq!(
        verbs(&c.ok(&["session", "--help"])),
        [
            "history", "list", "connect", "ensure", "replace", "complete", "rename", "bind",
            "import", "ready"
        ]
    );
    let a = Lf::new("a").ok(&["session", "--help"]);
    assert_eq!(
        verbs(&a),
        ["list", "open", "complete", "approve", "iterate"]
    );
}

/// 150 Sessions over two repositories in one transaction, plus a few of every other
/// kind: 120 open interactive ones in repo A, 30 in repo B, headless, completed and
/// repository-less ones.
fn inventory(lf: &Lf) {
    let mut specs = Vec::new();
    for i in 0..150 {
        let (cwd, name) = if i < 120 {
            (lf.repo_a().join("src"), "a")
        } else {
            (lf.repo_b(), "b")
        };
        // Titles in the opposite order of ids, so title order and id order differ.
        specs.push(SessionSpec::new(
            format!("s-{name}-{i:03}"),
            format!("Title {:03}", 999 - i),
            cwd,
        ));
    }
    for i in 0..5 {
        let mut spec = SessionSpec::new(format!("h-{i}"), format!("Headless {i}"), lf.repo_a());
        spec.interactive = false;
        specs.push(spec);
    }
    specs.push(SessionSpec::new("done-1", "Done", lf.repo_a()));
    specs.push(SessionSpec::new("loose-1", "Loose", lf.outside()));
    let mut store = lf.store();
    let before = store.revisions().unwrap().sessions;
    store.create_sessions(&specs).unwrap();
    store.complete("done-1").unwrap();
    assert_eq!(store.revisions().unwrap().sessions, before + 2);
}

#[test]
fn list_defaults_scope_to_the_repo_of_the_cwd_and_cut_at_100() {
    let lf = Lf::new("d");
    inventory(&lf);
    let in_a = lf.repo_a().join("src");

    let listed = lf.ids_in(&in_a, &[]);
    assert_eq!(listed.len(), 100);
    assert!(listed.iter().all(|id| id.starts_with("s-a-")), "{listed:?}");
    // Title order: the highest index has the lowest title.
    assert_eq!(listed[0], "s-a-119");
    assert_eq!(listed[99], "s-a-020");

    assert_eq!(lf.ids_in(&in_a, &["--limit", "0"]).len(), 120);
    assert_eq!(lf.ids_in(&lf.repo_b(), &["--limit", "0"]).len(), 30);
    // Outside any repository nothing is filtered, but the limit still holds.
    assert_eq!(lf.ids_in(&lf.outside(), &[]).len(), 100);
    assert_eq!(lf.ids_in(&lf.outside(), &["--limit", "0"]).len(), 151);
    assert_eq!(lf.ids_in(&in_a, &["--all", "--limit", "0"]).len(), 151);
    // A Session without a repository drops out under any repo filter.
    assert!(!lf
        .ids_in(&in_a, &["--limit", "0"])
        .contains(&"loose-1".into()));

    let headless = lf.ids_in(&in_a, &["--interactive", "false"]);
    assert_eq!(headless, ["h-0", "h-1", "h-2", "h-3", "h-4"]);
    assert_eq!(
        lf.ids_in(&in_a, &["--interactive", "all", "--limit", "0"])
            .len(),
        125
    );
    assert!(!lf
        .ids_in(&in_a, &["--limit", "0"])
        .contains(&"done-1".into()));
    let history = lf.ids_in(&in_a, &["--history", "--limit", "0"]);
    assert!(history.contains(&"done-1".into()));

    let offset = lf.ids_in(&in_a, &["--offset", "10", "--limit", "5"]);
    assert_eq!(
        offset,
        ["s-a-109", "s-a-108", "s-a-107", "s-a-106", "s-a-105"]
    );
    assert_eq!(
        lf.ids_in(&lf.outside(), &["--all", "--search", "title 85"]),
        [
            "s-b-149", "s-b-148", "s-b-147", "s-b-146", "s-b-145", "s-b-144", "s-b-143", "s-b-142",
            "s-b-141", "s-b-140"
        ]
    );

    let err = lf.fails(2, &["session", "list", "--interactive", "maybe"]);
    assert!(err.contains("invalid value 'maybe'"), "{err}");
    let text = lf.ok_in(&lf.repo_b(), &["session", "list", "--limit", "1"]);
    assert_eq!(
        text,
        "s-b-149  unknown Repository  Title 850\n  Open here — Open this Session in a terminal\n"
    );
}

#[test]
fn tasks_and_orphans_filter_the_inventory() {
    let lf = Lf::new("d");
    let mut store = lf.store();
    let mut bound = SessionSpec::new("t-1", "Bound", lf.repo_a());
    bound.task = Some("task_1".into());
    bound.work_path = Some("product / LOO-1".into());
    store
        .create_sessions(&[bound, SessionSpec::new("o-1", "Orphan", lf.repo_a())])
        .unwrap();
    assert_eq!(lf.ids_in(&lf.repo_a(), &["--task", "task_1"]), ["t-1"]);
    assert_eq!(lf.ids_in(&lf.repo_a(), &["--orphan"]), ["o-1"]);
    let text = lf.ok_in(&lf.repo_a(), &["session", "list", "--task", "task_1"]);
    assert!(
        text.starts_with("t-1  unknown product / LOO-1  Bound\n"),
        "{text}"
    );
}

#[test]
fn waiting_is_chosen_before_the_page_is_cut() {
    let lf = Lf::new("d");
    inventory(&lf);
    // Last in title order, so a limit cut first would never reach it.
    lf.store().activity("s-a-000", Activity::Ask).unwrap();
    let args = [
        "session",
        "list",
        "--json",
        "--all",
        "--waiting",
        "--limit",
        "1",
    ];
    let waiting = lf.json(&args);
    assert_eq!(ids(&waiting), ["s-a-000"]);
    assert_eq!(waiting[0]["attention"], "waiting");
    let err = lf.fails(2, &["session", "list", "--needs-me"]);
    assert!(err.contains("unexpected argument '--needs-me'"), "{err}");

    let d0 = Lf::new("d0");
    inventory(&d0);
    d0.store().activity("s-a-000", Activity::Ask).unwrap();
    let args = [
        "session",
        "list",
        "--json",
        "--all",
        "--needs-me",
        "--limit",
        "1",
    ];
    assert_eq!(ids(&d0.json(&args)), ["s-a-000"]);
    assert!(d0
        .fails(2, &["session", "list", "--waiting"])
        .contains("unexpected argument '--waiting'"));
}

#[test]
fn pages_walk_in_id_order_until_next_is_null() {
    let lf = Lf::new("d");
    inventory(&lf);
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = vec![
            "session", "list", "--json", "--all", "--page", "--limit", "40",
        ];
        if let Some(after) = &after {
            args.extend(["--after", after.as_str()]);
        }
        let page = lf.json(&args);
        pages += 1;
        let entries = ids(&page["entries"]);
        seen.extend(entries.clone());
        match page["next"].as_str() {
            Some(next) => {
                assert_eq!(entries.len(), 40);
                assert_eq!(Some(next), entries.last().map(String::as_str));
                after = Some(next.to_string());
            }
            None => break,
        }
    }
    assert_eq!(pages, 4);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(seen, sorted, "id order, no repeats");
    assert_eq!(seen.len(), 151);

    let err = lf.run_in(
        &lf.outside(),
        &["session", "list", "--json", "--page", "--limit", "0"],
    );
    assert_eq!(err.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&err.stderr),
        "Error: paged Session inventory requires a positive limit\n"
    );
    lf.fails(2, &["session", "list", "--json", "--after", "s-a-001"]);
    lf.fails(2, &["session", "list", "--page"]);
    lf.fails(2, &["session", "list", "--json", "--page", "--offset", "3"]);
}

#[test]
fn every_call_commits_one_process_row() {
    let lf = Lf::new("d");
    let calls: [&[&str]; 7] = [
        &["--version"],
        &["session", "--help"],
        &["session", "list", "--json"],
        &["session", "list", "--bogus"],
        &["sim", "new", "x", "--title", "X", "--cwd", "."],
        &["session", "connect", "--json", "x"],
        &["monitor", "work", "--json"],
    ];
    for args in calls {
        lf.run_in(&lf.outside(), args);
    }
    let store = lf.store();
    assert_eq!(store.process_count().unwrap(), 7);
    // Each row is committed as its lf starts and again as it exits (lf's upsert).
    assert_eq!(store.revisions().unwrap().processes, 14);
    assert_eq!(
        store.process_argvs().unwrap()[2][1..],
        ["session", "list", "--json"]
    );
    // Only the writer verb moved the Sessions revision.
    assert_eq!(store.revisions().unwrap().sessions, 1);

    // The knobs still work, after the row is committed.
    fs::write(lf.sim_dir().join("fail"), "lf is broken\n").unwrap();
    assert_eq!(lf.fails(1, &["session", "list"]), "Error: lf is broken\n");
    assert_eq!(store.process_count().unwrap(), 8);

    // Generation A keeps no Process rows and makes no database for a list.
    let a = Lf::new("a");
    a.ok(&["session", "list", "--json"]);
    assert!(!a.home().join("loopflow.db").exists());
}

/// Whether the home's database has lf's `store_revisions` table.
fn keeps_revisions(lf: &Lf) -> bool {
    let db = rusqlite::Connection::open(lf.home().join("loopflow.db")).unwrap();
    db.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'store_revisions')",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn store_revisions_are_kept_from_d_on_and_not_before() {
    for (generation, kept) in [("c", false), ("d0", false), ("d", true), ("e2", true)] {
        let lf = Lf::new(generation);
        // A store a test made first is made this lf's once it runs.
        lf.store();
        lf.ok(&["session", "--help"]);
        assert_eq!(keeps_revisions(&lf), kept, "{generation}");
        // Writes go on without the table where there is none.
        lf.store()
            .create_session(&SessionSpec::new("S-1", "One", lf.repo_a()))
            .unwrap();
        assert_eq!(keeps_revisions(&lf), kept, "{generation}");
    }
}

#[test]
fn a_slow_exit_holds_after_the_answer_and_before_the_process_row_ends() {
    let lf = Lf::new("e2");
    lf.ok(&["--version"]);
    let before = lf.store().revisions().unwrap().processes;
    fs::write(lf.sim_dir().join("slow-exit"), "").unwrap();
    let mut child = lf
        .command_in(&lf.outside(), &["session", "list", "--json"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let held = lf.sim_dir().join("exit-held");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !held.exists() {
        assert!(std::time::Instant::now() < deadline, "never held");
        sleep(Duration::from_millis(10));
    }
    // It recorded its start; its end is not committed yet.
    assert_eq!(lf.store().revisions().unwrap().processes, before + 1);
    assert!(child.try_wait().unwrap().is_none(), "it waits to exit");
    fs::remove_file(lf.sim_dir().join("slow-exit")).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(lf.store().revisions().unwrap().processes, before + 2);
}

#[test]
fn a_hanging_lf_hangs_in_every_generation() {
    let lf = Lf::new("d");
    fs::write(lf.sim_dir().join("hang"), "").unwrap();
    let mut child = lf
        .command_in(&lf.outside(), &["session", "list"])
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn sessions_live_only_in_sqlite() {
    let lf = Lf::new("d");
    // A leftover generation-A Ask file in the home is not a D Session.
    lf.sim_home()
        .ask(&AskSpec::new("Old question", lf.repo_a()))
        .unwrap();
    assert_eq!(
        lf.json(&["session", "list", "--json", "--all"]),
        serde_json::json!([])
    );
    assert_eq!(lf.ok(&["session", "list", "--all"]), "No Sessions.\n");
}

#[test]
fn waiting_follows_the_activity_reading_and_the_quiet_clock() {
    let quiet = 1.5;
    let lf = Lf::new("d").with_quiet(quiet);
    let repo = lf.repo_a().display().to_string();
    lf.ok(&["sim", "new", "i", "--title", "I", "--cwd", &repo]);
    lf.ok(&[
        "sim",
        "new",
        "h",
        "--title",
        "H",
        "--cwd",
        &repo,
        "--headless",
    ]);
    let attention = || {
        let list = lf.json(&["session", "list", "--json", "--all", "--interactive", "all"]);
        let of = |id: &str| {
            list.as_array()
                .unwrap()
                .iter()
                .find(|r| r["id"] == id)
                .map(|r| r["attention"].clone())
                .unwrap()
        };
        (of("i"), of("h"))
    };
    let waiting = serde_json::json!("waiting");
    let null = serde_json::Value::Null;
    // No reading yet: not Waiting, however long it has been.
    assert_eq!(attention(), (null.clone(), null.clone()));

    for id in ["i", "h"] {
        lf.ok(&["sim", "ask", id]);
    }
    assert_eq!(attention(), (waiting.clone(), waiting.clone()));
    for id in ["i", "h"] {
        lf.ok(&["sim", "working", id]);
    }
    assert_eq!(attention(), (null.clone(), null.clone()));
    for id in ["i", "h"] {
        lf.ok(&["sim", "hand-back", id]);
    }
    // A hand-back is Waiting at once only for an interactive Session.
    assert_eq!(attention(), (waiting.clone(), null.clone()));

    for id in ["i", "h"] {
        lf.ok(&["sim", "quiet", id]);
    }
    assert_eq!(attention(), (null.clone(), null.clone()));
    let store = lf.store();
    let before = store.revisions().unwrap().sessions;
    sleep(Duration::from_secs_f64(quiet + 0.3));
    assert_eq!(attention(), (waiting.clone(), waiting.clone()));
    assert_eq!(
        store.revisions().unwrap().sessions,
        before,
        "quiet arriving writes nothing"
    );

    // A tool running stays not Waiting past the quiet window.
    lf.ok(&["sim", "working", "i"]);
    sleep(Duration::from_secs_f64(quiet + 0.3));
    assert_eq!(attention().0, null);

    lf.ok(&["sim", "ask", "i"]);
    lf.ok(&["sim", "complete", "i"]);
    let history = lf.json(&["session", "list", "--json", "--all", "--history"]);
    assert_eq!(history[0]["state"], "closed");
    assert_eq!(history[0]["attention"], null);
}

#[test]
fn records_have_every_field_of_d_in_order() {
    let lf = Lf::new("d");
    let mut spec = SessionSpec::new("s-1", "Decide the cache policy", lf.repo_a().join("src"));
    spec.provider = Some("codex".into());
    spec.model = Some("gpt-5-codex".into());
    spec.task = Some("task_5".into());
    lf.store()
        .create_sessions(&[spec, SessionSpec::new("loose", "Loose", lf.outside())])
        .unwrap();
    let text = lf.ok(&["session", "connect", "--json", "s-1"]);
    assert_eq!(top_level_keys(&text), D_KEYS);
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    let home = lf.home().display().to_string();
    assert_eq!(
        record,
        serde_json::json!({
            "primary_scope": null, "attention": null, "task_primary": false,
            "task_ids": ["task_5"], "id": "s-1",
            "workspace": {"machine_id": "MACHINE-LOCAL-SIM", "worktree": lf.repo_a(),
                          "task_id": "task_5", "unavailable": null},
            "interactive": true, "work": {"kind": "task", "id": "task_5"}, "wave_id": null,
            "work_path": null,
            "actions": [{"kind": "open", "label": "Open here",
                         "help": "Open this Session in a terminal", "unavailable_reason": null}],
            "title": "Decide the cache policy", "title_source": "generated",
            "flow_membership": {"kind": "independent"}, "detail": "codex:gpt-5-codex",
            "provider": "codex", "cwd": lf.repo_a().join("src"), "state": "unknown",
            "ready_summary": null,
            "open_argv": ["/usr/bin/env", format!("LF_BIN={}", common::LF),
                          format!("LF_HOME={home}"), common::LF, "session", "connect", "s-1"],
            "terminal_ids": []
        })
    );
    let loose = lf.json(&["session", "connect", "--json", "loose"]);
    assert_eq!(loose["workspace"], serde_json::Value::Null);
    assert_eq!(loose["detail"], "");
    assert!(!text.contains("\"kind\": \"flow\"") && !text.contains("\"kind\": \"conversation\""));
}

#[test]
fn a_live_client_makes_a_session_active_until_it_dies() {
    let lf = Lf::new("d");
    lf.store()
        .create_session(&SessionSpec::new("s", "S", lf.repo_a()))
        .unwrap();
    let mut client = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = client.id().to_string();
    lf.ok(&["sim", "attach", "s", &pid]);
    let record = lf.json(&["session", "connect", "--json", "s"]);
    assert_eq!(record["state"], "active");
    assert_eq!(
        record["actions"],
        serde_json::json!([
            {"kind": "open", "label": "Open here", "help": "Open this Session in a terminal",
             "unavailable_reason": "This Session is active in another terminal; use Move here to transfer it"},
            {"kind": "move_here", "label": "Move here",
             "help": "Stop the other client and resume here; unsent text there is lost",
             "unavailable_reason": null}
        ])
    );
    client.kill().unwrap();
    // Killed but not yet reaped: a zombie is not a live client.
    until_zombie(client.id());
    assert_eq!(
        lf.json(&["session", "connect", "--json", "s"])["state"],
        "unknown"
    );
    client.wait().unwrap();
    assert_eq!(
        lf.json(&["session", "connect", "--json", "s"])["state"],
        "unknown"
    );
    lf.ok(&["sim", "interrupt", "s"]);
    assert_eq!(
        lf.json(&["session", "connect", "--json", "s"])["state"],
        "interrupted"
    );
    lf.ok(&["sim", "detach", "s"]);
}

/// Returns once `pid` is a zombie (killed, not yet reaped): the signal lands when the
/// kernel gets to it, later on a busy machine. Bounded, so a process that never dies fails.
fn until_zombie(pid: u32) {
    let state = || {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .chars()
            .next()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while state() != Some('Z') {
        assert!(
            std::time::Instant::now() < deadline,
            "pid {pid} never became a zombie"
        );
        sleep(Duration::from_millis(5));
    }
}

#[test]
fn connect_prepares_with_json_and_otherwise_holds_the_terminal() {
    let lf = Lf::new("d");
    lf.ok(&[
        "sim",
        "new",
        "s",
        "--title",
        "Fix it",
        "--cwd",
        &lf.repo_a().display().to_string(),
    ]);
    assert_eq!(
        lf.fails(1, &["session", "connect", "nope"]),
        "Error: Session nope was not found\n"
    );
    let moved = lf.json(&["session", "connect", "--json", "--replace", "--", "s"]);
    let argv = moved["open_argv"].as_array().unwrap();
    assert_eq!(argv.last().unwrap(), "--replace");
    assert_eq!(argv[argv.len() - 2], "s");
    let tried = lf.json(&["session", "connect", "s", "--json", "--try"]);
    assert_eq!(
        tried["open_argv"].as_array().unwrap().last().unwrap(),
        "--try"
    );
    lf.fails(2, &["session", "connect", "--replace", "--try", "s"]);
    lf.fails(2, &["session", "connect"]);
    assert_eq!(lf.calls().last().unwrap()["tty"], serde_json::Value::Null);

    // On a terminal, as a tray's terminal window would run it.
    let (mut master, slave) = pty();
    let mut child = lf
        .command_in(&lf.outside(), &["session", "connect", "s"])
        .stdin(slave)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut tty = None;
    for _ in 0..100 {
        tty = lf
            .calls()
            .last()
            .and_then(|c| c["tty"].as_str().map(String::from));
        if tty.is_some() {
            break;
        }
        sleep(Duration::from_millis(20));
    }
    let tty = tty.expect("connect recorded its terminal");
    assert!(tty.starts_with("/dev/pts/"), "{tty}");
    sleep(Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "connect waits for the person"
    );
    std::io::Write::write_all(&mut master, b"\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(
        out,
        format!(
            "Session s: Fix it\n  in {}\n(simulated lf: press Enter to leave)\n",
            lf.repo_a().display()
        )
    );
}

#[test]
fn rename_names_sessions_and_suggestions_never_override_a_person() {
    let lf = Lf::new("d");
    lf.ok(&["sim", "new", "s", "--title", "Old", "--cwd", "."]);
    let record = lf.json(&["session", "rename", "--json", "--", "s", "New", "name"]);
    assert_eq!(record["title"], "New name");
    assert_eq!(record["title_source"], "human");
    assert_eq!(
        lf.ok(&["session", "rename", "--suggest", "s", "Generated"]),
        "Session s keeps its human-assigned name \"New name\".\n"
    );
    assert_eq!(
        lf.ok(&["session", "rename", "s", "Third"]),
        "Session s is named \"Third\".\n"
    );
    lf.ok(&["sim", "complete", "s"]);
    assert_eq!(
        lf.fails(1, &["session", "rename", "s", "Late"]),
        "Error: Session s is already complete\n"
    );
    lf.fails(2, &["session", "rename", "s"]);
}

#[test]
fn concurrent_lf_processes_wait_for_each_other_instead_of_failing() {
    let lf = Lf::new("d");
    // Every process opens a database that may not exist yet, as a burst of agents would.
    let children: Vec<_> = (0..12)
        .map(|i| {
            let id = format!("s-{i}");
            let args = ["sim", "new", id.as_str(), "--title", "T", "--cwd", "."];
            lf.command_in(&lf.outside(), &args)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .chain((0..4).map(|_| {
            lf.command_in(&lf.outside(), &["session", "list", "--json"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        }))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = lf.store();
    assert_eq!(store.process_count().unwrap(), 16);
    assert_eq!(store.revisions().unwrap().sessions, 12);
    assert_eq!(lf.ids_in(&lf.outside(), &["--all"]).len(), 12);
}
