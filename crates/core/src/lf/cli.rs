//! The client of lf's own command line: `lf session list --json --all` for the records
//! only lf can derive (Flow steps live in its database, liveness needs `ps`), and the
//! session verbs a person triggers from the tray.
//!
//! lf is called with an argv, never through a shell; ids and text always follow `--`,
//! and each text is one argv item, so nothing a session carries can become an option
//! or a command.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::lf::dialect::{Dialect, Help};
use crate::lf::elements::Stream;
use crate::lf::last_list::{LastList, NextList};
use crate::lf::record::SessionRecord;
use crate::ssh::Ssh;

pub use crate::lf::home::RUN_CONTEXT_VARS;

/// `lf session list` opens the SQLite store, reads every record and runs `ps` once per
/// provider client, which takes seconds on a busy machine; Loopflow.app polls it every
/// 2 s. Ten seconds lets a slow list finish, and still stops a hung lf well before the
/// person wonders why the tray stopped updating.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A listed session is about half a kilobyte of JSON, so 16 MiB is tens of thousands of
/// sessions, far beyond a real home, while a wrong binary flooding stdout stays bounded.
pub const STDOUT_CAP: usize = 16 << 20;

/// lf's errors are a sentence and a few `Caused by:` lines.
pub const STDERR_CAP: usize = 64 << 10;

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A session verb a person asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LfAction {
    Complete { id: String },
    Approve { id: String, text: String },
    Iterate { id: String, text: String },
}

impl LfAction {
    fn args(&self) -> Vec<&str> {
        match self {
            LfAction::Complete { id } => vec!["session", "complete", "--", id],
            LfAction::Approve { id, text } => vec!["session", "approve", "--", id, text],
            LfAction::Iterate { id, text } => vec!["session", "iterate", "--", id, text],
        }
    }

    /// lf's own refusal of an empty decision, given without starting lf.
    fn refusal(&self) -> Option<&'static str> {
        match self {
            LfAction::Approve { text, .. } if text.trim().is_empty() => {
                Some("approval summary cannot be empty")
            }
            LfAction::Iterate { text, .. } if text.trim().is_empty() => {
                Some("iteration direction cannot be empty")
            }
            _ => None,
        }
    }
}

/// Why an lf call gave no answer.
#[derive(Debug)]
pub enum LfError {
    /// The lf program does not exist.
    NotFound,
    /// lf did not finish in time and was killed.
    Timeout(Duration),
    /// lf refused: its own message, without the `Error: ` prefix.
    Failed { code: Option<i32>, message: String },
    /// lf exists but could not be started.
    Spawn(io::Error),
    /// lf answered with something that is not what was asked for.
    BadOutput(String),
}

impl fmt::Display for LfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LfError::NotFound => f.write_str(
                "The lf command was not found. Install Loopflow or set LF_BIN to the lf program.",
            ),
            LfError::Timeout(after) => {
                write!(
                    f,
                    "lf did not answer within {} and was stopped.",
                    span(*after)
                )
            }
            LfError::Failed { message, .. } if !message.is_empty() => f.write_str(message),
            LfError::Failed {
                code: Some(code), ..
            } => write!(f, "lf failed with exit code {code} and no message."),
            LfError::Failed { code: None, .. } => f.write_str("lf was killed by a signal."),
            LfError::Spawn(e) => write!(f, "lf could not be started: {e}"),
            LfError::BadOutput(what) => write!(f, "lf's answer could not be read: {what}"),
        }
    }
}

impl std::error::Error for LfError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LfError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

