//! lf's own reader of its store, `lf monitor work --watch --json` (generation D): one child
//! per repository, scoped to it, streaming that repository's open sessions whenever they
//! change — attention included, and the quiet deadline that no write announces.
//!
//! The reader is Loopflow.app's own path: it wakes on the store's commits, compares the
//! store's revisions and arms the quiet deadline itself, and it commits nothing, so
//! following it never wakes the tray. Every frame also carries the store's `sessions`
//! revision, which tells the engine when sessions elsewhere (another repository, or none)
//! moved and a list is worth running.

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::lf::cli::{spawn_error, Lf, LfError, STDERR_CAP, STDOUT_CAP};
use crate::lf::record::{decode_records, SessionRecord};

/// What a reader tells the engine.
#[derive(Debug)]
pub enum Report {
    Frame(Frame),
    /// The reader is gone: it exited, or its output could not be read. The message says
    /// why, in lf's words where it gave some.
    Ended(String),
}

/// One frame, reduced to what the tray uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The store's `sessions` revision as of this frame; `None` before a store exists.
    pub sessions_revision: Option<u64>,
    pub part: Part,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Every open session of one repository (lf's canonical root), in id order.
    Sessions {
        repo: String,
        entries: Vec<SessionRecord>,
        problems: Vec<String>,
    },
    /// A part lf could not read this time, with its reason.
    Unavailable(String),
    /// The heartbeat and the parts the tray does not use (planning, activity, …).
    Other,
}

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    revisions: Option<Revisions>,
    #[serde(default)]
    part: Option<String>,
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    unavailable: Option<Value>,
}

#[derive(Deserialize)]
struct Revisions {
    #[serde(default)]
    sessions: Option<u64>,
}

#[derive(Deserialize)]
struct SessionsBody {
    repo: String,
    #[serde(default)]
    entries: Vec<Value>,
}

/// Decode one line of the reader's output.
pub fn parse_frame(line: &[u8]) -> Result<Frame, String> {
    let wire: Wire =
        serde_json::from_slice(line).map_err(|e| format!("lf monitor printed a bad frame: {e}"))?;
    let sessions_revision = wire.revisions.and_then(|r| r.sessions);
    let part = match (wire.part.as_deref(), wire.unavailable, wire.body) {
        (Some(part), Some(reason), _) if !reason.is_null() => {
            let reason = match reason {
                Value::String(s) => s,
                other => other.to_string(),
            };
            Part::Unavailable(format!("lf monitor: {part}: {reason}"))
        }
        (Some("sessions"), _, Some(body)) => {
            let body: SessionsBody = serde_json::from_value(body)
                .map_err(|e| format!("lf monitor printed a bad sessions part: {e}"))?;
            let (entries, problems) = decode_records(body.entries);
            Part::Sessions {
                repo: body.repo,
                entries,
                problems,
            }
        }
        _ => Part::Other,
    };
    Ok(Frame {
        sessions_revision,
        part,
    })
}

/// A running reader. Dropping it closes the reader's stdin, which ends it; the child is
/// killed if it does not go by itself.
pub struct Reader {
    requests: mpsc::UnboundedSender<()>,
    task: AbortHandle,
}

impl Drop for Reader {
    fn drop(&mut self) {
        // Closing the request channel closes lf's stdin (its documented way to end); the
        // task then waits for it to exit, killing it if it lingers.
        let task = self.task.clone();
        tokio::spawn(async move {
            tokio::time::sleep(LINGER).await;
            task.abort();
        });
    }
}

/// How long a reader whose stdin was closed may take to exit before it is killed.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

impl Reader {
    /// Start `lf monitor work --watch --json` scoped to the repository at `path` (any path
    /// inside it), sessions of every kind. Its frames and its end go to `report`.
    pub fn start(
        lf: &Lf,
        path: &str,
        report: impl Fn(Report) + Send + Sync + 'static,
    ) -> Result<Reader, LfError> {
        let mut child = lf.monitor_command().spawn().map_err(spawn_error)?;
        let (requests, received) = mpsc::unbounded_channel();
        let scope = json!({
            "action": "scope", "id": 1, "repo": path, "headless": true,
            "task": null, "wave": null, "activity": null,
        });
        let task = tokio::spawn(async move {
            let why = follow(&mut child, scope, received, &report).await;
            // Stops it if it is still there (a bad frame, a closed channel).
            let _ = child.start_kill();
            let status = child.wait().await;
            let mut stderr = String::new();
            if let Some(mut err) = child.stderr.take() {
                let mut bytes = Vec::new();
                let _ = (&mut err)
                    .take(STDERR_CAP as u64)
                    .read_to_end(&mut bytes)
                    .await;
                stderr = String::from_utf8_lossy(&bytes).trim().to_string();
            }
            let stderr = stderr.strip_prefix("Error: ").unwrap_or(&stderr);
            let message = match (why, stderr.is_empty(), status) {
                (Some(why), _, _) => why,
                (None, false, _) => format!("lf monitor ended: {stderr}"),
                (None, true, Ok(status)) => format!("lf monitor ended ({status})"),
                (None, true, Err(e)) => format!("lf monitor ended: {e}"),
            };
            report(Report::Ended(message));
        })
        .abort_handle();
        Ok(Reader { requests, task })
    }

    /// Ask for every part again (after the machine slept).
    pub fn refresh(&self) {
        let _ = self.requests.send(());
    }
}

