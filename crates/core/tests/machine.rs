//! Acting on another machine's session through a real ssh: tests/remote/run.sh runs this
//! as the person's account, against its sshd, with `LF_TRAY_TEST_MACHINE` naming the
//! machine's Host alias and two Ask ids written there (one ready, one not). Without a
//! machine to reach it cannot run, so plain `cargo test` lists it as ignored; the "other
//! machines" block of scripts/test.sh always runs it (`--ignored`).

use std::time::Duration;

use lf_tray_core::engine::{Config, Engine};
use lf_tray_core::{Event, SessionKey};
use lf_tray_core::{LfAction, LfError};

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is set with LF_TRAY_TEST_MACHINE"))
}

#[tokio::test]
#[ignore = "needs a real machine over ssh: tests/remote/run.sh runs it with --ignored"]
async fn actions_run_the_machines_own_lf_over_ssh() {
    let dest = std::env::var("LF_TRAY_TEST_MACHINE")
        .expect("LF_TRAY_TEST_MACHINE names the machine (tests/remote/run.sh sets it)");
    let (ready, waiting) = (var("LF_TRAY_TEST_READY"), var("LF_TRAY_TEST_WAITING"));
    let home = tempfile::tempdir().unwrap();
    let mut config = Config::from_env(Some(home.path().to_path_buf()), None);
    config.machines = vec![dest.clone()];
    let (engine, mut events) = Engine::start(config);
    let key = |id: &str| SessionKey {
        machine: Some(dest.clone()),
        id: id.to_string(),
    };

    // The machine's first view: both of its Asks, tagged.
    tokio::time::timeout(Duration::from_secs(30), async {
        while engine.session(&key(&ready)).is_none() || engine.session(&key(&waiting)).is_none() {
            events.recv().await.expect("the engine runs");
        }
    })
    .await
    .expect("the machine's sessions within 30 s");
    assert!(
        engine.session(&SessionKey::local(ready.as_str())).is_none(),
        "a remote id is not a local session"
    );

    // lf there refuses: its own sentence, verbatim.
    let refused = engine
        .act_on(
            Some(&dest),
            LfAction::Complete {
                id: waiting.clone(),
            },
        )
        .await
        .unwrap_err();
    let LfError::Failed { message, .. } = &refused else {
        panic!("not lf's refusal: {refused:?}");
    };
    assert!(
        message.contains("is not ready; its agent must run"),
        "{message}"
    );

    // lf there completes the ready one, and the machine tells the engine it is resolved.
    let done = engine
        .act_on(Some(&dest), LfAction::Complete { id: ready.clone() })
        .await
        .unwrap();
    assert!(done.starts_with("Ask session completed"), "{done}");
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.recv().await.expect("the engine runs") {
                Event::Resolved { session, .. } if session.key() == key(&ready) => break,
                _ => {}
            }
        }
    })
    .await
    .expect("the completed session resolved within 30 s");

    let unknown = engine
        .act_on(Some("not-followed"), LfAction::Complete { id: ready })
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("not followed"), "{unknown}");
}
