//! `lf monitor work [--watch] --json` (loopflow-model.md §9.5): NDJSON frames for the
//! scoped repository's open Sessions, re-sent when a commit moves the `sessions`
//! revision or when a quiet window ends (a timer armed for the earliest deadline, since
//! no write announces it), plus a heartbeat every 2 s. It commits nothing after its
//! one Process row, so it never wakes itself or a tray watching the database.
//!
//! Knob: while `$LF_SIM_DIR/mute-monitor` exists no frame is written at all, standing
//! for a hung reader that its client must notice and restart.
//!
//! Generation E (§10.3) adds a clock to the `sessions` part: it is re-read every 2 s and
//! whenever the `processes` revision moves, so an agent's death reaches the stream with
//! no commit. And the reader is no longer read-only: a `scope` with a `repo` starts that
//! repository's planning sync, which commits to the store on the reader's behalf; the
//! stand-in records each start as one line `{"pid", "repo", "at"}` of
//! `$LF_SIM_DIR/planning-syncs.jsonl` and commits one `planning_syncs` row (moving the
//! `planning` revision). A scope with `repo: null` starts none, and a new scope for the
//! repository already syncing keeps that sync.

use std::env;
use std::fs::OpenOptions;
use std::io::{self, BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::inventory::{canonical, Lf, Record};
use crate::store::{now, repo_of, Query, Revisions, Store};

const HEARTBEAT: Duration = Duration::from_secs(2);
/// Generation E re-reads the `sessions` part this often, for liveness no write announces.
const SESSIONS_CLOCK: Duration = Duration::from_secs(2);
/// How often `store_revisions` is read to notice other processes' commits.
const POLL: Duration = Duration::from_millis(100);
const MAX_REQUEST: usize = 16 * 1024;

/// One request line. Swift's client writes every key, nulls included.
#[derive(Debug, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum Request {
    Scope {
        id: u64,
        repo: Option<PathBuf>,
        headless: bool,
        #[allow(dead_code)]
        task: Option<String>,
        #[allow(dead_code)]
        wave: Option<String>,
        #[allow(dead_code)]
        activity: Option<Value>,
    },
    Refresh {
        id: u64,
    },
}

enum Input {
    Line(String),
    Bad(String),
    Eof,
}

#[derive(Serialize)]
struct Frame<'a, B> {
    sequence: u64,
    answers: u64,
    home: &'a str,
    revisions: Option<Revisions>,
    unavailable: Option<String>,
    part: &'a str,
    body: Option<B>,
}

/// The `sessions` part's body; records keep their field order (no `Value` maps).
#[derive(Serialize, Clone, PartialEq)]
struct SessionsBody {
    repo: String,
    includes_headless: bool,
    entries: Vec<Record>,
}

struct Writer {
    sequence: u64,
    answers: u64,
    home: String,
    mute: Option<PathBuf>,
}

impl Writer {
    fn muted(&self) -> bool {
        self.mute.as_ref().is_some_and(|m| m.exists())
    }

    /// Writes one frame unless muted; returns whether it was written.
    fn send<B: Serialize>(
        &mut self,
        revisions: Revisions,
        part: &str,
        body: std::result::Result<B, String>,
    ) -> Result<bool> {
        if self.muted() {
            return Ok(false);
        }
        self.sequence += 1;
        let (body, unavailable) = match body {
            Ok(body) => (Some(body), None),
            Err(reason) => (None, Some(reason)),
        };
        let frame = Frame {
            sequence: self.sequence,
            answers: self.answers,
            home: &self.home,
            revisions: Some(revisions),
            unavailable,
            part,
            body,
        };
        let mut line = serde_json::to_vec(&frame)?;
        line.push(b'\n');
        let mut out = io::stdout().lock();
        out.write_all(&line)
            .and_then(|()| out.flush())
            .context("write a frame")?;
        Ok(true)
    }
}

/// What the `sessions` part covers.
struct Scope {
    /// The canonical repository root, or why there is none.
    repo: std::result::Result<String, String>,
    headless: bool,
}

