//! lf's Ask records, `human-sessions/<id>.json` (`AskSessionRecord`, generations A, B
//! and B′): one file per `lf ask` question waiting on a person.
//!
//! Decoding is lenient where lf's generations differ (unknown fields are ignored, B's
//! `skill` and `retain_completed` are accepted) and strict where a wrong value would
//! show the user a wrong session: the fields the list shows must have their types, and
//! the id must be the file's.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use crate::event::Warning;
use crate::files::record_file::{decode_record, read_record_file};
use crate::lf::record::{Kind, SessionRecord, State, WorkRef};

/// lf's records are a few KiB even with a long question; a bigger file is not one lf
/// wrote, and is refused without reading it whole.
const ASK_CAP: u64 = 1 << 20;
const WHAT: &str = "Ask record";

/// The Ask id of a file lf would write, `<id>.json`. `None` for dot-files (lf's locks and
/// run bindings), temporaries (`<id>.<uuid>.tmp`), other extensions and names that are
/// not UTF-8.
pub fn ask_id_from_file_name(name: &OsStr) -> Option<&str> {
    let name = name.to_str()?;
    if name.starts_with('.') {
        return None;
    }
    name.strip_suffix(".json").filter(|id| !id.is_empty())
}

/// One Ask as the session list needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskRecord {
    pub id: String,
    pub work: Option<WorkRef>,
    pub title: String,
    pub detail: String,
    pub prompt: String,
    pub cwd: String,
    /// The Run holding the conversation; `None` until lf prepares or starts it.
    pub session_run_id: Option<String>,
    pub ready_summary: Option<String>,
    /// lf marked it complete; the blocked `lf ask` is about to consume it (or, for an
    /// `ask_once` record, keeps it). Completed Asks are never listed.
    pub completed: bool,
}

#[derive(Deserialize)]
struct AskFile {
    id: String,
    work: Option<WorkRef>,
    title: String,
    detail: String,
    prompt: String,
    cwd: String,
    session_run_id: Option<String>,
    ready_summary: Option<String>,
    status: AskStatus,
}

/// `"waiting"` or `{"completed": {"summary": …}}`. The summary is the session's
/// `ready_summary`, which the record already carries.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum AskStatus {
    Waiting,
    Completed {},
}

/// Read one Ask record. `Ok(None)` when the file is gone (it raced with lf deleting or
/// replacing it); a warning naming the file for anything lf could not have written.
pub fn read_ask(path: &Path) -> Result<Option<AskRecord>, Warning> {
    stem(path)?;
    let Some(bytes) = read_record_file(path, WHAT, ASK_CAP)? else {
        return Ok(None);
    };
    decode_ask(path, &bytes).map(Some)
}

/// The record in the bytes read from `path` (`<id>.json`), as [`read_ask`] decodes it.
pub fn decode_ask(path: &Path, bytes: &[u8]) -> Result<AskRecord, Warning> {
    let stem = stem(path)?;
    let file: AskFile = decode_record(path, WHAT, bytes)?;
    if file.id != stem {
        return Err(Warning::new(
            Some(path.to_path_buf()),
            format!("Ask record id {:?} does not match its file name", file.id),
        ));
    }
    Ok(AskRecord {
        id: file.id,
        work: file.work,
        title: file.title,
        detail: file.detail,
        prompt: file.prompt,
        cwd: file.cwd,
        session_run_id: file.session_run_id,
        ready_summary: file.ready_summary,
        completed: matches!(file.status, AskStatus::Completed {}),
    })
}

/// The id a record at `path` must carry; a file of another name is no record.
fn stem(path: &Path) -> Result<&str, Warning> {
    path.file_name()
        .and_then(ask_id_from_file_name)
        .ok_or_else(|| {
            Warning::new(
                Some(path.to_path_buf()),
                "Ask record file names are <id>.json",
            )
        })
}

impl AskRecord {
    /// The session lf lists for this Ask, in the state the caller derived
    /// ([`crate::files::run::native_state`]).
    pub fn session(&self, state: State, open_argv: Vec<String>) -> SessionRecord {
        let mut record = SessionRecord::new(self.id.clone(), Some(Kind::Ask), state);
        record.work = self.work.clone();
        record.title = self.title.clone();
        record.detail = self.detail.clone();
        record.cwd = self.cwd.clone();
        record.ready_summary = self.ready_summary.clone();
        record.open_argv = open_argv.into_iter().map(Arc::from).collect();
        record.prompt = Some(self.prompt.clone());
        record
    }
}

