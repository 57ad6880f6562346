//! Other machines: the sessions of every machine the person reaches with `ssh`, followed
//! with what is installed there and merged into the engine's list, tagged with the machine.
//!
//! A machine is an ssh destination as the person's own `ssh` understands it (a `Host`
//! alias, `user@host`): its keys, ports, jump hosts and known-hosts policy come from their
//! `~/.ssh/config` alone. The tray adds only options that make a dead link fail fast
//! ([`SSH_OPTIONS`]), never one that weakens host-key checking.
//!
//! Each machine is followed the best way it allows:
//! - it has `lf-tray`: one `ssh -T DEST lf-tray watch --json`, whose event stream is merged
//!   as it comes (event-driven on the far side, nothing polled);
//! - it has only `lf`: `lf session list --json …` over ssh every [`LIST_INTERVAL`].
//!
//! A link that fails is tried again after [`Backoff`]; what the machine had is kept, marked
//! stale, and when it answers again its new list is diffed against the old one, so what
//! was asked meanwhile is told once and nothing already told is told again.

use std::time::Duration;

use time::OffsetDateTime;
use tokio::sync::mpsc;

use crate::event::{Event, Warning};
use crate::lf::record::SessionRecord;
use crate::permission::remote::FromMachine;
use crate::snapshot::Snapshot;
pub use crate::ssh::{check_destination, Ssh, SSH_OPTIONS};
pub use crate::terminal::remote_launch;

mod follow;

pub use follow::{follow, list_once};

/// How often a machine with only `lf` is listed: lf's own floor for the tray's safety
/// list ([`crate::engine::MIN_SAFETY_INTERVAL`]); each list is an ssh connection and an
/// lf run there, and a person who wants it instant installs lf-tray on that machine.
pub const LIST_INTERVAL: Duration = Duration::from_secs(30);

/// How long one lf call over ssh may take: ssh's 10 s connect timeout plus the 10 s any lf
/// call may take (`lf::DEFAULT_TIMEOUT`), with room for a slow handshake.
pub const REMOTE_LF_TIMEOUT: Duration = Duration::from_secs(30);

/// What a machine has, by its absolute paths there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub lf_tray: Option<String>,
    pub lf: Option<String>,
}

/// The probe's answer. Only absolute paths count: anything else is not what the probe
/// prints.
pub fn parse_probe(out: &str) -> Found {
    let mut found = Found::default();
    for line in out.lines() {
        let Some((name, path)) = line.split_once('=') else {
            continue;
        };
        if !path.starts_with('/') {
            continue;
        }
        match name {
            "lf-tray" if found.lf_tray.is_none() => found.lf_tray = Some(path.to_string()),
            "lf" if found.lf.is_none() => found.lf = Some(path.to_string()),
            _ => {}
        }
    }
    found
}

/// What a machine's follower tells the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// It was reached, and is followed this way; `lf` is its lf, for actions.
    Reached { mode: Mode, lf: Option<String> },
    /// Every session the machine has now: a remote lf-tray's snapshot, or a list.
    View(Vec<SessionRecord>),
    /// One session changed (`Some`) or ended (`None`), as the remote lf-tray said.
    Changed(String, Option<Box<SessionRecord>>),
    /// The remote lf-tray's own warning.
    Warned(String),
    /// The link failed or the machine's answer was unusable; it is tried again later.
    Down(String),
}

/// How a machine is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Watch,
    List,
}

/// One line of a remote `lf-tray watch --json`: what it says, `None` for an event kind
/// this tray does not know (a newer lf-tray's), or why it is not lf-tray's stream. Read as
/// the [`Event`] it was written from.
pub fn read_line(line: &str) -> Result<Option<Report>, String> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let kind = value
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or("a line without a type")?;
    if !Event::KINDS.contains(&kind) {
        return Ok(None);
    }
    let event: Event = serde_json::from_value(value).map_err(|e| e.to_string())?;
    Ok(Some(match event {
        Event::Snapshot { sessions, .. } => Report::View(sessions),
        Event::Resolved { session, .. } => Report::Changed(session.id, None),
        Event::Warning { message, .. } => Report::Warned(message),
        Event::Asked { session, .. }
        | Event::Ready { session, .. }
        | Event::State { session, .. }
        | Event::Stopped { session, .. }
        | Event::Appeared { session, .. } => {
            Report::Changed(session.id.clone(), Some(Box::new(session)))
        }
    }))
}

