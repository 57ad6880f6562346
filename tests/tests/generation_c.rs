//! The stand-in `lf` of generation C (loopflow-model.md §4.3, §4.4, §4.8): Flow and
//! conversation Sessions in SQLite, `complete` after `ready`, and C's record shape.

mod common;

use common::{ids, top_level_keys, Lf};
use serde_json::{json, Value};

#[test]
fn c_records_carry_kind_state_and_complete() {
    let lf = Lf::new("c");
    let repo = lf.repo_a().display().to_string();
    lf.ok(&[
        "sim",
        "new",
        "f-1",
        "--title",
        "Review the plan",
        "--cwd",
        &repo,
        "--kind",
        "flow",
        "--provider",
        "claude",
        "--model",
        "opus",
        "--task",
        "task_1",
    ]);
    lf.ok(&["sim", "new", "c-1", "--title", "Chat", "--cwd", &repo]);
    lf.ok(&["sim", "attention", "f-1", "review"]);

    let text = lf.ok(&["session", "connect", "--json", "f-1"]);
    assert_eq!(
        top_level_keys(&text),
        [
            "id",
            "kind",
            "work",
            "wave_id",
            "work_path",
            "actions",
            "title",
            "title_source",
            "flow_membership",
            "detail",
            "cwd",
            "state",
            "ready_summary",
            "open_argv",
            "terminal_ids",
            "interactive",
            "provider",
            "task_ids",
            "workspace",
            "caller_session_id",
            "scope",
            "attention"
        ]
    );
    let flow: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(flow["kind"], "flow");
    assert_eq!(flow["state"], "waiting");
    assert_eq!(flow["attention"], "review");
    assert_eq!(flow["detail"], "claude:opus");
    assert_eq!(
        flow["open_argv"],
        json!([common::LF, "session", "connect", "f-1"])
    );
    assert_eq!(flow["workspace"]["home_id"], "HOME-LOCAL-SIM");
    assert_eq!(
        flow["actions"][1],
        json!({"kind": "complete", "label": "Complete",
               "help": "Complete the review and return feedback to the next Flow step",
               "unavailable_reason": "The session agent has not marked this ready"})
    );
    let chat = lf.json(&["session", "connect", "--json", "c-1"]);
    assert_eq!(chat["kind"], "conversation");
    assert!(chat.get("attention").is_none(), "{chat}");

    assert_eq!(
        lf.fails(1, &["session", "complete", "f-1"]),
        "Error: The session agent has not marked this ready\n"
    );
    lf.ok(&["sim", "ready", "f-1", "Looks", "good"]);
    let list = lf.json(&["session", "list", "--json", "--all"]);
    assert_eq!(ids(&list), ["c-1", "f-1"]);
    assert_eq!(list[1]["state"], "ready");
    assert_eq!(list[1]["ready_summary"], "Looks good");
    assert_eq!(
        lf.ok(&["session", "complete", "f-1"]),
        "Review completed; feedback returned to the Flow.\n"
    );
    assert_eq!(
        lf.ok(&["session", "complete", "c-1"]),
        "Session c-1 completed; its provider history remains resumable.\n"
    );
    assert_eq!(lf.json(&["session", "list", "--json", "--all"]), json!([]));
    let history = lf.json(&["session", "list", "--json", "--all", "--history"]);
    assert!(history
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["state"] == "closed"));

    // C's list has no waiting filter of D's spelling.
    lf.fails(2, &["session", "list", "--waiting"]);
    lf.fails(2, &["session", "list", "--needs-me"]);
}

#[test]
fn ready_names_the_session_from_the_agents_environment() {
    let lf = Lf::new("c");
    lf.ok(&[
        "sim", "new", "f-1", "--title", "T", "--cwd", ".", "--kind", "flow",
    ]);
    let out = lf
        .command_in(&lf.outside(), &["session", "ready", "All", "done"])
        .env("LF_HUMAN_SESSION", r#"{"kind":"primary","id":"f-1"}"#)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Session is ready for your review.\n"
    );
    assert_eq!(
        lf.json(&["session", "connect", "--json", "f-1"])["ready_summary"],
        "All done"
    );
    assert_eq!(lf.store().process_count().unwrap(), 3);
}
