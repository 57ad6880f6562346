//! Whether a session's agent is attached to a terminal right now: lf's provider clients
//! (`<run>/provider-clients/<pid>.json`) and its judgement of which of them are live.
//! That judgement is the whole difference between an `active` and a `closed` session.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use time::OffsetDateTime;

use crate::event::Warning;
use crate::files::record_file::{decode_record, is_absent, read_record_file};

/// The directory in a Run where lf files one receipt per live provider client.
pub(crate) const CLIENTS_DIR: &str = "provider-clients";

/// lf's ±5 s between a client's recorded start and its process's real start: wide enough
/// for the time lf takes to write the file after the provider starts, narrow enough that
/// a recycled pid, which started later, is not mistaken for the client.
const START_TOLERANCE_SECS: f64 = 5.0;
/// A client file holds a pid, a timestamp and a terminal id.
const CLIENT_CAP: u64 = 64 << 10;

/// One `provider-clients/<pid>.json`: a terminal process lf started for the Run's
/// provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderClient {
    pub pid: i32,
    /// Unix seconds.
    pub started_at: i64,
    pub path: PathBuf,
}

#[derive(Deserialize)]
struct ClientFile {
    schema_version: u32,
    pid: i64,
    #[serde(with = "time::serde::rfc3339")]
    started_at: OffsetDateTime,
}

/// The provider clients a Run records, in file-name order. Dot-files (lf's staging
/// files) and other names are skipped; a file lf would reject (bad JSON, schema other
/// than 1, pid ≤ 1) is skipped with a warning so the others still count.
pub fn read_clients(run_dir: &Path) -> (Vec<ProviderClient>, Vec<Warning>) {
    let dir = run_dir.join(CLIENTS_DIR);
    let mut clients = Vec::new();
    let mut warnings = Vec::new();
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if is_absent(&error) => return (clients, warnings),
        Err(error) => {
            let message = format!("Provider clients cannot be listed: {error}");
            return (clients, vec![Warning::new(Some(dir), message)]);
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let message = format!("Provider clients cannot be listed: {error}");
                warnings.push(Warning::new(Some(dir.clone()), message));
                break;
            }
        };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        match read_client(&entry.path()) {
            Ok(Some(client)) => clients.push(client),
            Ok(None) => {}
            Err(warning) => warnings.push(warning),
        }
    }
    clients.sort_by(|a, b| a.path.cmp(&b.path));
    (clients, warnings)
}

fn read_client(path: &Path) -> Result<Option<ProviderClient>, Warning> {
    const WHAT: &str = "Provider client record";
    let Some(bytes) = read_record_file(path, WHAT, CLIENT_CAP)? else {
        return Ok(None);
    };
    let file: ClientFile = decode_record(path, WHAT, &bytes)?;
    let invalid = |message: String| Err(Warning::new(Some(path.to_path_buf()), message));
    if file.schema_version != 1 {
        return invalid(format!(
            "unsupported provider client schema {}; expected 1",
            file.schema_version
        ));
    }
    let pid = match i32::try_from(file.pid) {
        Ok(pid) if pid > 1 => pid,
        _ => return invalid(format!("Provider client pid {} is not valid", file.pid)),
    };
    Ok(Some(ProviderClient {
        pid,
        started_at: file.started_at.unix_timestamp(),
        path: path.to_path_buf(),
    }))
}

/// lf's liveness judgement (`active_provider_clients`): the pid runs, started within
/// ±5 s of the recorded start, and its command line names the harness. On Linux it is
/// read from `/proc`, never by spawning `ps`.
pub fn is_live(client: &ProviderClient, harness: &str) -> bool {
    if client.pid <= 1 || harness.is_empty() {
        return false;
    }
    #[cfg(target_os = "linux")]
    return procfs::is_live(client, harness);
    #[cfg(all(unix, not(target_os = "linux")))]
    return ps::is_live(client, harness);
    // lf runs on Unix only; elsewhere no client of it can be running.
    #[cfg(not(unix))]
    return false;
}

/// The live clients of a Run.
pub fn live_clients<'a>(clients: &'a [ProviderClient], harness: &str) -> Vec<&'a ProviderClient> {
    clients
        .iter()
        .filter(|client| is_live(client, harness))
        .collect()
}

fn started_near(process_start: f64, recorded: i64) -> bool {
    (process_start - recorded as f64).abs() <= START_TOLERANCE_SECS
}

