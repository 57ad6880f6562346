//! `lf monitor work --watch --json` driven as a tray drives it: requests on stdin, frames
//! read on a thread so that a test can wait for one with a deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Lf;

pub struct Monitor {
    pub child: Child,
    stdin: Option<ChildStdin>,
    pub frames: Receiver<Value>,
}

impl Monitor {
    pub fn start(lf: &Lf) -> Monitor {
        let mut child = lf
            .command_in(&lf.outside(), &["monitor", "work", "--watch", "--json"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, frames) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    return;
                }
            }
        });
        Monitor {
            stdin: child.stdin.take(),
            child,
            frames,
        }
    }

    pub fn send(&mut self, request: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn scope(&mut self, id: u64, repo: &std::path::Path) {
        self.send(
            json!({"action": "scope", "id": id, "repo": repo, "headless": false,
                         "task": null, "wave": null, "activity": null}),
        );
    }

    /// The next frame of `part` within `within`, skipping others.
    pub fn next(&self, part: &str, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let frame = self.frames.recv_timeout(left).ok()?;
            if frame["part"] == part {
                return Some(frame);
            }
        }
    }

    /// The first frame within `within` that `wanted` accepts, skipping others.
    pub fn until(&self, within: Duration, wanted: impl Fn(&Value) -> bool) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let frame = self.frames.recv_timeout(left).ok()?;
            if wanted(&frame) {
                return Some(frame);
            }
        }
    }

    pub fn close(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (status.code(), stderr)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
