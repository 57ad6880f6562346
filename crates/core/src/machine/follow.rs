//! Following one machine over ssh: ask it what it has, then stream its lf-tray's events
//! or list its lf, and after a failure try again with [`Backoff`].

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::mpsc;

use super::{
    answering_line, parse_probe, read_line, Backoff, Found, Mode, Report, Reporter, Ssh,
    LIST_INTERVAL, REMOTE_LF_TIMEOUT,
};
use crate::lf::cli::Lf;
use crate::lf::dialect::Dialect;
use crate::lf::record::SessionRecord;
use crate::permission::remote::{FromMachine, Links, ToMachine, ALIVE_EVERY};
use crate::snapshot::Snapshot;

/// How long finding what a machine has may take: ssh's 10 s connect timeout, and a login
/// shell that reads slow profile scripts.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// A line of the remote lf-tray's stream is one event; a snapshot of thousands of sessions
/// is a few MiB. Anything longer is not lf-tray talking, and ends the connection.
const LINE_CAP: u64 = 16 << 20;

/// Where a machine's problems are told: ssh's last lines.
const STDERR_CAP: u64 = 16 << 10;

/// What a remote shell runs to learn what is installed there, found as locally: `PATH`
/// (a non-interactive ssh shell often has a short one), then `~/.local/bin` and
/// `~/.cargo/bin`. It prints `lf-tray=PATH` and `lf=PATH` for what it found. A fixed text:
/// nothing from the person or the machine is put into it.
const PROBE: &str = r#"for n in lf-tray lf; do for c in "$(command -v "$n" 2>/dev/null)" "$HOME/.local/bin/$n" "$HOME/.cargo/bin/$n"; do if [ -n "$c" ] && [ -f "$c" ] && [ -x "$c" ]; then printf '%s=%s\n' "$n" "$c"; break; fi; done; done"#;

/// Follow one machine until `reports` closes: reach it, follow it the best way it
/// allows, and after a failure try again with [`Backoff`]. `nudge` asks a machine that is
/// listed for a list now (after an action on it). A machine followed live carries the
/// agents' requests there on the same connection ([`Links`]).
pub async fn follow(
    ssh: Ssh,
    reports: Reporter,
    mut nudge: mpsc::UnboundedReceiver<()>,
    links: Links,
) {
    let mut backoff = Backoff::default();
    loop {
        let why = match reach(&ssh, &reports, &mut nudge, &mut backoff, &links).await {
            Ok(Ended::EngineGone) => return,
            // Asked again what it has: lf-tray may have been installed meanwhile.
            Ok(Ended::Probe) => continue,
            Err(why) => why,
        };
        if !reports.send(Report::Down(why)) {
            return;
        }
        let pause = backoff.failed();
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = reports.closed() => return,
        }
    }
}

/// How a connection's life ended, when nothing failed.
enum Ended {
    EngineGone,
    /// Time to ask the machine again what it has.
    Probe,
}

/// How many lists a machine with only lf gets before it is asked again what it has: every
/// ten minutes, so installing lf-tray there makes it live without restarting the tray, for
/// one more ssh per ten minutes.
const LISTS_PER_PROBE: u32 = 20;

/// One connection's life: `Ok` when it ended by itself, else why it failed.
async fn reach(
    ssh: &Ssh,
    reports: &Reporter,
    nudge: &mut mpsc::UnboundedReceiver<()>,
    backoff: &mut Backoff,
    links: &Links,
) -> Result<Ended, String> {
    let found = probe(ssh).await?;
    match (found.lf_tray, found.lf) {
        (Some(lf_tray), lf) => {
            let sent = reports.send(Report::Reached {
                mode: Mode::Watch,
                lf,
            });
            if !sent {
                return Ok(Ended::EngineGone);
            }
            watch(ssh, &lf_tray, reports, backoff, links).await
        }
        (None, Some(lf)) => {
            let sent = reports.send(Report::Reached {
                mode: Mode::List,
                lf: Some(lf.clone()),
            });
            if !sent {
                return Ok(Ended::EngineGone);
            }
            list(ssh, &lf, reports, nudge, backoff).await
        }
        (None, None) => Err(
            "neither lf-tray nor lf was found there (PATH, ~/.local/bin, \
             ~/.cargo/bin)"
                .into(),
        ),
    }
}