/// lf's command check: a word whose basename is the harness or starts with
/// `<harness>-`, or a word containing `/<harness>`. lf splits `ps`'s command column on
/// whitespace; splitting the NUL-separated argv on NULs *and* whitespace gives the same
/// words.
fn command_names_harness(command: &[u8], harness: &str) -> bool {
    let harness = harness.as_bytes();
    let slash_harness = [b"/".as_slice(), harness].concat();
    command
        .split(|&b| b == 0 || b.is_ascii_whitespace())
        .filter(|word| !word.is_empty())
        .any(|word| {
            let base = word.rsplit(|&b| b == b'/').next().unwrap_or(word);
            base == harness
                || base
                    .strip_prefix(harness)
                    .is_some_and(|rest| rest.first() == Some(&b'-'))
                || word
                    .windows(slash_harness.len())
                    .any(|window| window == slash_harness)
        })
}

#[cfg(target_os = "linux")]
mod procfs {
    use super::{command_names_harness, started_near, ProviderClient};

    pub(super) fn is_live(client: &ProviderClient, harness: &str) -> bool {
        let Some(start) = crate::proc::start_time(client.pid) else {
            return false;
        };
        if !started_near(start, client.started_at) {
            return false;
        }
        std::fs::read(format!("/proc/{}/cmdline", client.pid))
            .is_ok_and(|command| command_names_harness(&command, harness))
    }
}

/// lf's own check, for macOS and other Unixes without `/proc`: one
/// `ps -p <pid> -o etime= -o command=`. Built in Linux tests too, so it is exercised.
#[cfg(any(test, all(unix, not(target_os = "linux"))))]
mod ps {
    use std::process::{Command, Stdio};
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::{command_names_harness, started_near, ProviderClient};