/// A line of the watch stream about answering ([`FromMachine`]), else `None`.
fn answering_line(line: &str) -> Option<Result<FromMachine, String>> {
    // Only a line that names such a type is parsed twice.
    if !line.contains("\"type\":\"request") && !line.contains("\"type\":\"answer") {
        return None;
    }
    FromMachine::read(line)
}

/// The pause before trying a failed machine again: 1 s, doubling to a minute. A machine
/// that is briefly away (sshd restarting) is back within seconds; one that is off costs
/// one ssh attempt a minute, not a loop.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            next: BACKOFF_FIRST,
        }
    }
}

impl Backoff {
    /// The pause after one more failure in a row.
    pub fn failed(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        pause
    }

    /// The machine answered: the next failure starts from a second again.
    pub fn reset(&mut self) {
        self.next = BACKOFF_FIRST;
    }
}

/// What the engine knows of one machine, and the events its reports make. The state
/// machine of following a machine, without ssh: the engine feeds it [`Report`]s.
#[derive(Debug, Clone)]
pub struct MachineView {
    pub dest: String,
    sessions: Snapshot,
    /// Whether a view ever came: the first is a snapshot, not a burst of transitions.
    seen: bool,
    /// Why the link is down, while it is; the sessions are then the last good ones.
    down: Option<String>,
    mode: Option<Mode>,
    /// The machine's lf, by its path there.
    pub lf: Option<String>,
}

/// What one report changed.
#[derive(Debug, Default, PartialEq)]
pub struct Applied {
    pub events: Vec<Event>,
    pub warnings: Vec<Warning>,
    /// The machine's first view: the engine's full list changed, tell it whole.
    pub first_view: bool,
}

impl MachineView {
    pub fn new(dest: &str) -> MachineView {
        MachineView {
            dest: dest.to_string(),
            sessions: Snapshot::default(),
            seen: false,
            down: None,
            mode: None,
            lf: None,
        }
    }

    pub fn sessions(&self) -> Vec<SessionRecord> {
        self.sessions.sessions()
    }

    /// Its records themselves, shared, in no particular order.
    pub fn shared(&self) -> impl Iterator<Item = &std::sync::Arc<SessionRecord>> {
        self.sessions.shared()
    }

    pub fn get(&self, id: &str) -> Option<&SessionRecord> {
        self.sessions.get(id)
    }

    /// How it is followed, once it was reached.
    pub fn mode(&self) -> Option<Mode> {
        self.mode
    }

    /// Whether what it shows is the last good view of a machine not reached now.
    pub fn stale(&self) -> bool {
        self.down.is_some()
    }

    /// One part of the status line.
    pub fn status(&self) -> String {
        let dest = &self.dest;
        let count = match self.sessions.len() {
            1 => "1 session".to_string(),
            n => format!("{n} sessions"),
        };
        match (&self.down, self.mode) {
            (Some(why), _) if self.seen => {
                format!("{dest}: not reached ({why}); its {count} are from the last good view")
            }
            (Some(why), _) => format!("{dest}: not reached ({why})"),
            (None, None) => format!("{dest}: connecting"),
            (None, Some(Mode::Watch)) => format!("{dest}: live through lf-tray · {count}"),
            (None, Some(Mode::List)) => format!(
                "{dest}: lf listed every {} s (install lf-tray there to make it instant) · {count}",
                LIST_INTERVAL.as_secs()
            ),
        }
    }

    /// Take one report: the transitions it makes, each once, and the warnings to give.
    pub fn apply(&mut self, report: Report, at: OffsetDateTime) -> Applied {
        let mut applied = Applied::default();
        match report {
            Report::Reached { mode, lf } => {
                self.mode = Some(mode);
                self.lf = lf;
            }
            Report::View(records) => {
                let next = Snapshot::from_records(records.into_iter().map(|r| self.tag(r)));
                if self.seen {
                    // What changed while the link was down, or since the last list.
                    applied.events = self.sessions.diff(&next, at);
                } else {
                    applied.first_view = true;
                }
                self.sessions = next;
                self.seen = true;
                self.down = None;
            }
            Report::Changed(id, record) => {
                let record = record.map(|r| self.tag(*r));
                applied.events.extend(self.sessions.update(
                    &id,
                    record.map(std::sync::Arc::new),
                    at,
                ));
            }
            Report::Warned(message) => applied
                .warnings
                .push(Warning::new(None, format!("{}: {message}", self.dest))),
            Report::Down(why) => {
                // One warning per outage, not one per retry.
                if self.down.is_none() {
                    applied
                        .warnings
                        .push(Warning::new(None, format!("{}: {why}", self.dest)));
                }
                self.down = Some(why);
            }
        }
        applied
    }