/// Ask the machine what it has, in one ssh.
async fn probe(ssh: &Ssh) -> Result<Found, String> {
    // The probe is a fixed shell text of its own, given to the remote shell as it is.
    let mut command = ssh.shell(PROBE);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let run = tokio::time::timeout(PROBE_TIMEOUT, command.output()).await;
    let out = match run {
        Err(_) => {
            return Err(format!(
                "ssh did not answer within {} s",
                PROBE_TIMEOUT.as_secs()
            ))
        }
        Ok(Err(e)) => return Err(format!("ssh could not be started: {e}")),
        Ok(Ok(out)) => out,
    };
    if !out.status.success() {
        return Err(ssh_failure(&out.stderr, out.status.code()));
    }
    Ok(parse_probe(&String::from_utf8_lossy(&out.stdout)))
}

/// ssh's own complaint, on one line: its last line says why.
fn ssh_failure(stderr: &[u8], code: Option<i32>) -> String {
    let text = String::from_utf8_lossy(stderr);
    match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
        Some(line) => line.to_string(),
        None => match code {
            Some(code) => format!("ssh ended with exit code {code}"),
            None => "ssh was killed by a signal".into(),
        },
    }
}

/// Follow a machine's `lf-tray watch --json` until it ends.
async fn watch(
    ssh: &Ssh,
    lf_tray: &str,
    reports: &Reporter,
    backoff: &mut Backoff,
    links: &Links,
) -> Result<Ended, String> {
    let mut command = ssh.command(&[lf_tray, "watch", "--json"]);
    // A pipe held open, not /dev/null: ssh would send the end of /dev/null at once, and
    // lf-tray there ends at the end of its stdin. This way it ends when this connection
    // does, also when this tray is gone without ending its ssh. It carries the tray's
    // lines about answering (`Links`); a watch without a desk writes nothing.
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| format!("ssh could not be started: {e}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let stderr = tokio::spawn(read_tail(stderr));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut link = links.connect(&ssh.dest);
    let mut to_machine = std::mem::replace(&mut link.to_machine, mpsc::unbounded_channel().1);
    // Ends when the link does (this connection's end) or the machine stops reading; stdin
    // is closed only then, and its end tells the machine's watcher the tray left.
    // While a request's popup is up it also says the tray is alive, every
    // `ALIVE_EVERY`: the hooks there give up on a link that died without a word.
    let (beats, dest) = (links.clone(), ssh.dest.clone());
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        loop {
            let line = if beats.waiting(&dest) {
                tokio::select! {
                    line = to_machine.recv() => line,
                    () = tokio::time::sleep(ALIVE_EVERY) => Some(ToMachine::Alive),
                }
            } else {
                to_machine.recv().await
            };
            let Some(line) = line else { break };
            if stdin.write_all(line.line().as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let mut lines = BufReader::new(stdout);
    let mut line = Vec::new();
    let ended = loop {
        line.clear();
        let mut capped = (&mut lines).take(LINE_CAP);
        let read = tokio::select! {
            read = capped.read_until(b'\n', &mut line) => read,
            () = reports.closed() => return Ok(Ended::EngineGone),
        };
        match read {
            Ok(0) => break None,
            Ok(_) if !line.ends_with(b"\n") && line.len() as u64 >= LINE_CAP => {
                break Some(format!(
                    "lf-tray there sent a line of more than {} MiB",
                    LINE_CAP >> 20
                ))
            }
            Ok(_) => {}
            Err(e) => break Some(format!("reading from ssh failed: {e}")),
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(heard) = answering_line(text) {
            match heard {
                Ok(heard) => link.heard(heard),
                // One request this tray cannot read loses nothing else: it gets no popup
                // (the hook there gives no decision at once), and the person is told.
                Err(e) => {
                    if let Some(id) = FromMachine::id_of(text) {
                        links.send(&ssh.dest, ToMachine::Withdraw { id });
                    }
                    reports.send(Report::Warned(format!(
                        "a request there was unreadable: {e}"
                    )));
                }
            }
            continue;
        }
        match read_line(text) {
            Ok(Some(report)) => {
                if matches!(report, Report::View(_)) {
                    backoff.reset();
                }
                if !reports.send(report) {
                    return Ok(Ended::EngineGone);
                }
            }
            Ok(None) => {}
            Err(e) => break Some(format!("lf-tray there sent what is not its stream: {e}")),
        }
    };
    writer.abort();
    drop(link);
    // Killed and reaped here, so no ssh outlives the connection given up on.
    let _ = child.start_kill();
    let status = child.wait().await.ok();
    let stderr = stderr.await.unwrap_or_default();
    Err(ended.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&stderr);
        match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
            Some(line) => line.to_string(),
            None => match status.and_then(|s| s.code()) {
                Some(code) => format!("lf-tray watch there ended (exit code {code})"),
                None => "lf-tray watch there ended".into(),
            },
        }
    }))
}