pub(crate) fn run(lf: &Lf, watch: bool) -> Result<()> {
    let mut store = lf.store()?;
    let sim_dir = env::var_os("LF_SIM_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    let mut writer = Writer {
        sequence: 0,
        answers: 0,
        home: canonical(&lf.home).display().to_string(),
        mute: sim_dir.as_ref().map(|d| d.join("mute-monitor")),
    };
    let newest = lf.generation.is_e();
    // The repository whose planning sync this reader runs (generation E).
    let mut syncing: Option<String> = None;
    let mut revisions = store.revisions()?;
    let planning = || json!({"roadmap": [], "waves": []});
    writer.send(revisions, "planning", Ok(planning()))?;
    if !watch {
        return Ok(());
    }

    let (tx, rx) = mpsc::channel();
    thread::spawn(move || read_requests(tx));

    let mut scope: Option<Scope> = None;
    // The last sessions body written, so that it is sent again only when it changes.
    let mut sent: Option<std::result::Result<SessionsBody, String>> = None;
    let mut quiet_due: Option<Instant> = None;
    let mut next_heartbeat = Instant::now() + HEARTBEAT;
    let mut next_poll = Instant::now() + POLL;
    let mut sessions_due = newest.then(|| Instant::now() + SESSIONS_CLOCK);
    let mut was_muted = false;
    loop {
        let wake = [
            Some(next_heartbeat),
            Some(next_poll),
            quiet_due,
            sessions_due,
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("the heartbeat is always due");
        let mut force = false;
        match rx.recv_timeout(wake.saturating_duration_since(Instant::now())) {
            Ok(Input::Line(line)) => {
                let request: Request = serde_json::from_str(&line)
                    .map_err(|e| anyhow::anyhow!("invalid reader request: {e}"))?;
                if let (true, Request::Scope { repo, .. }) = (newest, &request) {
                    // Before the reading, so that its frame carries the sync's commit.
                    let root = repo
                        .as_deref()
                        .and_then(repo_of)
                        .map(|r| r.display().to_string());
                    if root.is_some() && root != syncing {
                        let root = root.clone().unwrap_or_default();
                        start_planning_sync(&mut store, sim_dir.as_deref(), &root)?;
                    }
                    syncing = root;
                }
                revisions = store.revisions()?;
                match request {
                    Request::Scope {
                        id, repo, headless, ..
                    } => {
                        writer.answers = id;
                        scope = repo.map(|repo| Scope {
                            repo: repo_of(&repo).map(|r| r.display().to_string()).ok_or_else(
                                || format!("{} is not inside a git repository", repo.display()),
                            ),
                            headless,
                        });
                    }
                    Request::Refresh { id } => {
                        writer.answers = id;
                        writer.send(revisions, "planning", Ok(planning()))?;
                    }
                }
                force = true;
            }
            Ok(Input::Bad(message)) => bail!(message),
            Ok(Input::Eof) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
            Err(RecvTimeoutError::Timeout) => {}
        }
        // A reader coming back from a hang answers with the current reading at once.
        let muted = writer.muted();
        force |= was_muted && !muted;
        was_muted = muted;
        let now_instant = Instant::now();
        let mut stale = force;
        if now_instant >= next_poll {
            next_poll = now_instant + POLL;
            let latest = store.revisions()?;
            if latest.sessions != revisions.sessions {
                stale = true;
            }
            // E: every lf call commits a Process row, and liveness may change with it.
            if newest && latest.processes != revisions.processes {
                stale = true;
            }
            revisions = latest;
        }
        if quiet_due.is_some_and(|due| now_instant >= due) {
            stale = true;
        }
        if sessions_due.is_some_and(|due| now_instant >= due) {
            stale = true;
        }
        if stale {
            quiet_due = None;
            if newest {
                sessions_due = Some(Instant::now() + SESSIONS_CLOCK);
            }
            if let Some(scope) = &scope {
                let body = sessions_body(lf, &store, scope);
                if (force || sent.as_ref() != Some(&body))
                    && writer.send(revisions, "sessions", body.clone())?
                {
                    sent = Some(body);
                }
                if let Ok(repo) = &scope.repo {
                    quiet_due = store
                        .next_quiet_deadline(repo, scope.headless, lf.rule())?
                        .map(|due| {
                            // A hair late, so that the deadline has surely passed when
                            // the reading runs at the wake-up.
                            let wait = (due - now()).max(0.0) + 0.005;
                            Instant::now() + Duration::from_secs_f64(wait)
                        });
                }
            } else {
                sent = None;
            }
        }
        if Instant::now() >= next_heartbeat {
            next_heartbeat += HEARTBEAT;
            writer.send(revisions, "heartbeat", Ok(json!({"projections": {}})))?;
        }
    }
}

fn sessions_body(
    lf: &Lf,
    store: &Store,
    scope: &Scope,
) -> std::result::Result<SessionsBody, String> {
    let repo = scope.repo.clone()?;
    let query = Query {
        repo: Some(repo.clone()),
        interactive: if scope.headless { None } else { Some(true) },
        by_id: true,
        ..Query::default()
    };
    let rows = store
        .sessions(&query, lf.rule())
        .map_err(|e| format!("{e:#}"))?;
    Ok(SessionsBody {
        repo,
        includes_headless: scope.headless,
        entries: rows.iter().map(|row| lf.record(row)).collect(),
    })
}

/// Generation E: this reader starts `repo`'s planning sync. The real one talks to the
/// person's issue tracker and commits what it learns; the stand-in commits one row and
/// tells the test in `planning-syncs.jsonl`.
fn start_planning_sync(store: &mut Store, sim_dir: Option<&Path>, repo: &str) -> Result<()> {
    let (pid, at) = (std::process::id(), now());
    store.start_planning_sync(repo, pid, at)?;
    let Some(dir) = sim_dir else {
        return Ok(());
    };
    let mut line = serde_json::to_vec(&json!({"pid": pid, "repo": repo, "at": at}))?;
    line.push(b'\n');
    let path = dir.join("planning-syncs.jsonl");
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut file| file.write_all(&line))
        .with_context(|| format!("record a planning sync in {}", path.display()))
}

