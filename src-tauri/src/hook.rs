//! The person's own program for every event (`on_event` in the settings): a phone push, a
//! sound, a log of their own. It gets the event as one line of JSON on stdin, exactly as
//! `lf-tray watch --json` prints it, and `LF_TRAY_EVENT=<type>` in its environment. Its
//! argv is the program alone, never built from session text.
//!
//! Runs are one at a time, in order, on their own task: a slow program delays the next
//! run, never the tray; one that hangs is ended after [`TIMEOUT`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use lf_tray_core::Event;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// A push to a phone or a webhook answers within a few seconds; a program still running
/// after this is stuck, and the events behind it must not pile up forever.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Events waiting for the program beyond this are dropped (and said so in the log): a
/// rescan can report hundreds at once, and a program that takes seconds each would be
/// minutes behind.
const MAX_QUEUED: usize = 64;

/// The queue of runs; the task that works through it starts with the first event.
#[derive(Default)]
pub struct Hook {
    queue: std::sync::OnceLock<mpsc::Sender<(PathBuf, String, String)>>,
}

impl Hook {
    /// Queue a run of `program` for this event.
    pub fn send(&self, program: &Path, event: &Event) {
        let queue = self.queue.get_or_init(|| {
            let (sender, receiver) = mpsc::channel(MAX_QUEUED);
            tauri::async_runtime::spawn(work(receiver));
            sender
        });
        let Ok(json) = serde_json::to_value(event) else {
            return;
        };
        let kind = json["type"].as_str().unwrap_or("event").to_string();
        let line = format!("{json}\n");
        if queue.try_send((program.to_path_buf(), kind, line)).is_err() {
            tracing::warn!(
                "on_event: {} is {MAX_QUEUED} events behind; this one is dropped",
                program.display()
            );
        }
    }
}

async fn work(mut queue: mpsc::Receiver<(PathBuf, String, String)>) {
    while let Some((program, kind, line)) = queue.recv().await {
        match run(&program, &kind, &line).await {
            Ok(()) => tracing::debug!("on_event {kind}: {} ran", program.display()),
            Err(e) => tracing::warn!("on_event {kind}: {}: {e}", program.display()),
        }
    }
}

async fn run(program: &Path, kind: &str, line: &str) -> Result<(), String> {
    let mut command = tokio::process::Command::new(program);
    // A run in progress ends with the tray, however it ends.
    lf_tray_core::end_with_tray(&mut command);
    let mut child = command
        .env("LF_TRAY_EVENT", kind)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start it: {e}"))?;
    let mut stdin = child.stdin.take();
    let talk = async {
        if let Some(stdin) = &mut stdin {
            // A program that does not read its input is fine: the pipe closing is its answer.
            let _ = stdin.write_all(line.as_bytes()).await;
        }
        drop(stdin);
        child.wait_with_output().await
    };
    match tokio::time::timeout(TIMEOUT, talk).await {
        Err(_) => Err(format!("still running after {TIMEOUT:?}; ended")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(output)) if output.status.success() => Ok(()),
        Ok(Ok(output)) => {
            let said = String::from_utf8_lossy(&output.stderr);
            let said = lf_tray_surface::notice::one_line(&said, 300);
            Err(format!("{}: {said}", output.status))
        }
    }
}