/// An Ask file as generation A writes it, waiting, for the tests of the modules that read
/// Asks among other records.
#[cfg(test)]
pub(crate) fn test_file(id: &str, title: &str) -> serde_json::Value {
    serde_json::json!({
        "id": id,
        "parent_run_id": null,
        "parent_run_dir": null,
        "work": null,
        "work_selector": null,
        "title": title,
        "detail": "Human ask",
        "prompt": "Which one?",
        "cwd": "/src/app",
        "model": "claude:opus",
        "session_run_id": null,
        "ready_summary": null,
        "status": "waiting"
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::record::words;
    use serde_json::{json, Value};
    use std::fs;
    use std::path::PathBuf;

    const ID: &str = "ask_5b1e0c9a2d3f4e6a8b7c9d0e1f2a3b4c";

    /// An Ask as generation A writes it: no `skill`, no `retain_completed`.
    fn generation_a() -> Value {
        json!({
            "id": ID,
            "parent_run_id": "run_0a1b2c3d4e5f60718293a4b5c6d7e8f9",
            "parent_run_dir": "/Users/me/.lf/runs/0a/run_0a1b2c3d4e5f60718293a4b5c6d7e8f9",
            "work": {"kind": "task", "id": "task_11112222333344445555666677778888"},
            "work_selector": "task:task_11112222333344445555666677778888",
            "title": "Which release target should we ship first?",
            "detail": "Human ask",
            "prompt": "Which release target should we ship first?\n(details…)",
            "cwd": "/Users/me/src/app",
            "model": "claude:opus",
            "session_run_id": null,
            "ready_summary": null,
            "status": "waiting"
        })
    }

    struct Dir {
        dir: tempfile::TempDir,
    }

    impl Dir {
        fn new() -> Dir {
            Dir {
                dir: tempfile::tempdir().unwrap(),
            }
        }

        fn path(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }

        fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
            let path = self.path(name);
            fs::write(&path, bytes).unwrap();
            path
        }

        fn record(&self, record: &Value) -> PathBuf {
            self.write(
                &format!("{ID}.json"),
                serde_json::to_vec_pretty(record).unwrap(),
            )
        }

        fn error(&self, name: &str) -> Warning {
            read_ask(&self.path(name)).unwrap_err()
        }
    }

    fn with(mut record: Value, key: &str, value: Value) -> Value {
        record[key] = value;
        record
    }

    #[test]
    fn file_names_lf_would_write() {
        fn id(name: &str) -> Option<&str> {
            ask_id_from_file_name(OsStr::new(name))
        }
        assert_eq!(id("ask_1.json"), Some("ask_1"));
        assert_eq!(id("ask_once_ab.json"), Some("ask_once_ab"));
        assert_eq!(id(".0a1b.launch.lock"), None);
        assert_eq!(id(".run-bind-0a1b"), None);
        assert_eq!(id(".ask_1.json"), None);
        assert_eq!(id("ask_1.0a1b2c.tmp"), None);
        assert_eq!(id("ask_1.json.tmp"), None);
        assert_eq!(id("ask_1.txt"), None);
        assert_eq!(id("ask_1"), None);
        assert_eq!(id(".json"), None);
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            assert_eq!(
                ask_id_from_file_name(OsStr::from_bytes(b"ask_\xff.json")),
                None
            );
        }
    }

    #[test]
    fn a_generation_a_record() {
        let dir = Dir::new();
        let path = dir.record(&generation_a());
        let ask = read_ask(&path).unwrap().unwrap();
        assert_eq!(
            ask,
            AskRecord {
                id: ID.into(),
                work: Some(WorkRef {
                    kind: "task".into(),
                    id: "task_11112222333344445555666677778888".into()
                }),
                title: "Which release target should we ship first?".into(),
                detail: "Human ask".into(),
                prompt: "Which release target should we ship first?\n(details…)".into(),
                cwd: "/Users/me/src/app".into(),
                session_run_id: None,
                ready_summary: None,
                completed: false,
            }
        );

        let argv = vec![
            "/bin/lf".to_string(),
            "session".into(),
            "open".into(),
            ID.into(),
        ];
        let session = ask.session(State::Waiting, argv.clone());
        assert_eq!(session.id, ID);
        assert_eq!(session.kind, Some(Kind::Ask));
        assert_eq!(session.state, State::Waiting);
        assert_eq!(session.title, ask.title);
        assert_eq!(session.detail, "Human ask");
        assert_eq!(session.prompt.as_deref(), Some(ask.prompt.as_str()));
        assert_eq!(session.work, ask.work);
        assert_eq!(words(&session.open_argv), argv);
        assert_eq!(session.actions, None);
        assert_eq!(session.created_at, None);
        // None of lf's other words: only the record's own fields.
        let json = serde_json::to_value(&session).unwrap();
        let own = [
            "id",
            "kind",
            "work",
            "title",
            "detail",
            "cwd",
            "state",
            "ready_summary",
            "open_argv",
            "needs_you",
            "reason",
            "stopped",
            "attached",
            "prompt",
        ];
        assert!(
            json.as_object()
                .unwrap()
                .keys()
                .all(|k| own.contains(&k.as_str())),
            "{json}"
        );
        assert!(crate::lf::reading::needs_you(&session));
    }

    #[test]
    fn b_prime_records_with_skill_retention_and_completion() {
        let dir = Dir::new();
        let mut record = generation_a();
        record["skill"] = json!("loop-decide");
        record["retain_completed"] = json!(true);
        record["work"] = Value::Null;
        record["detail"] = json!("Request for input");
        record["session_run_id"] = json!("run_9f8e7d6c5b4a39281706f5e4d3c2b1a0");
        record["ready_summary"] = json!("Ship macOS first");
        record["status"] = json!({"completed": {"summary": "Ship macOS first"}});
        record["something_newer"] = json!([1, {"x": null}]);
        let ask = read_ask(&dir.record(&record)).unwrap().unwrap();
        assert!(ask.completed);
        assert_eq!(ask.work, None);
        assert_eq!(
            ask.session_run_id.as_deref(),
            Some("run_9f8e7d6c5b4a39281706f5e4d3c2b1a0")
        );
        assert_eq!(ask.ready_summary.as_deref(), Some("Ship macOS first"));
        let session = ask.session(State::Ready, vec![]);
        assert_eq!(session.ready_summary.as_deref(), Some("Ship macOS first"));

        // Skill present but null, retain_completed false, still waiting.
        let record = with(
            with(generation_a(), "skill", Value::Null),
            "retain_completed",
            json!(false),
        );
        assert!(!read_ask(&dir.record(&record)).unwrap().unwrap().completed);
    }

    #[test]
    fn gone_files_are_not_errors() {
        let dir = Dir::new();
        assert_eq!(read_ask(&dir.path(&format!("{ID}.json"))), Ok(None));
        assert_eq!(read_ask(&dir.path("missing/ask_1.json")), Ok(None));
    }

    #[test]
    fn broken_records_name_the_problem_and_the_file() {
        let dir = Dir::new();
        let name = format!("{ID}.json");
        let full = serde_json::to_string_pretty(&generation_a()).unwrap();

        dir.write(&name, "{\n  \"id\": \"ask_1\",\n");
        let warning = dir.error(&name);
        assert_eq!(warning.path, Some(dir.path(&name)));
        assert_eq!(
            warning.message,
            "Ask record is not valid JSON: EOF while parsing a value at line 3 column 0"
        );

        dir.write(&name, &full[..full.len() / 2]);
        assert!(dir
            .error(&name)
            .message
            .starts_with("Ask record is not valid JSON: EOF while parsing"));

        dir.write(&name, "{\"id\": nope}");
        assert_eq!(
            dir.error(&name).message,
            "Ask record is not valid JSON: expected ident at line 1 column 9"
        );

        dir.write(&name, "");
        assert_eq!(dir.error(&name).message, "Ask record is empty");
        dir.write(&name, " \n");
        assert_eq!(dir.error(&name).message, "Ask record is empty");

        dir.record(&with(generation_a(), "title", json!(5)));
        assert_eq!(
            dir.error(&name).message,
            "Ask record does not have the fields lf writes: invalid type: integer `5`, expected a string at line 12 column 12"
        );
        dir.record(&with(generation_a(), "status", json!("cancelled")));
        assert!(dir
            .error(&name)
            .message
            .contains("unknown variant `cancelled`, expected `waiting` or `completed`"));
        let mut no_prompt = generation_a();
        no_prompt.as_object_mut().unwrap().remove("prompt");
        dir.record(&no_prompt);
        assert!(dir.error(&name).message.contains("missing field `prompt`"));
        dir.record(&with(generation_a(), "work", json!("task:x")));
        assert!(dir.error(&name).message.contains("invalid type"));

        dir.record(&with(generation_a(), "id", json!("ask_other")));
        assert_eq!(
            dir.error(&name).message,
            "Ask record id \"ask_other\" does not match its file name"
        );
    }

    #[test]
    fn huge_records_are_refused() {
        let dir = Dir::new();
        let mut record = generation_a();
        record["prompt"] = json!("x".repeat(ASK_CAP as usize));
        dir.record(&record);
        let name = format!("{ID}.json");
        assert_eq!(dir.error(&name).message, "Ask record is larger than 1 MiB");
        // Sparse and enormous: refused without being read.
        fs::File::create(dir.path(&name))
            .unwrap()
            .set_len(16 << 30)
            .unwrap();
        assert_eq!(dir.error(&name).message, "Ask record is larger than 1 MiB");
        // Just under the cap is read.
        let mut record = generation_a();
        record["prompt"] = json!("x".repeat(ASK_CAP as usize - 1024));
        assert!(read_ask(&dir.record(&record)).unwrap().is_some());
    }

    #[test]
    fn files_that_are_not_records_are_refused() {
        let dir = Dir::new();
        fs::create_dir(dir.path("x.json")).unwrap();
        assert_eq!(
            dir.error("x.json").message,
            "Ask record is not a regular file (it is a directory)"
        );

        dir.write("tmp.0a1b.tmp", "{}");
        assert_eq!(
            dir.error("tmp.0a1b.tmp").message,
            "Ask record file names are <id>.json"
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_fifos_and_odd_names_do_not_hang_or_crash() {
        use std::os::unix::ffi::OsStrExt;
        let dir = Dir::new();
        std::os::unix::fs::symlink(dir.path("b.json"), dir.path("a.json")).unwrap();
        std::os::unix::fs::symlink(dir.path("a.json"), dir.path("b.json")).unwrap();
        let warning = dir.error("a.json");
        assert!(
            warning.message.starts_with("Ask record cannot be read: ")
                && warning.message.contains("symbolic links"),
            "{warning}"
        );

        // A named pipe would block a plain open until a writer came along.
        let fifo = dir.path("pipe.json");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert_eq!(
            dir.error("pipe.json").message,
            "Ask record is not a regular file (it is a named pipe)"
        );

        // A symlink to a good record is read, as lf reads it.
        let elsewhere = Dir::new();
        let link = dir.path(&format!("{ID}.json"));
        std::os::unix::fs::symlink(elsewhere.record(&generation_a()), &link).unwrap();
        assert_eq!(read_ask(&link).unwrap().unwrap().id, ID);

        let odd = dir.dir.path().join(OsStr::from_bytes(b"ask_\xff.json"));
        fs::write(&odd, "{}").unwrap();
        assert_eq!(
            read_ask(&odd).unwrap_err().message,
            "Ask record file names are <id>.json"
        );
    }

    #[cfg(unix)]
    #[test]
    fn unreadable_records_warn() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Root reads every file, so the warning is checked where it matters, in an
            // account without rights: this very test, run again as `nobody`.
            return unprivileged("files::ask::tests::unreadable_records_warn");
        }
        let dir = Dir::new();
        let path = dir.record(&generation_a());
        fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
        let warning = read_ask(&path).unwrap_err();
        assert!(
            warning
                .message
                .starts_with("Ask record cannot be read: Permission denied"),
            "{warning}"
        );
    }

    /// Run one test of this binary as `nobody`, from a copy that account can execute, and
    /// fail with its output if it fails.
    fn unprivileged(test: &str) {
        use std::os::unix::fs::PermissionsExt;
        let place = tempfile::tempdir().unwrap();
        fs::set_permissions(place.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let copy = place.path().join("tests");
        fs::copy(std::env::current_exe().unwrap(), &copy).unwrap();
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&copy)
            .args(["--exact", test, "--test-threads=1"])
            .env("TMPDIR", "/tmp")
            .output()
            .expect("setpriv (util-linux) runs the test as nobody");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "as nobody: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