/// Follow a machine that has only lf: its list now, then every [`LIST_INTERVAL`] or when
/// nudged.
async fn list(
    ssh: &Ssh,
    lf: &str,
    reports: &Reporter,
    nudge: &mut mpsc::UnboundedReceiver<()>,
    backoff: &mut Backoff,
) -> Result<Ended, String> {
    let lf = Lf::over_ssh(ssh.clone(), lf).with_timeout(REMOTE_LF_TIMEOUT);
    let dialect = lf
        .detect()
        .await
        .map_err(|e| format!("lf session --help: {e}"))?;
    // Asks for a list from before this connection are answered by its first list.
    while nudge.try_recv().is_ok() {}
    for _ in 0..LISTS_PER_PROBE {
        let (records, problems) = lf
            .list(&dialect)
            .await
            .map_err(|e| format!("lf session list: {e}"))?;
        backoff.reset();
        for problem in problems {
            if !reports.send(Report::Warned(problem)) {
                return Ok(Ended::EngineGone);
            }
        }
        if !reports.send(Report::View(finished(records, &dialect))) {
            return Ok(Ended::EngineGone);
        }
        tokio::select! {
            () = tokio::time::sleep(LIST_INTERVAL) => {}
            Some(()) = nudge.recv() => {}
            () = reports.closed() => return Ok(Ended::EngineGone),
        }
    }
    Ok(Ended::Probe)
}

/// A machine's sessions once, for `lf-tray list`: its own `lf-tray list --json` where it
/// has lf-tray, else its lf's list. Tagged with the machine.
pub async fn list_once(ssh: &Ssh) -> Result<Vec<SessionRecord>, String> {
    let found = probe(ssh).await?;
    let records = match (found.lf_tray, found.lf) {
        (Some(lf_tray), _) => {
            let mut command = ssh.command(&[&lf_tray, "list", "--json"]);
            command.stdin(Stdio::null());
            let out = tokio::time::timeout(REMOTE_LF_TIMEOUT, command.output())
                .await
                .map_err(|_| {
                    format!(
                        "lf-tray there did not answer within {} s",
                        REMOTE_LF_TIMEOUT.as_secs()
                    )
                })?
                .map_err(|e| format!("ssh could not be started: {e}"))?;
            if !out.status.success() {
                return Err(ssh_failure(&out.stderr, out.status.code()));
            }
            serde_json::from_slice(&out.stdout)
                .map_err(|e| format!("lf-tray list there printed what is not a list: {e}"))?
        }
        (None, Some(lf)) => {
            let lf = Lf::over_ssh(ssh.clone(), &lf).with_timeout(REMOTE_LF_TIMEOUT);
            let dialect = lf
                .detect()
                .await
                .map_err(|e| format!("lf session --help: {e}"))?;
            let (records, _) = lf
                .list(&dialect)
                .await
                .map_err(|e| format!("lf session list: {e}"))?;
            finished(records, &dialect)
        }
        (None, None) => {
            return Err(
                "neither lf-tray nor lf was found there (PATH, ~/.local/bin, ~/.cargo/bin)".into(),
            )
        }
    };
    Ok(records
        .into_iter()
        .map(|mut r: SessionRecord| {
            r.machine = Some(ssh.dest.clone());
            r
        })
        .collect())
}

/// lf's records as the engine hands them on: `needs_you` judged, actions derived.
fn finished(records: Vec<SessionRecord>, dialect: &Dialect) -> Vec<SessionRecord> {
    Snapshot::merge(Vec::new(), &records, false, Some(dialect)).sessions()
}

async fn read_tail(from: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut out = Vec::new();
    let mut from = from;
    let _ = (&mut from).take(STDERR_CAP).read_to_end(&mut out).await;
    let _ = tokio::io::copy(&mut from, &mut tokio::io::sink()).await;
    out
}
