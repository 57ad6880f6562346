//! A home for the stand-in `lf` of one generation, with two repositories and a
//! directory outside any repository, run as real processes over a real database.

#![allow(dead_code)]

pub mod monitor;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use lf_sim::{SimHome, Store};
use serde_json::Value;

/// Generation D's record keys, in D's order: what D prints, and what E prints first.
pub const D_KEYS: [&str; 21] = [
    "primary_scope",
    "attention",
    "task_primary",
    "task_ids",
    "id",
    "workspace",
    "interactive",
    "work",
    "wave_id",
    "work_path",
    "actions",
    "title",
    "title_source",
    "flow_membership",
    "detail",
    "provider",
    "cwd",
    "state",
    "ready_summary",
    "open_argv",
    "terminal_ids",
];

pub const LF: &str = env!("CARGO_BIN_EXE_lf");

pub struct Lf {
    pub dir: tempfile::TempDir,
    pub generation: &'static str,
    pub quiet: Option<f64>,
}

impl Lf {
    pub fn new(generation: &'static str) -> Lf {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["sim", "repo-a/.git", "repo-a/src", "repo-b/.git", "outside"] {
            fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Lf {
            dir,
            generation,
            quiet: None,
        }
    }

    pub fn with_quiet(mut self, seconds: f64) -> Lf {
        self.quiet = Some(seconds);
        self
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    pub fn sim_dir(&self) -> PathBuf {
        self.root().join("sim")
    }

    pub fn repo_a(&self) -> PathBuf {
        self.root().join("repo-a")
    }

    pub fn repo_b(&self) -> PathBuf {
        self.root().join("repo-b")
    }

    pub fn outside(&self) -> PathBuf {
        self.root().join("outside")
    }

    pub fn sim_home(&self) -> SimHome {
        SimHome::new(self.home())
    }

    /// The database, opened in-process the way a test's agent would.
    pub fn store(&self) -> Store {
        self.sim_home().store().unwrap()
    }

    pub fn command_in(&self, cwd: &Path, args: &[impl AsRef<OsStr>]) -> Command {
        let mut command = Command::new(LF);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root())
            .env("LF_HOME", self.home())
            .env("LF_SIM_DIR", self.sim_dir())
            .env("LF_SIM_GENERATION", self.generation)
            .current_dir(cwd)
            .stdin(Stdio::null());
        if let Some(quiet) = self.quiet {
            command.env("LF_SIM_QUIET_SECONDS", quiet.to_string());
        }
        command
    }

    pub fn run_in(&self, cwd: &Path, args: &[&str]) -> Output {
        self.command_in(cwd, args).output().unwrap()
    }

    /// Runs lf in `cwd`, expecting success; returns stdout.
    pub fn ok_in(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.run_in(cwd, args);
        assert!(
            out.status.success(),
            "lf {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs lf outside any repository.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_in(&self.outside(), args)
    }

    pub fn json_in(&self, cwd: &Path, args: &[&str]) -> Value {
        let text = self.ok_in(cwd, args);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    pub fn json(&self, args: &[&str]) -> Value {
        self.json_in(&self.outside(), args)
    }

    /// Runs lf expecting exit code `code` and nothing on stdout; returns stderr.
    pub fn fails(&self, code: i32, args: &[&str]) -> String {
        let out = self.run_in(&self.outside(), args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "lf {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    }

    /// `lf session list --json` with `extra`, as ids.
    pub fn ids_in(&self, cwd: &Path, extra: &[&str]) -> Vec<String> {
        let mut args = vec!["session", "list", "--json"];
        args.extend_from_slice(extra);
        ids(&self.json_in(cwd, &args))
    }

    pub fn calls(&self) -> Vec<Value> {
        fs::read_to_string(self.sim_dir().join("argv.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

// Not every test binary that includes this module uses both.
#[allow(unused_imports)]
pub use lf_sim::{pty, tty_name};

/// A child killed and reaped when dropped, so a failing test leaves no process behind.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How long [`until`] waits: lf runs and agents starting on a slow, busy machine.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// `probe`'s first answer, asked every 50 ms until [`DEADLINE`].
pub fn until<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

pub fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// The top-level keys of a pretty-printed JSON object, in the order they were written
/// (a `Value` would sort them).
pub fn top_level_keys(pretty: &str) -> Vec<String> {
    pretty
        .lines()
        .filter_map(|line| line.strip_prefix("  \""))
        .filter_map(|rest| rest.split_once("\":").map(|(key, _)| key.to_string()))
        .collect()
}