    fn tag(&self, mut record: SessionRecord) -> SessionRecord {
        record.machine = Some(self.dest.clone());
        record
    }
}

/// Where a follower sends its reports: the engine's channel, with the id the engine
/// knows this follower by.
#[derive(Debug, Clone)]
pub struct Reporter {
    pub machine: u64,
    pub tx: mpsc::UnboundedSender<(u64, Report)>,
}

impl Reporter {
    /// Whether the engine took it: `false` once the engine is gone.
    pub fn send(&self, report: Report) -> bool {
        self.tx.send((self.machine, report)).is_ok()
    }

    pub async fn closed(&self) {
        self.tx.closed().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::record::{test_record, Kind, State};
    use crate::permission::remote::{Links, ToMachine, ALIVE_EVERY};
    use crate::terminal::Launch;
    use std::path::PathBuf;
    use std::process::Stdio;

    fn at() -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH
    }

    fn waiting(id: &str) -> SessionRecord {
        let mut r = test_record(id, Some(Kind::Ask), State::Waiting);
        r.set_needs_you(true);
        r
    }

    fn kinds(applied: &Applied) -> Vec<(&'static str, String, Option<String>)> {
        applied
            .events
            .iter()
            .map(|e| {
                let name = e.kind();
                let s = e.session().unwrap();
                (name, s.id.clone(), s.machine.clone())
            })
            .collect()
    }

    #[test]
    fn destinations_that_ssh_would_read_as_options_are_refused() {
        assert!(check_destination("build-box").is_ok());
        assert!(check_destination("me@host.example").is_ok());
        let refused = check_destination("-oProxyCommand=touch /tmp/x").unwrap_err();
        assert!(refused.contains("cannot start with “-”"), "{refused}");
        assert!(check_destination("").is_err());
        assert!(check_destination("a b").is_err());
        assert!(check_destination("a\nb").is_err());
        assert!(Ssh::new("-x").is_err());
    }

    #[test]
    fn ssh_runs_with_batch_mode_keepalives_and_an_end_of_options() {
        let ssh = Ssh::new("box").unwrap();
        let argv = ssh.argv(false, "lf-tray watch --json");
        assert_eq!(argv[0], "ssh");
        assert!(argv.windows(2).any(|w| w == ["-o", "BatchMode=yes"]));
        assert!(argv.iter().any(|a| a.starts_with("ServerAliveInterval=")));
        assert!(!argv.iter().any(|a| a.contains("StrictHostKeyChecking")));
        assert_eq!(
            &argv[argv.len() - 4..],
            ["-T", "--", "box", "lf-tray watch --json"]
        );
    }

    #[test]
    fn opening_quotes_the_remote_argv_and_cwd_for_the_remote_shell() {
        let ssh = Ssh::new("box").unwrap();
        let launch = Launch {
            argv: vec![
                "/home/me/.local/bin/lf".into(),
                "session".into(),
                "open".into(),
                "--".into(),
                "-x'; rm -rf ~ $(id)\n".into(),
            ],
            cwd: PathBuf::from("/srv/it's; $(reboot)"),
        };
        let argv = ssh.open(&launch.argv, &launch.cwd);
        assert_eq!(&argv[argv.len() - 4..argv.len() - 1], ["-t", "--", "box"]);
        let line = argv.last().unwrap();
        assert_eq!(
            line,
            "cd -- '/srv/it'\\''s; $(reboot)' && exec /home/me/.local/bin/lf session open -- \
             '-x'\\''; rm -rf ~ $(id)\n'"
        );
        // The remote shell reads it back as exactly those words.
        let words = crate::terminal::split_words(line).unwrap();
        assert_eq!(words[2], "/srv/it's; $(reboot)");
        assert_eq!(words[words.len() - 1], "-x'; rm -rf ~ $(id)\n");
    }