fn span(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[derive(Debug, Clone)]
pub struct Lf {
    bin: PathBuf,
    /// Another machine's lf: `bin` is its path there, run through ssh.
    ssh: Option<Ssh>,
    timeout: Duration,
    /// Variables to set (`Some`) or remove (`None`) for every call.
    env: Vec<(&'static str, Option<OsString>)>,
    /// The last list's records by their text, shared by the clones: the next list decodes
    /// only what changed.
    last: Arc<Mutex<LastList>>,
}

impl Lf {
    /// `$LF_BIN`, else `lf` on `PATH`, else `~/.local/bin/lf` (the install docs' target, and
    /// where a GUI session without a login `PATH` still finds it); made absolute without
    /// resolving symlinks. `None` when none of them is an executable file.
    ///
    /// Relative `PATH` entries are skipped: they would depend on the tray's working directory.
    pub fn find(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        let set = |name: &str| env(name).filter(|v| !v.is_empty());
        let explicit = set("LF_BIN").map(PathBuf::from);
        let on_path = set("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .filter(|dir| dir.is_absolute())
                .map(|dir| dir.join("lf"))
                .find(|candidate| is_executable(candidate))
        });
        let installed = set("HOME").map(|home| PathBuf::from(home).join(".local/bin/lf"));
        [explicit, on_path, installed]
            .into_iter()
            .flatten()
            .find(|candidate| is_executable(candidate))
            .and_then(|found| std::path::absolute(found).ok())
    }

    pub fn new(bin: PathBuf) -> Lf {
        Lf {
            bin,
            ssh: None,
            timeout: DEFAULT_TIMEOUT,
            env: Vec::new(),
            last: Arc::default(),
        }
    }

    /// The lf at `bin` on another machine, each call one `ssh` there. Its arguments are
    /// quoted for the remote shell, so ids and text still arrive as one word each, after
    /// `--`. lf's refusals come back on ssh's stderr and are shown as they are.
    pub fn over_ssh(ssh: Ssh, bin: &str) -> Lf {
        Lf {
            ssh: Some(ssh),
            ..Lf::new(PathBuf::from(bin))
        }
    }

    pub fn with_timeout(self, timeout: Duration) -> Lf {
        Lf { timeout, ..self }
    }

    /// With `--home DIR`, lf must look at the same home the tray watches: both of lf's
    /// homes are set to `dir`, and database overrides are removed so the database is
    /// `dir/loopflow.db`, as [`crate::Home::at`] says.
    pub fn with_home(mut self, dir: &Path) -> Lf {
        let dir = OsString::from(dir);
        self.env.extend([
            ("LF_HOME", Some(dir.clone())),
            ("LF_CONTROL_HOME", Some(dir)),
            ("LF_CONTROL_DB_PATH", None),
            ("LF_DB_PATH", None),
        ]);
        self
    }

    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The variables every call sets (`Some`) or removes (`None`): the chosen home. A
    /// terminal that runs this lf for the person must get them too, or its `lf session
    /// open` looks in another home than the one the session was listed from.
    pub fn env(&self) -> &[(&'static str, Option<OsString>)] {
        &self.env
    }

    /// Every session, with the dialect's list command: the records, and a problem per
    /// element that did not decode. An lf that answers with a page that has a `next`
    /// is asked for the following pages as its dialect pages, until there is none.
    pub async fn list(
        &self,
        dialect: &Dialect,
    ) -> Result<(Vec<SessionRecord>, Vec<String>), LfError> {
        let (records, problems) = self.list_shared(dialect).await?;
        let records = records.into_iter().map(Arc::unwrap_or_clone).collect();
        Ok((records, problems))
    }

    /// [`Lf::list`], with each record shared: a record whose text is what the last list
    /// printed is that list's record, not decoded again.
    pub async fn list_shared(
        &self,
        dialect: &Dialect,
    ) -> Result<(Vec<Arc<SessionRecord>>, Vec<String>), LfError> {
        let mut next = self.last_list().next();
        let mut cursor = self.page(dialect.list_args, &mut next).await?;
        let mut seen = std::collections::HashSet::new();
        while let Some(after) = cursor {
            // An lf that hands out the same cursor twice would never end.
            if !seen.insert(after.clone()) {
                return Err(LfError::BadOutput(format!(
                    "its pages repeat the cursor {after:?}"
                )));
            }
            let Some(paged) = dialect.paging.after(&after) else {
                return Err(LfError::BadOutput(format!(
                    "it answered with a page (next {after:?}), and this lf has no `--page` \
                     to ask for the next"
                )));
            };
            let paged: Vec<&str> = paged.iter().map(String::as_str).collect();
            cursor = self.page(&paged, &mut next).await?;
        }
        Ok(next.finish(&mut self.last_list()))
    }

    /// One page of a list, run with `args`, into `next`: its elements are taken as they
    /// arrive, so the answer (megabytes at ten thousand sessions) is never held whole,
    /// except a page that is an object (C's and D's), read whole at its end.
    async fn page(&self, args: &[&str], next: &mut NextList) -> Result<Option<String>, LfError> {
        let mut stream = Stream::default();
        // The first thing wrong: the rest is read and dropped, so lf does not block.
        let mut broken = None;
        self.run_into(args, |bytes| {
            if broken.is_none() {
                let last = self.last_list();
                broken = stream.push(bytes, |item| last.take(item, next)).err();
            }
        })
        .await?;
        let invalid = |e: String| match e.starts_with("lf printed") {
            true => LfError::BadOutput(e),
            false => LfError::BadOutput(format!("lf printed invalid JSON: {e}")),
        };
        if let Some(e) = broken {
            return Err(invalid(e));
        }
        let mut last = self.last_list();
        match stream.end(|item| last.take(item, next)).map_err(invalid)? {
            None => Ok(None),
            Some(whole) => last.page(&whole, next).map_err(LfError::BadOutput),
        }
    }

    fn last_list(&self) -> std::sync::MutexGuard<'_, LastList> {
        // A panic while decoding leaves at worst a list to decode again.
        self.last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What this lf is, from the verbs `lf session --help` lists and, for the SQLite-only
    /// builds, `lf session list --help`, `lf monitor --help` and `lf --help`.
    pub async fn detect(&self) -> Result<Dialect, LfError> {
        let session = self.run(&["session", "--help"]).await?;
        let session = String::from_utf8_lossy(&session).into_owned();
        if !Dialect::needs_more_help(&session) {
            return Ok(Dialect::from_help(&Help {
                session: &session,
                ..Help::default()
            }));
        }
        // Each is optional: an lf that refuses one is told apart by the others.
        let text = |out: Result<Vec<u8>, LfError>| {
            out.ok()
                .map(|out| String::from_utf8_lossy(&out).into_owned())
        };
        let (list, monitor, top) = tokio::join!(
            self.run(&["session", "list", "--help"]),
            self.run(&["monitor", "--help"]),
            self.run(&["--help"]),
        );
        let (list, monitor, top) = (text(list), text(monitor), text(top));
        Ok(Dialect::from_help(&Help {
            session: &session,
            list: list.as_deref(),
            monitor: monitor.as_deref(),
            top: top.as_deref(),
        }))
    }

    /// The processes lf knows (generation E2): `lf monitor ps --json`, or on a build
    /// without it `lf monitor active --json`. Read-only, as any lf run it records its own
    /// Process row.
    pub async fn processes(&self) -> Result<Vec<crate::lf::agent::Process>, LfError> {
        let ps = match self.run(&["monitor", "ps", "--json"]).await {
            Ok(out) => out,
            Err(LfError::Failed { .. }) => {
                let out = self.run(&["monitor", "active", "--json"]).await?;
                return crate::lf::agent::decode_active(&out).map_err(LfError::BadOutput);
            }
            Err(e) => return Err(e),
        };
        crate::lf::agent::decode_ps(&ps).map_err(LfError::BadOutput)
    }

    /// `lf monitor work --watch --json`, ready to spawn, with pipes for its requests and
    /// frames. It ends when its stdin closes, and is killed if dropped.
    pub fn monitor_command(&self) -> Command {
        let mut command = self.command(&["monitor", "work", "--watch", "--json"]);
        // It runs as long as the tray: it must end with it however the tray ends (over
        // ssh, the ssh does).
        if self.ssh.is_none() {
            crate::child::end_with_tray(&mut command);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// `lf session <verb> -- <id> [<text>]`: lf's confirmation sentence, or its refusal.
    pub async fn act(&self, action: &LfAction) -> Result<String, LfError> {
        if let Some(message) = action.refusal() {
            return Err(LfError::Failed {
                code: None,
                message: message.into(),
            });
        }
        let out = self.run(&action.args()).await?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// lf with these arguments and the tray's environment rules: no Run context, the
    /// home override when there is one. Killed if the handle is dropped (a call given up
    /// on, or timed out).
    ///
    /// Not tied to the tray here: a run that ends on its own (a list, an answer, a help
    /// page) is started with `posix_spawn`, which `vfork`s, where the death signal's
    /// pre-exec hook makes std fork, copying the tray's page tables and faulting its pages
    /// back copy-on-write: at 10 000 sessions about a fifth of the tray's CPU per change,
    /// two lists a change. A killed tray's short run finishes its work (an answer still
    /// lands) and ends; writing to the tray's closed pipe ends it sooner. What runs as
    /// long as the tray is tied ([`Lf::monitor_command`]; over ssh, [`Ssh`] ties the ssh).
    fn command(&self, args: &[&str]) -> Command {
        let mut command = match &self.ssh {
            Some(ssh) => {
                let bin = self.bin.to_string_lossy();
                let words: Vec<&str> = std::iter::once(bin.as_ref())
                    .chain(args.iter().copied())
                    .collect();
                ssh.command(&words)
            }
            None => {
                let mut command = Command::new(&self.bin);
                command.args(args);
                command
            }
        };
        command.kill_on_drop(true);
        for name in RUN_CONTEXT_VARS {
            command.env_remove(name);
        }
        for (name, value) in &self.env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        command
    }

    /// Run lf to completion within the timeout; its stdout when it succeeds.
    async fn run(&self, args: &[&str]) -> Result<Vec<u8>, LfError> {
        let mut out = Vec::new();
        self.run_into(args, |bytes| out.extend_from_slice(bytes))
            .await?;
        Ok(out)
    }

    /// [`Lf::run`], its stdout handed to `out` as it is read (up to [`STDOUT_CAP`]); only
    /// what happened comes back.
    async fn run_into(&self, args: &[&str], mut out: impl FnMut(&[u8])) -> Result<(), LfError> {
        let mut command = self.command(args);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(spawn_error)?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut stderr_kept = Vec::new();
        let finished = tokio::time::timeout(self.timeout, async {
            tokio::join!(
                read_capped(stdout, STDOUT_CAP, &mut out),
                read_capped(stderr, STDERR_CAP, |bytes| stderr_kept
                    .extend_from_slice(bytes)),
                child.wait()
            )
        })
        .await;
        let (stdout, stderr, status) = match finished {
            Ok(done) => done,
            Err(_) => {
                // Killed and reaped here, so no lf outlives the call that gave up on it.
                let _ = child.start_kill();
                let _ = child.wait().await;
                return Err(LfError::Timeout(self.timeout));
            }
        };
        let unreadable = |e: io::Error| LfError::BadOutput(format!("reading it failed: {e}"));
        let status = status.map_err(unreadable)?;
        let stdout_overflow = stdout.map_err(unreadable)?;
        let stderr_overflow = stderr.map_err(unreadable)?;
        if !status.success() {
            let text = String::from_utf8_lossy(&stderr_kept);
            let text = text.trim();
            let mut message = text.strip_prefix("Error: ").unwrap_or(text).to_string();
            if stderr_overflow {
                message.push('…');
            }
            return Err(LfError::Failed {
                code: status.code(),
                message,
            });
        }
        if stdout_overflow {
            return Err(LfError::BadOutput(format!(
                "it printed more than {} MiB",
                STDOUT_CAP >> 20
            )));
        }
        Ok(())
    }
}

/// An lf that cannot be started: missing, or something else.
pub fn spawn_error(e: io::Error) -> LfError {
    match e.kind() {
        io::ErrorKind::NotFound => LfError::NotFound,
        _ => LfError::Spawn(e),
    }
}

/// Up to `cap` bytes handed to `keep` as they come, then the rest drained unread so lf
/// never blocks on a full pipe; `true` when something was dropped.
async fn read_capped(
    mut from: impl AsyncRead + Unpin,
    cap: usize,
    mut keep: impl FnMut(&[u8]),
) -> io::Result<bool> {
    // A pipe's default capacity: one read takes what lf could write before it waits.
    let mut buffer = vec![0; 64 << 10];
    let mut kept = 0;
    let mut dropped = false;
    loop {
        let read = from.read(&mut buffer).await?;
        if read == 0 {
            return Ok(dropped);
        }
        let room = read.min(cap - kept);
        if room > 0 {
            keep(&buffer[..room]);
        }
        kept += room;
        dropped |= room < read;
    }
}

/// lf's error with its `Caused by:` chain on one line, as a warning line wants it; a
/// backtrace (lf run with `RUST_BACKTRACE`) is left out.
pub(crate) fn one_line(message: &str) -> String {
    let message = message
        .split("\nStack backtrace:")
        .next()
        .unwrap_or(message);
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && *line != "Caused by:")
        .map(|line| {
            line.trim_start_matches(|c: char| c.is_ascii_digit() || c == ':')
                .trim()
        })
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::fs;

    fn executable(path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "#!/bin/sh\n").unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn resolve_with(vars: &[(&str, &Path)]) -> Option<PathBuf> {
        let map: HashMap<&str, OsString> = vars.iter().map(|(k, v)| (*k, v.into())).collect();
        Lf::find(|name| map.get(name).cloned())
    }

    #[test]
    fn resolve_prefers_lf_bin_then_path_then_local_bin() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (explicit, first, second) = (root.join("x/my-lf"), root.join("p1"), root.join("p2"));
        let home = root.join("home");
        executable(&explicit);
        executable(&second.join("lf"));
        executable(&home.join(".local/bin/lf"));
        fs::create_dir_all(&first).unwrap();
        let path = std::env::join_paths([&first, &second]).unwrap();
        let path = Path::new(&path);

        let all = [
            ("LF_BIN", explicit.as_path()),
            ("PATH", path),
            ("HOME", &home),
        ];
        assert_eq!(resolve_with(&all), Some(explicit.clone()));
        assert_eq!(resolve_with(&all[1..]), Some(second.join("lf")));
        assert_eq!(resolve_with(&all[2..]), Some(home.join(".local/bin/lf")));

        // An earlier PATH entry wins; a non-executable lf there does not count.
        fs::write(first.join("lf"), "not a program").unwrap();
        assert_eq!(resolve_with(&all[1..]), Some(second.join("lf")));
        executable(&first.join("lf"));
        assert_eq!(resolve_with(&all[1..]), Some(first.join("lf")));

        // A broken LF_BIN falls through; with nothing executable there is no lf.
        let missing = root.join("missing");
        assert_eq!(
            resolve_with(&[("LF_BIN", &missing), ("PATH", &second)]),
            Some(second.join("lf"))
        );
        assert_eq!(resolve_with(&[("LF_BIN", &missing), ("HOME", root)]), None);
        assert_eq!(resolve_with(&[("LF_BIN", &second)]), None, "a directory");
        assert_eq!(resolve_with(&[("PATH", Path::new("p2"))]), None, "relative");
    }

    #[test]
    fn resolve_keeps_symlinks_named_lf() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("lf-tray");
        executable(&target);
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(&target, bin.join("lf")).unwrap();
        assert_eq!(resolve_with(&[("PATH", &bin)]), Some(bin.join("lf")));
    }

    #[tokio::test]
    async fn empty_decisions_are_refused_without_starting_lf() {
        let lf = Lf::new(PathBuf::from("/nonexistent/lf"));
        let approve = LfAction::Approve {
            id: "f".into(),
            text: " \n".into(),
        };
        let err = lf.act(&approve).await.unwrap_err();
        assert_eq!(err.to_string(), "approval summary cannot be empty");
        let iterate = LfAction::Iterate {
            id: "f".into(),
            text: String::new(),
        };
        let err = lf.act(&iterate).await.unwrap_err();
        assert_eq!(err.to_string(), "iteration direction cannot be empty");
        let complete = LfAction::Complete { id: "f".into() };
        assert!(matches!(
            lf.act(&complete).await.unwrap_err(),
            LfError::NotFound
        ));
    }

    #[test]
    fn errors_read_as_sentences() {
        assert_eq!(
            LfError::Timeout(Duration::from_secs(10)).to_string(),
            "lf did not answer within 10 s and was stopped."
        );
        assert_eq!(
            LfError::Timeout(Duration::from_millis(300)).to_string(),
            "lf did not answer within 300 ms and was stopped."
        );
        let failed = |code, message: &str| LfError::Failed {
            code,
            message: message.into(),
        };
        assert_eq!(
            failed(Some(1), "Session x was not found").to_string(),
            "Session x was not found"
        );
        assert_eq!(
            failed(Some(3), "").to_string(),
            "lf failed with exit code 3 and no message."
        );
        assert_eq!(failed(None, "").to_string(), "lf was killed by a signal.");
    }

    #[test]
    fn lf_errors_fold_onto_one_line() {
        assert_eq!(
            one_line("parse human session record\n\nCaused by:\n    EOF while parsing\n\nStack backtrace:\n   0: x"),
            "parse human session record: EOF while parsing"
        );
        assert_eq!(one_line("a\n\nCaused by:\n    0: b\n    1: c"), "a: b: c");
    }
}
