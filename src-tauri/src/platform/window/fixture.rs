//! The window's commands on the mock runtime: the real app's handler and capability over
//! a simulated home with one waiting Ask and no `lf`.

use std::sync::Arc;
use std::time::Duration;

use lf_sim::{AskSpec, SimHome};
use lf_tray_core::engine::{Config, Engine};
use lf_tray_core::Event;
use lf_tray_surface::settings;
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::{InvokeRequest, WebviewWindow, WebviewWindowBuilder};

use crate::platform::page::LABEL;
use crate::shell::Shell;

pub(super) struct Fixture {
    _home: tempfile::TempDir,
    _app: tauri::App<MockRuntime>,
    pub webview: WebviewWindow<MockRuntime>,
    pub ask: String,
}

/// The app with its one Ask listed.
pub(super) fn fixture() -> Fixture {
    let home = tempfile::tempdir().unwrap();
    let sim = SimHome::new(home.path());
    let ask = sim
        .ask(&AskSpec::new("Which target first?", home.path()))
        .unwrap();
    let mut config = Config::from_env(Some(home.path().to_path_buf()), None);
    config.lf_bin = None;
    let (engine, mut events) = tauri::async_runtime::block_on(async {
        let (engine, mut events) = Engine::start(config);
        // Once the snapshot is out, the Ask is listed.
        let snapshot = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(event) = events.recv().await {
                if matches!(event, Event::Snapshot { .. }) {
                    return true;
                }
            }
            false
        });
        assert_eq!(snapshot.await, Ok(true), "no snapshot from the engine");
        (engine, events)
    });
    // Keep the engine's channel open for the test's life without reading it.
    std::thread::spawn(move || while events.blocking_recv().is_some() {});
    assert!(engine.session(&ask.as_str().into()).is_some());
    let (shell, _desk) = Shell::new(engine, None, settings::Loaded::default(), None);
    let shell = Arc::new(shell);
    let app = super::handled(mock_builder())
        .manage(shell)
        .build(tauri::generate_context!("../tauri.conf.json"))
        .unwrap();
    let webview = WebviewWindowBuilder::new(&app, LABEL, Default::default())
        .build()
        .unwrap();
    Fixture {
        _home: home,
        _app: app,
        webview,
        ask,
    }
}

pub(super) fn invoke(
    webview: &WebviewWindow<MockRuntime>,
    cmd: &str,
    args: Value,
) -> Result<Value, Value> {
    get_ipc_response(
        webview,
        InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|body| body.deserialize::<Value>().unwrap())
}

/// What the status line says once it says what `want` wants, within a deadline long
/// enough for a loaded CI machine (the engine takes the change in milliseconds).
pub(super) fn status_until(f: &Fixture, want: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let board = invoke(&f.webview, "sessions", json!({})).unwrap();
        let status = board["status"].as_str().unwrap().to_string();
        if want(&status) {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the status stayed {status:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