    pub(super) fn is_live(client: &ProviderClient, harness: &str) -> bool {
        let output = Command::new("ps")
            .args([
                "-p",
                &client.pid.to_string(),
                "-o",
                "etime=",
                "-o",
                "command=",
            ])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        // Any failure, including "no such process" (exit 1, no output), means not live.
        let Ok(output) = output else { return false };
        if !output.status.success() {
            return false;
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let Some((etime, command)) = text.trim().split_once(char::is_whitespace) else {
            return false;
        };
        let (Some(elapsed), Ok(now)) = (
            parse_etime(etime),
            SystemTime::now().duration_since(UNIX_EPOCH),
        ) else {
            return false;
        };
        started_near(started(elapsed, now.as_secs_f64()), client.started_at)
            && command_names_harness(command.as_bytes(), harness)
    }

    /// When a process `elapsed` seconds old at `now` (Unix seconds) started. A process
    /// started in the very jiffy `ps` reads it can come out with a start after `ps`'s now,
    /// and procps then prints the negative elapsed time wrapped around
    /// (`441077234-00:18:40`, measured): a start before 1970 is that one, just started.
    pub(super) fn started(elapsed: u64, now: f64) -> f64 {
        let elapsed = elapsed as f64;
        if elapsed > now {
            now
        } else {
            now - elapsed
        }
    }

    /// `ps`'s elapsed time, `[[dd-]hh:]mm:ss`, in seconds.
    pub(super) fn parse_etime(etime: &str) -> Option<u64> {
        let (days, clock) = match etime.split_once('-') {
            Some((days, clock)) => (days.parse::<u64>().ok()?, clock),
            None => (0, etime),
        };
        let parts = clock
            .split(':')
            .map(|part| part.parse::<u64>().ok())
            .collect::<Option<Vec<_>>>()?;
        let (hours, minutes, seconds) = match parts[..] {
            [minutes, seconds] if days == 0 => (0, minutes, seconds),
            [hours, minutes, seconds] => (hours, minutes, seconds),
            _ => return None,
        };
        Some(((days * 24 + hours) * 60 + minutes) * 60 + seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    /// A stand-in provider: a copy of `sleep` under the name a harness would have. Killed
    /// and reaped when dropped, so a failing test leaves no process behind.
    struct Provider {
        child: Child,
        started_at: i64,
        _dir: tempfile::TempDir,
    }

    impl Provider {
        /// `relative` is the program's path inside a fresh temporary directory.
        fn spawn(relative: &str) -> Provider {
            let dir = tempfile::tempdir().unwrap();
            let program = dir.path().join(relative);
            fs::create_dir_all(program.parent().unwrap()).unwrap();
            fs::copy("/bin/sleep", &program).unwrap();
            // Another test thread forking while the copy was open for writing holds it
            // open in its child until that child execs: the kernel then refuses to run it
            // (ETXTBSY). That lasts microseconds; retry for a bounded time.
            let deadline = Instant::now() + Duration::from_secs(10);
            let child = loop {
                match Command::new(&program)
                    .arg("30")
                    .stdin(Stdio::null())
                    .spawn()
                {
                    Ok(child) => break child,
                    Err(error)
                        if error.raw_os_error() == Some(libc::ETXTBSY)
                            && Instant::now() < deadline =>
                    {
                        std::thread::yield_now()
                    }
                    Err(error) => panic!("spawn {}: {error}", program.display()),
                }
            };
            // `spawn` returns once the exec has begun, a moment before the kernel has set
            // up the new program's argv: wait for it, as lf's client file comes later too.
            #[cfg(target_os = "linux")]
            while fs::read(format!("/proc/{}/cmdline", child.id())).is_ok_and(|c| c.is_empty()) {
                assert!(
                    Instant::now() < deadline,
                    "{} never started",
                    program.display()
                );
                std::thread::yield_now();
            }
            Provider {
                child,
                started_at: now(),
                _dir: dir,
            }
        }

        fn client(&self) -> ProviderClient {
            client(self.child.id() as i32, self.started_at)
        }

        fn stop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    impl Drop for Provider {
        fn drop(&mut self) {
            self.stop();
        }
    }

    /// `is_live`, with what `/proc` said when it is not.
    fn assert_live(client: &ProviderClient, harness: &str) {
        if !is_live(client, harness) {
            let pid = client.pid;
            panic!(
                "{client:?} not live for {harness}: now {}, stat {:?}, cmdline {:?}, {:?}",
                now(),
                fs::read_to_string(format!("/proc/{pid}/stat")),
                fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|b| String::from_utf8_lossy(&b).into_owned()),
                fs::read_to_string("/proc/stat").map(|s| s
                    .lines()
                    .filter(|l| l.starts_with("btime"))
                    .collect::<String>())
            );
        }
    }

    fn now() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    fn client(pid: i32, started_at: i64) -> ProviderClient {
        ProviderClient {
            pid,
            started_at,
            path: PathBuf::from(format!("{pid}.json")),
        }
    }

    #[test]
    fn a_running_provider_is_live_for_its_own_harness_only() {
        let provider = Provider::spawn("claude");
        let live = provider.client();
        assert_live(&live, "claude");
        assert!(!is_live(&live, "codex"));
        assert!(!is_live(&live, ""));
        assert_eq!(live_clients(std::slice::from_ref(&live), "claude"), [&live]);
    }

    #[test]
    fn a_recycled_pid_is_not_the_client() {
        let provider = Provider::spawn("claude");
        let mut client = provider.client();
        client.started_at -= 60;
        assert!(!is_live(&client, "claude"));
        client.started_at += 120;
        assert!(!is_live(&client, "claude"));
        client.started_at = provider.started_at - 4;
        assert_live(&client, "claude");
    }

    #[test]
    fn a_killed_provider_is_not_live() {
        let mut provider = Provider::spawn("claude");
        let client = provider.client();
        assert_live(&client, "claude");
        // Killed but not reaped: a zombie is not a running provider either.
        provider.child.kill().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while is_live(&client, "claude") {
            assert!(Instant::now() < deadline, "still live after SIGKILL");
            std::thread::yield_now();
        }
        provider.stop();
        assert!(!is_live(&client, "claude"));
    }

    #[test]
    fn pids_that_do_not_run_are_not_live() {
        assert!(!is_live(&client(i32::MAX, now()), "claude"));
        assert!(!is_live(&client(1, now()), "init"));
        assert!(!is_live(&client(-5, now()), "claude"));
    }

    #[test]
    fn harness_names_in_longer_paths_and_names_count() {
        let dashed = Provider::spawn("claude-code");
        assert_live(&dashed.client(), "claude");
        let nested = Provider::spawn("opt/claude/bin/x");
        assert_live(&nested.client(), "claude");
        let unrelated = Provider::spawn("bin/sleep");
        assert!(!is_live(&unrelated.client(), "claude"));
    }

    #[test]
    fn lfs_ps_check_agrees_on_a_real_process() {
        // Without ps every check reads "not live": say that rather than a bare false.
        assert!(
            Command::new("ps").arg("-p1").output().is_ok(),
            "ps must be installed for this test (procps; scripts/deps.sh installs it)"
        );
        let mut provider = Provider::spawn("claude");
        let client = provider.client();
        assert!(ps::is_live(&client, "claude"));
        assert!(!ps::is_live(&client, "codex"));
        let mut shifted = client.clone();
        shifted.started_at -= 60;
        assert!(!ps::is_live(&shifted, "claude"));
        provider.stop();
        assert!(!ps::is_live(&client, "claude"));
    }

    #[test]
    fn ps_elapsed_times() {
        assert_eq!(ps::parse_etime("00:07"), Some(7));
        assert_eq!(ps::parse_etime("12:34"), Some(12 * 60 + 34));
        assert_eq!(ps::parse_etime("01:02:03"), Some(3723));
        assert_eq!(ps::parse_etime("2-01:02:03"), Some(2 * 86400 + 3723));
        assert_eq!(ps::parse_etime("2-02:03"), None);
        assert_eq!(ps::parse_etime("x"), None);
        let now = 1_796_612_844.9;
        assert_eq!(ps::started(7, now), now - 7.0);
        let wrapped = ps::parse_etime("441077234-00:18:40").unwrap();
        assert_eq!(ps::started(wrapped, now), now, "just started");
        assert_eq!(ps::parse_etime(""), None);
    }

    #[test]
    fn command_words_follow_lfs_rule() {
        let matches = |command: &[u8]| command_names_harness(command, "claude");
        assert!(matches(b"claude --resume x"));
        assert!(matches(b"/usr/local/bin/claude\0--resume\0x"));
        assert!(matches(b"node\0/opt/claude/cli.js"));
        assert!(matches(b"claude-code"));
        // ps joins argv with spaces and lf splits on them: an argument holding the
        // harness as a word counts.
        assert!(matches(b"bash\0-c\0exec claude now"));
        assert!(!matches(b"claudex --resume"));
        assert!(!matches(b"codex claude_tools"));
        assert!(!matches(b""));
    }

    fn write_client(dir: &Path, name: &str, text: &str) {
        fs::create_dir_all(dir.join(CLIENTS_DIR)).unwrap();
        fs::write(dir.join(CLIENTS_DIR).join(name), text).unwrap();
    }

    #[test]
    fn client_files_are_read_and_bad_ones_reported() {
        let run = tempfile::tempdir().unwrap();
        assert_eq!(read_clients(run.path()), (vec![], vec![]));
        let dir = run.path();
        write_client(
            dir,
            "48213.json",
            r#"{"schema_version":1,"pid":48213,"terminal_id":"term-1","started_at":"2026-05-01T12:00:03Z"}"#,
        );
        write_client(
            dir,
            "48214.json",
            r#"{"schema_version":1,"pid":48214,"terminal_id":null,"started_at":"2026-05-01T12:00:04.5Z","extra":1}"#,
        );
        write_client(dir, ".48215-0a1b.staging", "{");
        write_client(dir, "notes.txt", "{");
        write_client(dir, "bad-json.json", "{\"pid\":");
        write_client(
            dir,
            "schema.json",
            r#"{"schema_version":2,"pid":7,"started_at":"2026-05-01T12:00:03Z"}"#,
        );
        write_client(
            dir,
            "init.json",
            r#"{"schema_version":1,"pid":1,"started_at":"2026-05-01T12:00:03Z"}"#,
        );
        write_client(
            dir,
            "huge-pid.json",
            r#"{"schema_version":1,"pid":99999999999,"started_at":"2026-05-01T12:00:03Z"}"#,
        );
        let (clients, warnings) = read_clients(dir);
        assert_eq!(
            clients,
            [
                ProviderClient {
                    pid: 48213,
                    started_at: 1_777_636_803,
                    path: dir.join(CLIENTS_DIR).join("48213.json"),
                },
                ProviderClient {
                    pid: 48214,
                    started_at: 1_777_636_804,
                    path: dir.join(CLIENTS_DIR).join("48214.json"),
                },
            ]
        );
        let mut messages: Vec<_> = warnings
            .iter()
            .map(|w| {
                let name = w.path.as_ref().unwrap().file_name().unwrap();
                format!("{}: {}", name.to_str().unwrap(), w.message)
            })
            .collect();
        messages.sort();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(messages[0].starts_with("bad-json.json: Provider client record is not valid JSON"));
        assert_eq!(
            messages[1],
            "huge-pid.json: Provider client pid 99999999999 is not valid"
        );
        assert_eq!(messages[2], "init.json: Provider client pid 1 is not valid");
        assert_eq!(
            messages[3],
            "schema.json: unsupported provider client schema 2; expected 1"
        );
    }
}
