//! lf-tray-core's `Engine` as the desktop shell uses it: actions through the stand-in lf,
//! and the list the caller reads right after.

use std::time::Duration;

use lf_sim::{AskSpec, FlowSpec, SimHome};
use lf_tray_core::engine::{Config, Engine};
use lf_tray_core::Generation;
use lf_tray_core::{Event, State};
use lf_tray_core::{LfAction, LfError};

/// Long enough for a loaded CI machine; a passing run takes milliseconds.
const WAIT: Duration = Duration::from_secs(20);

fn config(sim: &SimHome) -> Config {
    let mut config = Config::from_env(
        Some(sim.home().to_path_buf()),
        Some(env!("CARGO_BIN_EXE_lf").into()),
    );
    config.lf_timeout = Duration::from_secs(5);
    config
}

#[tokio::test]
async fn an_action_returns_once_its_effect_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let sim = SimHome::new(dir.path().join("home"));
    let flow = FlowSpec::new("task_7:ship:review:0", "Ship", "review", dir.path());
    sim.flows(&[flow]).unwrap();
    let ask = sim.ask(&AskSpec::new("Not ready yet", dir.path())).unwrap();

    let (engine, mut events) = Engine::start(config(&sim));
    let first = tokio::time::timeout(WAIT, events.recv())
        .await
        .unwrap()
        .unwrap();
    let Event::Snapshot { sessions, .. } = first else {
        panic!("the first event is the snapshot: {first:?}")
    };
    assert_eq!(sessions.len(), 2);
    assert_eq!(engine.detected().map(|d| d.generation), Some(Generation::A));
    assert!(
        engine.status().contains("2 sessions"),
        "{}",
        engine.status()
    );

    let said = engine
        .act(LfAction::Approve {
            id: "task_7:ship:review:0".into(),
            text: "Looks good".into(),
        })
        .await
        .unwrap();
    assert_eq!(said, "Task FlowStep approved; the Task may continue.");
    assert!(
        engine.session(&"task_7:ship:review:0".into()).is_none(),
        "the approved step is gone from the list the moment act returns"
    );

    let refused = engine
        .act(LfAction::Complete { id: ask.clone() })
        .await
        .unwrap_err();
    match refused {
        LfError::Failed { message, .. } => {
            assert!(message.contains("is not ready"), "{message}")
        }
        other => panic!("lf's refusal is passed on: {other:?}"),
    }
    assert_eq!(
        engine.session(&ask.as_str().into()).unwrap().state,
        State::Waiting
    );
}

#[tokio::test]
async fn without_lf_actions_say_so_and_files_still_list() {
    let dir = tempfile::tempdir().unwrap();
    let sim = SimHome::new(dir.path().join("home"));
    let ask = sim.ask(&AskSpec::new("Files only", dir.path())).unwrap();
    let mut config = config(&sim);
    config.lf_bin = None;
    let (engine, mut events) = Engine::start(config);
    tokio::time::timeout(WAIT, events.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(engine.session(&ask.as_str().into()).is_some());
    assert!(
        engine.status().starts_with("No lf found"),
        "{}",
        engine.status()
    );
    let err = engine
        .act(LfAction::Complete { id: ask })
        .await
        .unwrap_err();
    assert!(matches!(err, LfError::NotFound), "{err:?}");
}