    #[test]
    fn the_probe_answer_names_absolute_paths_only() {
        let found = parse_probe("lf-tray=/home/u/.local/bin/lf-tray\nlf=/usr/bin/lf\n");
        assert_eq!(found.lf_tray.as_deref(), Some("/home/u/.local/bin/lf-tray"));
        assert_eq!(found.lf.as_deref(), Some("/usr/bin/lf"));
        let found = parse_probe("Welcome to the box!\nlf=lf\nlf=/opt/lf\n");
        assert_eq!(
            found,
            Found {
                lf_tray: None,
                lf: Some("/opt/lf".into())
            }
        );
        assert_eq!(parse_probe(""), Found::default());
    }

    #[test]
    fn a_remote_stream_reads_as_reports() {
        let view = read_line(r#"{"type":"snapshot","at":"2026-01-01T00:00:00Z","sessions":[{"id":"a","state":"waiting"}]}"#)
            .unwrap()
            .unwrap();
        assert!(matches!(view, Report::View(ref r) if r.len() == 1 && r[0].id == "a"));
        let asked = read_line(
            r#"{"type":"asked","at":"2026-01-01T00:00:01Z","session":{"id":"b","state":"waiting","needs_you":true}}"#,
        )
        .unwrap()
        .unwrap();
        assert!(matches!(asked, Report::Changed(ref id, Some(_)) if id == "b"));
        let gone = read_line(
            r#"{"type":"resolved","at":"2026-01-01T00:00:02Z","session":{"id":"b","state":"waiting"}}"#,
        )
            .unwrap()
            .unwrap();
        assert_eq!(gone, Report::Changed("b".into(), None));
        assert_eq!(read_line(r#"{"type":"newer_kind"}"#).unwrap(), None);
        assert!(read_line("Last login: yesterday").is_err());
        assert!(read_line(r#"{"no":"type"}"#).is_err());
        assert!(read_line(r#"{"type":"asked"}"#).is_err());
    }

    #[test]
    fn backoff_doubles_from_a_second_to_a_minute() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..9).map(|_| b.failed().as_secs()).collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        b.reset();
        assert_eq!(b.failed(), Duration::from_secs(1));
    }

    #[test]
    fn the_first_view_is_a_snapshot_then_changes_are_tagged_transitions() {
        let mut m = MachineView::new("box");
        let first = m.apply(Report::View(vec![waiting("a")]), at());
        assert!(first.first_view);
        assert!(first.events.is_empty());
        assert_eq!(m.sessions()[0].machine.as_deref(), Some("box"));
        let asked = m.apply(
            Report::Changed("b".into(), Some(Box::new(waiting("b")))),
            at(),
        );
        assert_eq!(kinds(&asked), [("asked", "b".into(), Some("box".into()))]);
        let gone = m.apply(Report::Changed("a".into(), None), at());
        assert_eq!(kinds(&gone), [("resolved", "a".into(), Some("box".into()))]);
        // A record that names another machine is still this machine's.
        let mut other = waiting("c");
        other.machine = Some("elsewhere".into());
        let c = m.apply(Report::Changed("c".into(), Some(Box::new(other))), at());
        assert_eq!(kinds(&c), [("asked", "c".into(), Some("box".into()))]);
    }

    #[test]
    fn an_outage_warns_once_keeps_the_view_and_reconnecting_tells_each_change_once() {
        let mut m = MachineView::new("box");
        m.apply(
            Report::Reached {
                mode: Mode::Watch,
                lf: None,
            },
            at(),
        );
        m.apply(Report::View(vec![waiting("a"), waiting("b")]), at());
        let down = m.apply(Report::Down("Connection refused".into()), at());
        assert_eq!(down.warnings.len(), 1);
        assert_eq!(down.warnings[0].message, "box: Connection refused");
        assert!(down.events.is_empty());
        // Retries while it is down: no more warnings, the last good view stays.
        for _ in 0..3 {
            let again = m.apply(Report::Down("Connection refused".into()), at());
            assert!(again.warnings.is_empty() && again.events.is_empty());
        }
        assert!(m.stale());
        assert_eq!(m.sessions().len(), 2);
        assert!(m.status().contains("last good view"), "{}", m.status());
        // Back: `a` was answered meanwhile, `c` asked. Each once; `b` not again.
        m.apply(
            Report::Reached {
                mode: Mode::Watch,
                lf: None,
            },
            at(),
        );
        let back = m.apply(Report::View(vec![waiting("b"), waiting("c")]), at());
        assert!(!back.first_view);
        let mut told = kinds(&back);
        told.sort();
        assert_eq!(
            told,
            [
                ("asked", "c".into(), Some("box".into())),
                ("resolved", "a".into(), Some("box".into()))
            ]
        );
        assert!(!m.stale());
        // The same view again (a list on the slow timer) tells nothing.
        let same = m.apply(Report::View(vec![waiting("b"), waiting("c")]), at());
        assert!(same.events.is_empty());
        // A second outage warns again, once.
        assert_eq!(m.apply(Report::Down("x".into()), at()).warnings.len(), 1);
    }

    /// A stand-in `ssh` whose machine has lf-tray and lf (its probe's answer), then runs
    /// `body` as the watch.
    fn stand_in_ssh(path: &std::path::Path, body: &str) {
        script(
            path,
            &format!(
                r#"#!/bin/sh
for last; do :; done
case "$last" in
  *'command -v'*) echo "lf-tray=/home/u/.local/bin/lf-tray"; echo "lf=/usr/bin/lf"; exit 0 ;;
esac
{body}"#
            ),
        );
    }

    /// Follow machine `box` (7) through the stand-in `ssh`: the follower, and its reports.
    fn follow_box(
        ssh: PathBuf,
        links: Links,
    ) -> (
        tokio::task::JoinHandle<()>,
        mpsc::UnboundedReceiver<(u64, Report)>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (nudge, nudged) = mpsc::unbounded_channel();
        let machine = Ssh {
            program: ssh,
            dest: "box".into(),
        };
        let follower = tokio::spawn(async move {
            // Held for the follower's life: a closed nudge is not asked for.
            let _nudge = nudge;
            follow(machine, Reporter { machine: 7, tx }, nudged, links).await
        });
        (follower, rx)
    }

    /// Written by a child `sh`, not by this process: another test's fork could otherwise
    /// inherit the open file and make running it fail with "text file busy".
    fn script(path: &std::path::Path, text: &str) {
        use std::io::Write;
        let mut sh = std::process::Command::new("/bin/sh")
            .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
            .arg(path)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        sh.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        assert!(sh.wait().unwrap().success());
    }

    /// The follower's loop with a stand-in `ssh`: it answers the probe with an lf-tray,
    /// streams a snapshot and an ask, then the link drops; the second connection finds a
    /// machine that prints garbage; the third streams again.
    #[tokio::test]
    async fn the_follower_streams_drops_backs_off_and_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = dir.path().join("ssh");
        let count = dir.path().join("count");
        stand_in_ssh(
            &ssh,
            &format!(
                r#"n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
case $n in
  2) echo 'Welcome! not a stream'; exit 0 ;;
esac
echo '{{"type":"snapshot","at":"2026-01-01T00:00:00Z","sessions":[{{"id":"a","state":"waiting","needs_you":true}}]}}'
echo '{{"type":"asked","at":"2026-01-01T00:00:00Z","session":{{"id":"b","state":"waiting","needs_you":true}}}}'
[ $n -ge 3 ] && exec sleep 30
echo "Connection to box closed by remote host." >&2
exit 255
"#,
                count = count.display()
            ),
        );
        let (follower, mut rx) = follow_box(ssh, Links::default());
        let mut seen = Vec::new();
        let started = std::time::Instant::now();
        let mut downs = Vec::new();
        let mut last_view = Duration::ZERO;
        while seen.iter().filter(|r| matches!(r, Report::View(_))).count() < 2 {
            let (index, report) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("a report within 10 s")
                .unwrap();
            assert_eq!(index, 7);
            match &report {
                Report::Down(why) => downs.push((started.elapsed(), why.clone())),
                Report::View(_) => last_view = started.elapsed(),
                _ => {}
            }
            seen.push(report);
        }
        follower.abort();
        let names: Vec<&str> = seen
            .iter()
            .map(|r| match r {
                Report::Reached {
                    mode: Mode::Watch, ..
                } => "reached",
                Report::Reached { .. } => "reached-list",
                Report::View(_) => "view",
                Report::Changed(..) => "changed",
                Report::Warned(_) => "warned",
                Report::Down(_) => "down",
            })
            .collect();
        assert_eq!(
            names,
            ["reached", "view", "changed", "down", "reached", "down", "reached", "view"]
        );
        assert_eq!(downs[0].1, "Connection to box closed by remote host.");
        assert!(downs[1].1.contains("not its stream"), "{}", downs[1].1);
        // A second before the first retry; two before the next, a failure in a row (the
        // good view of the first connection had reset the pause to a second).
        let first = downs[1].0 - downs[0].0;
        let second = last_view - downs[1].0;
        assert!(first >= Duration::from_secs(1), "{first:?}");
        assert!(second >= Duration::from_secs(2), "{second:?}");
        assert!(
            matches!(&seen[0], Report::Reached { lf: Some(lf), .. } if lf == "/usr/bin/lf"),
            "{:?}",
            seen[0]
        );
    }

    /// The answering lines travel the watch stream both ways: the machine's watcher (a
    /// stand-in `ssh` that plays it) is told the tray answers, says it took it, hears the
    /// tray is alive while a popup is up, and a machine let go of is told to take its
    /// entry out before its link is cut.
    #[tokio::test]
    async fn a_machine_is_told_it_answers_and_let_go_of_takes_its_entry_out() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = dir.path().join("ssh");
        let out = dir.path().join("entry-out");
        let alive = dir.path().join("alive");
        stand_in_ssh(
            &ssh,
            &format!(
                r#"echo '{{"type":"snapshot","at":"2026-01-01T00:00:00Z","sessions":[]}}'
while read -r line; do
  case "$line" in
    *'"answering":true'*) echo '{{"type":"answering","on":true}}' ;;
    *'"answering":false'*) touch {out}; echo '{{"type":"answering","on":false}}' ;;
    '"alive"') touch {alive} ;;
  esac
done
"#,
                out = out.display(),
                alive = alive.display()
            ),
        );
        let links = Links::default();
        links.set_answering(true);
        let (follower, mut rx) = follow_box(ssh, links.clone());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while links.status("box", Some(true)).as_deref() != Some("answers from here") {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the machine never said it answers: {:?}",
                links.status("box", Some(true))
            );
            // Reports drained meanwhile, so the follower is never held up by them.
            let _ = tokio::time::timeout(Duration::from_millis(20), rx.recv()).await;
        }
        // A popup up for a request there: the tray says it is alive until it is answered.
        assert!(links.send("box", ToMachine::Shown { id: 1 }));
        let beat = tokio::time::Instant::now();
        while !alive.exists() {
            assert!(
                beat.elapsed() < Duration::from_secs(5),
                "no beat within 5 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            beat.elapsed() >= ALIVE_EVERY,
            "not before a second: {:?}",
            beat.elapsed()
        );
        let said = links.let_go("box");
        tokio::time::timeout(Duration::from_secs(10), said)
            .await
            .expect("the machine took its entry out within 10 s")
            .expect_err("its word closes the wait");
        assert!(out.exists(), "the watcher was told to take its entry out");
        follower.abort();
    }

    #[test]
    fn the_status_says_how_a_machine_is_followed() {
        let mut m = MachineView::new("box");
        assert_eq!(m.status(), "box: connecting");
        m.apply(
            Report::Reached {
                mode: Mode::List,
                lf: Some("/usr/bin/lf".into()),
            },
            at(),
        );
        m.apply(Report::View(vec![waiting("a")]), at());
        assert!(
            m.status().contains("install lf-tray there"),
            "{}",
            m.status()
        );
        assert_eq!(m.lf.as_deref(), Some("/usr/bin/lf"));
        m.apply(
            Report::Reached {
                mode: Mode::Watch,
                lf: None,
            },
            at(),
        );
        assert_eq!(m.status(), "box: live through lf-tray · 1 session");
        let mut fresh = MachineView::new("far");
        fresh.apply(Report::Down("Could not resolve hostname far".into()), at());
        assert_eq!(
            fresh.status(),
            "far: not reached (Could not resolve hostname far)"
        );
    }
}