/// Send the scope, then forward frames and refresh requests until the reader's output
/// ends. Returns why it stopped when that was not the reader's own exit.
async fn follow(
    child: &mut tokio::process::Child,
    scope: Value,
    mut requests: mpsc::UnboundedReceiver<()>,
    report: &(impl Fn(Report) + Send + Sync),
) -> Option<String> {
    let mut stdin = child.stdin.take()?;
    let stdout = child.stdout.take()?;
    let mut stdout = BufReader::new(stdout);
    let mut line = Line::default();
    let mut next_id = 2u64;
    if write_request(&mut stdin, &scope).await.is_err() {
        return None;
    }
    let mut stdin = Some(stdin);
    loop {
        tokio::select! {
            read = line.next(&mut stdout, STDOUT_CAP) => match read {
                Ok(Some(Ok(bytes))) => match parse_frame(&bytes) {
                    Ok(frame) => report(Report::Frame(frame)),
                    Err(e) => return Some(e),
                },
                Ok(Some(Err(too_long))) => return Some(too_long),
                Ok(None) => return None,
                Err(e) => return Some(format!("lf monitor could not be read: {e}")),
            },
            request = requests.recv(), if stdin.is_some() => match request {
                Some(()) => {
                    let refresh = json!({"action": "refresh", "id": next_id});
                    next_id += 1;
                    if let Some(input) = stdin.as_mut() {
                        if write_request(input, &refresh).await.is_err() {
                            return None;
                        }
                    }
                }
                // The engine let go: closing stdin ends the reader; its EOF ends the loop.
                None => stdin = None,
            },
        }
    }
}

async fn write_request(
    stdin: &mut tokio::process::ChildStdin,
    request: &Value,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(request)?;
    bytes.push(b'\n');
    stdin.write_all(&bytes).await?;
    stdin.flush().await
}

/// A line reader with a length cap that is safe to use in `select!`: what it has read
/// stays in `self` when another branch wins, and the next call goes on from there.
#[derive(Default)]
struct Line {
    buf: Vec<u8>,
    /// The current line grew past the cap: it is dropped up to its newline.
    skipping: bool,
}

impl Line {
    /// The next whole line without its newline; `Some(Err)` for one past `cap` bytes;
    /// `None` at the end of the output.
    async fn next(
        &mut self,
        from: &mut (impl AsyncBufRead + Unpin),
        cap: usize,
    ) -> std::io::Result<Option<Result<Vec<u8>, String>>> {
        loop {
            let chunk = from.fill_buf().await?;
            if chunk.is_empty() {
                return Ok(None);
            }
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(at) => (at + 1, true),
                None => (chunk.len(), false),
            };
            if !self.skipping {
                let body = if done { &chunk[..take - 1] } else { chunk };
                self.buf.extend_from_slice(body);
            }
            from.consume(take);
            if self.buf.len() > cap {
                self.buf = Vec::new();
                self.skipping = true;
            }
            if done {
                if std::mem::take(&mut self.skipping) {
                    return Ok(Some(Err(format!(
                        "lf monitor printed a frame over {} MiB",
                        cap >> 20
                    ))));
                }
                return Ok(Some(Ok(std::mem::take(&mut self.buf))));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_decode_to_what_the_tray_uses() {
        let sessions = br#"{"sequence":17,"answers":1,"home":"/h","revisions":{"planning":40,"sessions":212,"flows":9,"processes":3310,"usage":880},"unavailable":null,"part":"sessions","body":{"repo":"/src/app","includes_headless":true,"entries":[{"attention":"waiting","id":"S-A","title":"Decide","title_source":"generated","flow_membership":{"kind":"independent"},"cwd":"/src/app","state":"unknown","open_argv":["/usr/bin/env","lf","session","connect","S-A"]},{"id":"bad"}]}}"#;
        let frame = parse_frame(sessions).unwrap();
        assert_eq!(frame.sessions_revision, Some(212));
        let Part::Sessions {
            repo,
            entries,
            problems,
        } = frame.part
        else {
            panic!("not sessions")
        };
        assert_eq!(repo, "/src/app");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].attention(), Some("waiting"));
        assert_eq!(entries[0].kind, None);
        assert_eq!(problems.len(), 1, "one bad entry loses only itself");

        let beat = br#"{"sequence":18,"answers":1,"home":"/h","revisions":{"sessions":213},"unavailable":null,"part":"heartbeat","body":{"projections":{}}}"#;
        assert_eq!(
            parse_frame(beat).unwrap(),
            Frame {
                sessions_revision: Some(213),
                part: Part::Other
            }
        );
        let early = br#"{"sequence":1,"answers":0,"home":"/h","revisions":null,"unavailable":"no store yet","part":"sessions","body":null}"#;
        let frame = parse_frame(early).unwrap();
        assert_eq!(frame.sessions_revision, None);
        assert!(matches!(frame.part, Part::Unavailable(r) if r.contains("no store yet")));
        assert!(parse_frame(b"garbage").is_err());
    }

    #[tokio::test]
    async fn lines_are_capped_and_survive_cancellation() {
        let input: &[u8] = b"short\nthis one is far too long\nok\n";
        let mut from = BufReader::with_capacity(4, input);
        let mut line = Line::default();
        assert_eq!(
            line.next(&mut from, 10).await.unwrap(),
            Some(Ok(b"short".to_vec()))
        );
        assert!(matches!(
            line.next(&mut from, 10).await.unwrap(),
            Some(Err(_))
        ));
        assert_eq!(
            line.next(&mut from, 10).await.unwrap(),
            Some(Ok(b"ok".to_vec()))
        );
        assert_eq!(line.next(&mut from, 10).await.unwrap(), None);
    }
}
