//! Records as the engine hands them on, for tests here and in the shell (feature
//! `fixtures`, a dev-dependency only: never in the product).

use lf_tray_core::{Kind, SessionRecord, State};

/// A record as the engine hands it on (with `needs_you` judged); tests adjust the
/// fields they care about.
pub fn record(id: &str, kind: Kind, state: State) -> SessionRecord {
    // Read as lf's JSON: only the core spells a record's fields, and the tray's verdict
    // is judged, not written.
    let json = serde_json::json!({
        "id": id,
        "kind": kind,
        "title": format!("Title of {id}"),
        "detail": "detail",
        "cwd": "/src/app",
        "state": state.as_str(),
        "open_argv": ["/usr/bin/lf", "session", "open", id],
    });
    let mut record: SessionRecord = serde_json::from_value(json).expect("a record as lf sends it");
    let needs_you = lf_tray_core::lf::needs_you(&record);
    record.set_needs_you(needs_you);
    record
}

/// A generation D record as lf lists it: no kind, lf's actions, `attention` the
/// only word on whether it waits (`needs_you` judged from it, as the engine does).
pub fn record_d(id: &str, state: State, waiting: bool) -> SessionRecord {
    let json = serde_json::json!({
        "id": id,
        "attention": if waiting { serde_json::json!("waiting") } else { serde_json::Value::Null },
        "workspace": {"machine_id": "M", "worktree": "/home/me/src/app.loo-412",
                      "task_id": null, "unavailable": null},
        "work": {"kind": "task", "id": "task_1"},
        "work_path": "product / LOO-412",
        "title": format!("Title of {id}"),
        "title_source": "generated",
        "flow_membership": {"kind": "independent"},
        "detail": "codex:gpt-5-codex",
        "provider": "codex",
        "cwd": "/home/me/src/app.loo-412/sub",
        "state": state.as_str(),
        "ready_summary": null,
        "open_argv": ["/usr/bin/env", "LF_BIN=/usr/bin/lf", "LF_HOME=/home/me/.lf",
                      "/usr/bin/lf", "session", "connect", id],
        "terminal_ids": [],
    });
    let mut record: SessionRecord = serde_json::from_value(json).unwrap();
    record.actions = Some(if state == State::Active {
        [
            lf_action(
                "open",
                "Open here",
                Some("This Session is active in another terminal; use Move here to transfer it"),
            ),
            lf_action("move_here", "Move here", None),
        ]
        .into()
    } else {
        [lf_action("open", "Open here", None)].into()
    });
    lf_tray_core::lf::finish(
        record,
        Some(&lf_tray_core::Dialect::of(lf_tray_core::Generation::D)),
    )
}

/// lf's Process id of the agent in [`record_e`].
pub const AGENT_ID: &str = "44444444-4444-4444-8444-444444444444";

/// A generation-E record: D's, with the agent's own status and its process.
pub fn record_e(id: &str, state: State, waiting: bool, status: serde_json::Value) -> SessionRecord {
    let mut record = record_d(id, state, waiting);
    record.set_lf_field("program_status", status);
    record.set_lf_field("agent_process_id", serde_json::json!(AGENT_ID));
    lf_tray_core::lf::finish(
        record,
        Some(&lf_tray_core::Dialect::of(lf_tray_core::Generation::E)),
    )
}

/// That record with its agent found on this machine, running as `runs` says.
pub fn with_agent(mut record: SessionRecord, runs: lf_tray_core::Runs) -> SessionRecord {
    record.set_agent(Some(lf_tray_core::Agent {
        id: AGENT_ID.into(),
        pid: Some(4242),
        runs,
    }));
    record
}

/// `program_status` with one `blocked` report of this kind.
pub fn blocked(kind: &str, title: &str, msg: &str) -> serde_json::Value {
    serde_json::json!({"seen": false, "records": [
        {"state": "blocked", "id": "1", "kind": kind, "progress": null, "app": "claude",
         "title": title, "msg": msg}
    ]})
}

fn lf_action(kind: &str, label: &str, reason: Option<&str>) -> lf_tray_core::Action {
    serde_json::from_value(serde_json::json!({
        "kind": kind, "label": label, "help": null, "unavailable_reason": reason,
    }))
    .unwrap()
}