/// Request lines from stdin, each at most 16 KiB; EOF ends the stream.
fn read_requests(tx: mpsc::Sender<Input>) {
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    loop {
        let mut line = Vec::new();
        let read = (&mut stdin)
            .take(MAX_REQUEST as u64 + 1)
            .read_until(b'\n', &mut line);
        let input = match read {
            Ok(0) => Input::Eof,
            Ok(_) if line.len() > MAX_REQUEST && !line.ends_with(b"\n") => {
                Input::Bad("reader stdin failed or request exceeds 16 KiB".into())
            }
            Ok(_) => match String::from_utf8(line) {
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => Input::Line(text),
                Err(_) => Input::Bad("invalid reader request: not UTF-8".into()),
            },
            Err(_) => Input::Bad("reader stdin failed or request exceeds 16 KiB".into()),
        };
        let last = !matches!(input, Input::Line(_));
        if tx.send(input).is_err() || last {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_refuse_unknown_keys_and_need_headless() {
        let scope = r#"{"action":"scope","id":1,"repo":"/r","headless":false,"task":null,"wave":null,"activity":null}"#;
        assert!(matches!(
            serde_json::from_str::<Request>(scope).unwrap(),
            Request::Scope {
                id: 1,
                headless: false,
                ..
            }
        ));
        assert!(serde_json::from_str::<Request>(r#"{"action":"refresh","id":2}"#).is_ok());
        for bad in [
            r#"{"action":"refresh","id":2,"extra":1}"#,
            r#"{"action":"scope","id":1,"repo":null}"#,
            r#"{"action":"rescan","id":1}"#,
            "not json",
        ] {
            assert!(serde_json::from_str::<Request>(bad).is_err(), "{bad}");
        }
    }
}
