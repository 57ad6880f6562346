//! lf's Run records, `runs/<pp>/<run_id>/`, read the way lf's interactive-session scan
//! and `native_session_state` read them (generations A, B and B′).
//!
//! Reading is synchronous and never watches: the engine calls [`read_run`] for a Run
//! directory whose files changed. A 10 000-Run home is read at cold start, so a Run that
//! is not interactive costs one manifest read and one `stat`, and the files that only
//! matter for a listed session (its title) are read only for listed sessions.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use time::OffsetDateTime;

use crate::event::Warning;
use crate::files::liveness::{self, ProviderClient, CLIENTS_DIR};
use crate::files::record_file::{decode_record, open_record_file, read_record_file};
use crate::lf::record::{Kind, SessionRecord, State, WorkRef};

/// lf's manifests are a few KiB; anything near this is not a manifest lf wrote, and
/// reading it whole on every file event would stall the engine.
const MANIFEST_CAP: u64 = 1 << 20;
/// `provider-session.json`, `session-resolution.json` and `session-name.json` hold one
/// id, a timestamp or a name: a few hundred bytes.
const SMALL_RECORD_CAP: u64 = 64 << 10;
/// `context.json` carries the whole prepared prompt, which can be large; only its first
/// line is wanted, and a title is not worth reading more than this.
const CONTEXT_CAP: u64 = 4 << 20;
/// lf cuts titles at 80 characters (`concise_title`).
const TITLE_CHARS: usize = 80;

/// The parts of `manifest.json` (`RunManifest`) a session list needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub run_id: String,
    pub parent_run_id: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    pub harness: String,
    pub model: Option<String>,
    pub surface: String,
    pub cwd: String,
    pub skill: Option<String>,
    /// The subject selectors, in lf's order: `task:<id>`, `project:<id>`, `wave:<id>`.
    pub subjects: Vec<String>,
}

#[derive(Deserialize)]
struct ManifestFile {
    schema_version: u32,
    run_id: String,
    parent_run_id: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
    harness: String,
    model: Option<String>,
    surface: String,
    cwd: String,
    skill: Option<String>,
    #[serde(default)]
    subjects: Vec<SubjectFile>,
}

#[derive(Deserialize)]
struct SubjectFile {
    selector: String,
}

/// Only the schema, to name it when a manifest of another schema has another shape too.
#[derive(Deserialize)]
struct SchemaProbe {
    schema_version: u64,
}

/// Read `<dir>/manifest.json` and check it belongs where it is, as lf's
/// `read_manifest` + `validate_manifest_path` do. `Ok(None)` when the manifest or the
/// directory is gone (a Run being staged or removed raced with the read).
pub fn read_manifest(dir: &Path) -> Result<Option<Manifest>, Warning> {
    const WHAT: &str = "Run manifest";
    let path = dir.join("manifest.json");
    let Some(bytes) = read_record_file(&path, WHAT, MANIFEST_CAP)? else {
        return Ok(None);
    };
    let unsupported = |schema: u64| {
        Warning::new(
            Some(path.clone()),
            format!("unsupported Run manifest schema {schema}; expected 1"),
        )
    };
    let file: ManifestFile = decode_record(&path, WHAT, &bytes).map_err(|warning| {
        match serde_json::from_slice::<SchemaProbe>(&bytes) {
            Ok(probe) if probe.schema_version != 1 => unsupported(probe.schema_version),
            _ => warning,
        }
    })?;
    if file.schema_version != 1 {
        return Err(unsupported(file.schema_version.into()));
    }
    let dir_name = dir.file_name().and_then(OsStr::to_str);
    if dir_name != Some(file.run_id.as_str()) {
        return Err(Warning::new(
            Some(path),
            format!(
                "Run manifest names run {:?} but lives in directory {:?}",
                file.run_id,
                dir_name.unwrap_or_default()
            ),
        ));
    }
    let shard = dir
        .parent()
        .and_then(Path::file_name)
        .and_then(OsStr::to_str);
    let expected = file.run_id.get(4..6);
    if expected.is_none() || shard != expected {
        return Err(Warning::new(
            Some(path),
            format!(
                "Run {} is filed under {:?}; lf files it under {:?}",
                file.run_id,
                shard.unwrap_or_default(),
                expected.unwrap_or_default()
            ),
        ));
    }
    Ok(Some(Manifest {
        run_id: file.run_id,
        parent_run_id: file.parent_run_id,
        created_at: file.created_at.unix_timestamp(),
        harness: file.harness,
        model: file.model,
        surface: file.surface,
        cwd: file.cwd,
        skill: file.skill,
        subjects: file.subjects.into_iter().map(|s| s.selector).collect(),
    }))
}

/// One Run directory as the session list sees it.
///
/// Only the manifest and the `provider-clients/` directory are looked at for a Run that
/// is not [`interactive`](Run::interactive): lf neither lists such a Run nor attaches a
/// person to it (Ask and Flow sessions always run in `tui` Runs), so for it `resolved`
/// and `provider_session` are `false` and `clients` is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub has_clients_dir: bool,
    /// `session-resolution.json` exists (valid or not: lf skips the Run either way).
    pub resolved: bool,
    /// A valid `provider-session.json`, or a `provider_session_observed` event.
    pub provider_session: bool,
    /// lf's title when the Run is [`listed`](Run::listed); otherwise the skill-or-harness
    /// fallback, without reading the context files (use [`read_title`] to read them).
    pub title: String,
    pub clients: Vec<ProviderClient>,
}

/// Read everything about one Run directory that the session list needs. `None` when the
/// manifest is missing or invalid (an invalid one comes with its warning). A bad
/// provider-client, resolution or provider-session file becomes a warning and the Run
/// is returned as lf would treat it.
pub fn read_run(dir: &Path) -> (Option<Run>, Vec<Warning>) {
    let manifest = match read_manifest(dir) {
        Ok(Some(manifest)) => manifest,
        Ok(None) => return (None, Vec::new()),
        Err(warning) => return (None, vec![warning]),
    };
    let mut warnings = Vec::new();
    let has_clients_dir = dir.join(CLIENTS_DIR).is_dir();
    let mut run = Run {
        dir: dir.to_path_buf(),
        has_clients_dir,
        resolved: false,
        provider_session: false,
        title: String::new(),
        clients: Vec::new(),
        manifest,
    };
    if run.interactive() {
        run.resolved = read_resolution(dir, &mut warnings);
        run.provider_session = read_provider_session(dir, &mut warnings);
        if has_clients_dir {
            let (clients, client_warnings) = liveness::read_clients(dir);
            run.clients = clients;
            warnings.extend(client_warnings);
        }
    }
    run.title = if run.listed() {
        let (title, warning) = read_title(dir, &run.manifest);
        warnings.extend(warning);
        title
    } else {
        fallback_title(&run.manifest)
    };
    (Some(run), warnings)
}

impl Run {
    /// lf's "interactive history": a `tui` Run, or (B/B′) one that was once opened in a
    /// terminal, which the `provider-clients/` directory outliving its clients records.
    pub fn interactive(&self) -> bool {
        self.manifest.surface == "tui" || self.has_clients_dir
    }

    /// Listed as an interactive session: interactive, not resolved, and with provider
    /// history to resume.
    pub fn listed(&self) -> bool {
        self.interactive() && !self.resolved && self.provider_session
    }

    /// lf's `attributed_work`: the first `task:` subject, else the first `project:`,
    /// else the first `wave:`, each only if its id parses as lf's durable id.
    pub fn work(&self) -> Option<WorkRef> {
        let first = |prefix: &str| {
            self.manifest
                .subjects
                .iter()
                .find_map(|selector| selector.strip_prefix(prefix))
        };
        let task = || first("task:").and_then(|id| durable_id(id, "task_"));
        let project = || first("project:").and_then(|id| durable_id(id, "proj_"));
        let wave = || first("wave:").and_then(hyphenated_uuid);
        task()
            .map(|id| ("task", id))
            .or_else(|| project().map(|id| ("project", id)))
            .or_else(|| wave().map(|id| ("wave", id)))
            .map(|(kind, id)| WorkRef {
                kind: kind.to_string(),
                id,
            })
    }

    /// `harness` or `harness:model`, lf's detail line for an interactive session.
    pub fn detail(&self) -> String {
        match &self.manifest.model {
            Some(model) => format!("{}:{model}", self.manifest.harness),
            None => self.manifest.harness.clone(),
        }
    }

    /// The interactive session lf lists for this Run: active while a client is live,
    /// closed otherwise.
    pub fn session(&self, live: bool, open_argv: Vec<String>) -> SessionRecord {
        let mut record = SessionRecord::new(
            self.manifest.run_id.clone(),
            Some(Kind::Interactive),
            if live { State::Active } else { State::Closed },
        );
        record.work = self.work();
        record.title = self.title.clone();
        record.detail = self.detail();
        record.cwd = self.manifest.cwd.clone();
        record.open_argv = open_argv.into_iter().map(Arc::from).collect();
        record.created_at = Some(self.manifest.created_at);
        record
    }
}

/// lf's `native_session_state` for an Ask or a local Flow session, given its session
/// Run (if the Run directory was found) and whether one of the Run's clients is live.
pub fn native_state(ready_summary: Option<&str>, run: Option<&Run>, live: bool) -> State {
    match run {
        _ if ready_summary.is_some() => State::Ready,
        None => State::Waiting,
        Some(_) if live => State::Active,
        Some(run) if run.provider_session => State::Closed,
        Some(_) => State::Waiting,
    }
}

/// A Run's title as lf shows it: the B′ `session-name.json` name when there is one,
/// else the first line of the Run's prompt from `context.json` (gen A's rule), else the
/// skill, else the harness. The warning is for a `session-name.json` that cannot be read.
pub fn read_title(dir: &Path, manifest: &Manifest) -> (String, Option<Warning>) {
    let (name, warning) = match session_name(dir) {
        Ok(name) => (name, None),
        Err(warning) => (None, Some(warning)),
    };
    let title = name
        .or_else(|| context_title(dir))
        .unwrap_or_else(|| fallback_title(manifest));
    (title, warning)
}

fn fallback_title(manifest: &Manifest) -> String {
    manifest
        .skill
        .clone()
        .filter(|skill| !skill.is_empty())
        .unwrap_or_else(|| manifest.harness.clone())
}

fn session_name(dir: &Path) -> Result<Option<String>, Warning> {
    #[derive(Deserialize)]
    struct NameFile {
        title: String,
    }
    const WHAT: &str = "Session name";
    let path = dir.join("session-name.json");
    let Some(bytes) = read_record_file(&path, WHAT, SMALL_RECORD_CAP)? else {
        return Ok(None);
    };
    let file: NameFile = decode_record(&path, WHAT, &bytes)?;
    let title = file.title.trim();
    Ok((!title.is_empty()).then(|| title.to_string()))
}

/// Gen A's `session_title`: the last `user_message` asset of the task text, or the whole
/// task text, reduced to one bounded line. Any problem with the file means no title from
/// it, as in lf.
fn context_title(dir: &Path) -> Option<String> {
    let path = dir.join("context.json");
    let bytes = read_record_file(&path, "Run context", CONTEXT_CAP).ok()??;
    let context: Value = serde_json::from_slice(&bytes).ok()?;
    let task = context.pointer("/context/task")?;
    let text = task.get("text").and_then(Value::as_str);
    let user_message = task
        .get("assets")
        .and_then(Value::as_array)
        .and_then(|assets| {
            assets
                .iter()
                .rev()
                .find(|asset| asset.get("kind").and_then(Value::as_str) == Some("user_message"))
        })
        .and_then(|asset| {
            let offset = |key| usize::try_from(asset.get(key)?.as_u64()?).ok();
            // `get` refuses ranges that are out of bounds or split a character.
            text?.get(offset("byte_start")?..offset("byte_end")?)
        });
    concise_title(user_message.or(text)?)
}

/// lf's `concise_title`: the first non-blank line, trimmed, cut at 80 characters with
/// `…` when longer.
pub(crate) fn concise_title(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => Some(format!("{}…", line[..cut].trim_end())),
        None => Some(line.to_string()),
    }
}

/// `session-resolution.json` exists. A file that exists but is not lf's resolution
/// still resolves the Run, as lf skips it too, with a warning.
fn read_resolution(dir: &Path, warnings: &mut Vec<Warning>) -> bool {
    #[derive(Deserialize)]
    struct ResolutionFile {
        schema_version: u32,
        #[serde(with = "time::serde::rfc3339", rename = "resolved_at")]
        _resolved_at: OffsetDateTime,
    }
    const WHAT: &str = "Session resolution";
    let path = dir.join("session-resolution.json");
    let problem = match read_record_file(&path, WHAT, SMALL_RECORD_CAP) {
        Ok(None) => return false,
        Ok(Some(bytes)) => match decode_record::<ResolutionFile>(&path, WHAT, &bytes) {
            Ok(file) if file.schema_version == 1 => return true,
            Ok(file) => Warning::new(
                Some(path),
                format!(
                    "unsupported session resolution schema {}; expected 1",
                    file.schema_version
                ),
            ),
            Err(warning) => warning,
        },
        Err(warning) => warning,
    };
    warnings.push(Warning {
        message: format!("{}; the session counts as resolved", problem.message),
        ..problem
    });
    true
}

/// lf's `read_provider_session`: a valid `provider-session.json`, else a
/// `provider_session_observed` event in `events.jsonl`.
fn read_provider_session(dir: &Path, warnings: &mut Vec<Warning>) -> bool {
    #[derive(Deserialize)]
    struct ProviderSessionFile {
        schema_version: u32,
        provider_session_id: String,
    }
    const WHAT: &str = "Provider session reference";
    let path = dir.join("provider-session.json");
    let found = match read_record_file(&path, WHAT, SMALL_RECORD_CAP) {
        Ok(None) => false,
        Ok(Some(bytes)) => match decode_record::<ProviderSessionFile>(&path, WHAT, &bytes) {
            Ok(file) if file.schema_version == 1 && !file.provider_session_id.is_empty() => true,
            Ok(_) => {
                warnings.push(Warning::new(
                    Some(path),
                    "invalid provider session reference: lf expects schema_version 1 and a provider_session_id",
                ));
                false
            }
            Err(warning) => {
                warnings.push(warning);
                false
            }
        },
        Err(warning) => {
            warnings.push(warning);
            false
        }
    };
    found || observed_provider_session(dir, warnings)
}

/// Whether `events.jsonl` records a provider session. Read as a stream, one reused line
/// buffer, and only lines that mention the event are decoded: the log of a long Run is
/// large and this runs on every change to it.
fn observed_provider_session(dir: &Path, warnings: &mut Vec<Warning>) -> bool {
    const EVENT: &[u8] = b"provider_session_observed";
    #[derive(Deserialize)]
    struct Envelope {
        #[serde(rename = "type")]
        kind: String,
        provider_session_id: Option<String>,
    }
    let path = dir.join("events.jsonl");
    let file = match open_record_file(&path, "Run event log") {
        Ok(Some((file, _))) => file,
        Ok(None) => return false,
        Err(warning) => {
            warnings.push(warning);
            return false;
        }
    };
    let mut reader = BufReader::with_capacity(64 << 10, file);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(error) => {
                warnings.push(Warning::new(
                    Some(path),
                    format!("Run event log cannot be read: {error}"),
                ));
                return false;
            }
        }
        if !line.windows(EVENT.len()).any(|window| window == EVENT) {
            continue;
        }
        // A line still being appended fails to decode and is simply not an observation.
        if let Ok(envelope) = serde_json::from_slice::<Envelope>(&line) {
            if envelope.kind == "provider_session_observed"
                && envelope
                    .provider_session_id
                    .is_some_and(|id| !id.is_empty())
            {
                return true;
            }
        }
    }
}

/// `<prefix><uuid>` as lf's durable ids parse, normalised to lf's `<prefix><32 hex>`.
fn durable_id(id: &str, prefix: &str) -> Option<String> {
    let digits = uuid_digits(id.strip_prefix(prefix)?)?;
    Some(format!("{prefix}{digits}"))
}

/// A wave id: a UUID, shown hyphenated as lf prints `WaveId`.
fn hyphenated_uuid(id: &str) -> Option<String> {
    let d = uuid_digits(id)?;
    Some(format!(
        "{}-{}-{}-{}-{}",
        &d[..8],
        &d[8..12],
        &d[12..16],
        &d[16..20],
        &d[20..]
    ))
}

/// The 32 lowercase hex digits of a UUID written in one of the forms the `uuid` crate
/// parses: simple, hyphenated, braced or URN.
fn uuid_digits(text: &str) -> Option<String> {
    let text = text.strip_prefix("urn:uuid:").unwrap_or(text);
    let text = text
        .strip_prefix('{')
        .and_then(|inner| inner.strip_suffix('}'))
        .unwrap_or(text);
    let hyphens_at = |positions: &[usize]| positions.iter().all(|&i| text.as_bytes()[i] == b'-');
    let digits: String = match text.len() {
        32 => text.to_string(),
        36 if hyphens_at(&[8, 13, 18, 23]) => text.chars().filter(|&c| c != '-').collect(),
        _ => return None,
    };
    (digits.len() == 32 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| digits.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lf::record::words;
    use serde_json::json;
    use std::fs;

    const RUN: &str = "run_0f3a9c2e7b5d4e1f8a6b0c9d2e4f6a8b";
    const TASK: &str = "task_11112222333344445555666677778888";
    const PROJECT: &str = "proj_aaaabbbbccccddddeeeeffff00001111";
    const WAVE: &str = "6f1c2d3e-4a5b-4c6d-8e7f-90a1b2c3d4e5";

    /// A home with one Run directory, filed where lf files it.
    struct Home {
        _root: tempfile::TempDir,
        dir: PathBuf,
    }

    impl Home {
        fn new() -> Home {
            Home::at_shard(&RUN[4..6])
        }

        fn at_shard(shard: &str) -> Home {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("runs").join(shard).join(RUN);
            fs::create_dir_all(&dir).unwrap();
            Home { _root: root, dir }
        }

        fn write(&self, name: &str, text: &str) -> &Home {
            let path = self.dir.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
            self
        }

        fn manifest(&self, edit: impl FnOnce(&mut Value)) -> &Home {
            let mut manifest = json!({
                "schema_version": 1,
                "run_id": RUN,
                "parent_run_id": null,
                "created_at": "2026-05-01T12:00:00.123456Z",
                "harness": "claude",
                "model": "opus",
                "surface": "tui",
                "cwd": "/Users/me/src/app",
                "repo": null,
                "worktree": "/Users/me/src/app",
                "skill": null,
                "subjects": [],
                "launch": null,
                "context": null,
                "host": "my-mac",
                "boot_id": null,
                "flow": {"kind": "independent"}
            });
            edit(&mut manifest);
            self.write("manifest.json", &manifest.to_string())
        }

        fn provider_session(&self) -> &Home {
            self.write(
                "provider-session.json",
                r#"{"schema_version":1,"provider_session_id":"abc","account_id":null}"#,
            )
        }

        fn run(&self) -> (Run, Vec<Warning>) {
            let (run, warnings) = read_run(&self.dir);
            (run.expect("a run"), warnings)
        }

        fn manifest_error(&self) -> String {
            read_manifest(&self.dir).unwrap_err().message
        }
    }

    fn set(key: &'static str, value: Value) -> impl FnOnce(&mut Value) {
        move |manifest| manifest[key] = value
    }

    #[test]
    fn a_b_prime_manifest_reads_with_unix_time_and_selectors() {
        let home = Home::new();
        home.manifest(|m| {
            m["parent_run_id"] = json!("run_0a1b2c3d4e5f60718293a4b5c6d7e8f9");
            m["skill"] = json!("review");
            m["subjects"] = json!([{"selector": format!("task:{TASK}"), "source": "declared"}]);
            m["future_field"] = json!({"anything": [1, 2]});
        });
        let manifest = read_manifest(&home.dir).unwrap().unwrap();
        assert_eq!(manifest.run_id, RUN);
        assert_eq!(
            manifest.parent_run_id.as_deref(),
            Some("run_0a1b2c3d4e5f60718293a4b5c6d7e8f9")
        );
        assert_eq!(manifest.created_at, 1_777_636_800);
        assert_eq!(manifest.harness, "claude");
        assert_eq!(manifest.model.as_deref(), Some("opus"));
        assert_eq!(manifest.skill.as_deref(), Some("review"));
        assert_eq!(manifest.subjects, [format!("task:{TASK}")]);
    }

    #[test]
    fn missing_manifests_and_dirs_are_not_errors() {
        let home = Home::new();
        assert_eq!(read_manifest(&home.dir), Ok(None));
        assert_eq!(read_manifest(&home.dir.join("gone")), Ok(None));
        let (run, warnings) = read_run(&home.dir.join("gone"));
        assert!(run.is_none() && warnings.is_empty());
        // A plain file where a Run directory belongs is not a Run either.
        home.write("not-a-dir", "");
        assert_eq!(read_manifest(&home.dir.join("not-a-dir")), Ok(None));
    }

    #[test]
    fn manifests_of_another_schema_or_place_are_refused() {
        let home = Home::new();
        home.manifest(set("schema_version", json!(2)));
        assert_eq!(
            home.manifest_error(),
            "unsupported Run manifest schema 2; expected 1"
        );
        // A new schema with a new shape still names its schema.
        home.write("manifest.json", r#"{"schema_version": 3, "id": 7}"#);
        assert_eq!(
            home.manifest_error(),
            "unsupported Run manifest schema 3; expected 1"
        );

        home.manifest(set("run_id", json!("run_0f000000000000000000000000000000")));
        assert!(
            home.manifest_error().contains("but lives in directory"),
            "{}",
            home.manifest_error()
        );

        let misfiled = Home::at_shard("aa");
        misfiled.manifest(|_| {});
        assert_eq!(
            misfiled.manifest_error(),
            format!("Run {RUN} is filed under \"aa\"; lf files it under \"0f\"")
        );
        let (run, warnings) = read_run(&misfiled.dir);
        assert!(run.is_none());
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            warnings[0].path.as_deref(),
            Some(misfiled.dir.join("manifest.json").as_path())
        );
    }

    #[test]
    fn broken_manifests_say_what_is_wrong() {
        let home = Home::new();
        home.write("manifest.json", "{\"schema_version\": 1,\n\"run_id\":");
        assert!(home
            .manifest_error()
            .starts_with("Run manifest is not valid JSON: EOF while parsing"));
        home.manifest(set("created_at", json!("yesterday")));
        assert!(home
            .manifest_error()
            .starts_with("Run manifest does not have the fields lf writes:"));
        home.write("manifest.json", "");
        assert_eq!(home.manifest_error(), "Run manifest is empty");
        fs::remove_file(home.dir.join("manifest.json")).unwrap();
        fs::create_dir(home.dir.join("manifest.json")).unwrap();
        assert_eq!(
            home.manifest_error(),
            "Run manifest is not a regular file (it is a directory)"
        );
    }

    #[test]
    fn interactive_means_tui_or_a_provider_clients_dir() {
        let home = Home::new();
        home.manifest(set("surface", json!("headless")))
            .provider_session();
        let (run, _) = home.run();
        assert!(!run.interactive());
        assert!(!run.listed());
        // Not interactive: nothing beyond the manifest is looked at.
        assert!(!run.provider_session);

        // B/B′: the directory outlives its last client and marks the Run interactive.
        fs::create_dir(home.dir.join(CLIENTS_DIR)).unwrap();
        let (run, warnings) = home.run();
        assert!(run.has_clients_dir && run.interactive() && run.listed());
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn listed_needs_a_provider_session_and_no_resolution() {
        let home = Home::new();
        home.manifest(|_| {});
        let (run, warnings) = home.run();
        assert!(run.interactive() && !run.provider_session && !run.listed());
        assert!(warnings.is_empty());

        home.provider_session();
        let (run, _) = home.run();
        assert!(run.provider_session && run.listed());

        home.write(
            "session-resolution.json",
            r#"{"schema_version":1,"resolved_at":"2026-05-01T13:00:00Z"}"#,
        );
        let (run, warnings) = home.run();
        assert!(run.resolved && !run.listed());
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn an_invalid_resolution_still_resolves_with_a_warning() {
        let home = Home::new();
        home.manifest(|_| {})
            .provider_session()
            .write("session-resolution.json", "{\"schema_version\":");
        let (run, warnings) = home.run();
        assert!(run.resolved && !run.listed());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0]
            .message
            .starts_with("Session resolution is not valid JSON"));
        assert!(warnings[0]
            .message
            .ends_with("; the session counts as resolved"));

        home.write(
            "session-resolution.json",
            r#"{"schema_version":2,"resolved_at":"2026-05-01T13:00:00Z"}"#,
        );
        let (run, warnings) = home.run();
        assert!(run.resolved);
        assert_eq!(
            warnings[0].message,
            "unsupported session resolution schema 2; expected 1; the session counts as resolved"
        );
    }

    #[test]
    fn provider_sessions_are_observed_in_the_event_log() {
        let home = Home::new();
        home.manifest(|_| {}).write(
            "events.jsonl",
            concat!(
                r#"{"schema_version":1,"seq":1,"type":"provider_attempt_started"}"#,
                "\n",
                r#"{"schema_version":1,"seq":2,"type":"text","text":"provider_session_observed is just words here"}"#,
                "\n",
            ),
        );
        let (run, _) = home.run();
        assert!(!run.provider_session);

        // A line still being written does not count; a complete one does.
        let log = home.dir.join("events.jsonl");
        let mut text = fs::read_to_string(&log).unwrap();
        fs::write(
            &log,
            format!("{text}{{\"type\":\"provider_session_observed\",\"provider_"),
        )
        .unwrap();
        assert!(!home.run().0.provider_session);
        text.push_str(r#"{"schema_version":1,"seq":3,"observed_at":"2026-05-01T12:00:01Z","type":"provider_session_observed","provider_session_id":"s-1"}"#);
        fs::write(&log, text).unwrap();
        let (run, warnings) = home.run();
        assert!(run.provider_session && run.listed());
        assert!(warnings.is_empty());
    }

    #[test]
    fn an_invalid_provider_session_file_warns_and_falls_back_to_events() {
        let home = Home::new();
        home.manifest(|_| {}).write(
            "provider-session.json",
            r#"{"schema_version":1,"provider_session_id":""}"#,
        );
        let (run, warnings) = home.run();
        assert!(!run.provider_session);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0]
            .message
            .starts_with("invalid provider session reference"));

        home.write("provider-session.json", "not json").write(
            "events.jsonl",
            r#"{"type":"provider_session_observed","provider_session_id":"s-2"}"#,
        );
        let (run, warnings) = home.run();
        assert!(run.provider_session);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0]
            .message
            .starts_with("Provider session reference is not valid JSON"));
    }

    #[test]
    fn bad_client_files_warn_but_keep_the_run_and_its_good_clients() {
        let home = Home::new();
        home.manifest(|_| {})
            .provider_session()
            .write("provider-clients/4242.json", "{")
            .write(
                "provider-clients/4343.json",
                r#"{"schema_version":1,"pid":4343,"terminal_id":"t-1","started_at":"2026-05-01T12:00:03Z"}"#,
            );
        let (run, warnings) = home.run();
        assert!(run.listed());
        assert_eq!(run.clients.len(), 1);
        assert_eq!(run.clients[0].pid, 4343);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].path.as_ref().unwrap().ends_with("4242.json"));
    }

    fn context(text: &str, assets: Value) -> String {
        json!({"schema_version": 1, "context": {"task": {"text": text, "assets": assets}}})
            .to_string()
    }

    fn listed_title(home: &Home) -> String {
        let (run, warnings) = home.run();
        assert!(run.listed() && warnings.is_empty(), "{warnings:?}");
        run.title
    }

    #[test]
    fn titles_come_from_the_last_user_message_of_the_context() {
        let home = Home::new();
        home.manifest(set("skill", json!("implement")))
            .provider_session();
        let text = "system preamble\n\n  \n  Fix session restore  \nand more detail";
        let start = text.find("\n\n").unwrap();
        home.write(
            "context.json",
            &context(
                text,
                json!([
                    {"kind": "user_message", "byte_start": 0, "byte_end": 6},
                    {"kind": "file", "byte_start": 0, "byte_end": 3},
                    {"kind": "user_message", "byte_start": start, "byte_end": text.len()},
                ]),
            ),
        );
        assert_eq!(listed_title(&home), "Fix session restore");

        // Without a user message the task text's first line is the title.
        home.write("context.json", &context(text, json!([])));
        assert_eq!(listed_title(&home), "system preamble");
    }

    #[test]
    fn titles_are_cut_at_80_characters_on_character_boundaries() {
        let home = Home::new();
        home.manifest(|_| {}).provider_session();
        let long = "é".repeat(100);
        home.write("context.json", &context(&long, json!([])));
        assert_eq!(listed_title(&home), format!("{}…", "é".repeat(80)));

        home.write("context.json", &context(&"é".repeat(80), json!([])));
        assert_eq!(listed_title(&home), "é".repeat(80));

        // A cut word keeps no trailing blank before the ellipsis.
        let spaced = format!("{} tail", "x".repeat(79));
        home.write("context.json", &context(&spaced, json!([])));
        assert_eq!(listed_title(&home), format!("{}…", "x".repeat(79)));

        // An asset range that splits a character is ignored; the text is used instead.
        home.write(
            "context.json",
            &context(
                "héllo",
                json!([{"kind": "user_message", "byte_start": 2, "byte_end": 5}]),
            ),
        );
        assert_eq!(listed_title(&home), "héllo");
    }

    #[test]
    fn a_session_name_wins_and_fallbacks_are_skill_then_harness() {
        let home = Home::new();
        home.manifest(set("skill", json!("implement")))
            .provider_session()
            .write("context.json", &context("From the context", json!([])));
        assert_eq!(listed_title(&home), "From the context");

        home.write(
            "session-name.json",
            r#"{"title":"  Release plan ","source":"human"}"#,
        );
        assert_eq!(listed_title(&home), "Release plan");

        home.write("session-name.json", r#"{"title":"","source":"generated"}"#);
        assert_eq!(listed_title(&home), "From the context");

        home.write("context.json", "{broken");
        assert_eq!(listed_title(&home), "implement");

        home.manifest(|_| {});
        assert_eq!(listed_title(&home), "claude");

        home.write("session-name.json", r#"{"name": 3}"#);
        let (run, warnings) = home.run();
        assert_eq!(run.title, "claude");
        assert!(warnings[0]
            .message
            .starts_with("Session name does not have"));
    }

    #[test]
    fn oversized_contexts_are_not_read_for_a_title() {
        let home = Home::new();
        home.manifest(|_| {}).provider_session();
        let mut text = "Big prompt\n".to_string();
        text.push_str(&"x".repeat(CONTEXT_CAP as usize));
        home.write("context.json", &context(&text, json!([])));
        assert_eq!(listed_title(&home), "claude");
    }

    #[test]
    fn runs_that_are_not_listed_get_the_fallback_title_without_reading_context() {
        let home = Home::new();
        home.manifest(set("skill", json!("review")))
            .write("context.json", &context("Prompt", json!([])));
        let (run, _) = home.run();
        assert!(!run.listed());
        assert_eq!(run.title, "review");
        assert_eq!(read_title(&home.dir, &run.manifest).0, "Prompt");
    }

    fn work_of(selectors: &[&str]) -> Option<WorkRef> {
        let home = Home::new();
        home.manifest(|m| {
            m["subjects"] = selectors
                .iter()
                .map(|s| json!({"selector": s, "source": "inherited"}))
                .collect();
        });
        home.run().0.work()
    }

    fn work(kind: &str, id: &str) -> Option<WorkRef> {
        Some(WorkRef {
            kind: kind.into(),
            id: id.into(),
        })
    }

    #[test]
    fn work_is_the_task_then_project_then_wave_subject() {
        let wave = format!("wave:{WAVE}");
        let project = format!("project:{PROJECT}");
        let task = format!("task:{TASK}");
        assert_eq!(
            work_of(&[&wave, &project, &task]),
            work("task", TASK),
            "task wins wherever it is"
        );
        assert_eq!(work_of(&[&wave, &project]), work("project", PROJECT));
        assert_eq!(work_of(&[&wave]), work("wave", WAVE));
        assert_eq!(work_of(&[]), None);
        // Slugs and names do not parse as ids: the next kind is tried, as lf does.
        assert_eq!(
            work_of(&["task:fix-it", "project:product", &wave]),
            work("wave", WAVE)
        );
        assert_eq!(work_of(&["wave:release-train", "other:x"]), None);
        // lf looks only at the first subject of a kind.
        assert_eq!(work_of(&["task:task_nothex", &task]), None);
        // Other UUID spellings parse and come out in lf's canonical form.
        assert_eq!(
            work_of(&["task:task_11112222-3333-4444-5555-666677778888"]),
            work("task", TASK)
        );
        assert_eq!(
            work_of(&["wave:{6F1C2D3E-4A5B-4C6D-8E7F-90A1B2C3D4E5}"]),
            work("wave", WAVE)
        );
        assert_eq!(
            work_of(&["wave:6f1c2d3e4a5b4c6d8e7f90a1b2c3d4e5"]),
            work("wave", WAVE)
        );
        assert_eq!(work_of(&["task:11112222333344445555666677778888"]), None);
    }

    #[test]
    fn an_interactive_session_record() {
        let home = Home::new();
        home.manifest(|m| {
            m["subjects"] = json!([{"selector": format!("task:{TASK}"), "source": "declared"}]);
        })
        .provider_session()
        .write("session-name.json", r#"{"title":"Fix it"}"#);
        let (run, _) = home.run();
        let argv = vec![
            "/bin/lf".into(),
            "session".into(),
            "open".into(),
            RUN.into(),
        ];
        let session = run.session(true, argv.clone());
        assert_eq!(session.id, RUN);
        assert_eq!(session.kind, Some(Kind::Interactive));
        assert_eq!(session.state, State::Active);
        assert_eq!(session.title, "Fix it");
        assert_eq!(session.detail, "claude:opus");
        assert_eq!(session.cwd, "/Users/me/src/app");
        assert_eq!(session.work, work("task", TASK));
        assert_eq!(session.created_at, Some(1_777_636_800));
        assert_eq!(words(&session.open_argv), argv);
        assert_eq!(session.ready_summary, None);
        assert_eq!(run.session(false, argv).state, State::Closed);

        home.manifest(set("model", Value::Null));
        assert_eq!(home.run().0.detail(), "claude");
    }

    #[test]
    fn native_state_follows_lf() {
        let home = Home::new();
        home.manifest(|_| {});
        let (waiting_run, _) = home.run();
        home.provider_session();
        let (history_run, _) = home.run();
        let table = [
            (Some("done"), None, false, State::Ready),
            (Some("done"), Some(&history_run), true, State::Ready),
            (None, None, false, State::Waiting),
            (None, Some(&waiting_run), true, State::Active),
            (None, Some(&history_run), true, State::Active),
            (None, Some(&history_run), false, State::Closed),
            (None, Some(&waiting_run), false, State::Waiting),
        ];
        for (ready, run, live, expected) in table {
            assert_eq!(
                native_state(ready, run, live),
                expected,
                "ready {ready:?}, provider session {:?}, live {live}",
                run.map(|r| r.provider_session)
            );
        }
    }

    #[test]
    fn huge_records_are_refused_without_reading_them() {
        let home = Home::new();
        let path = home.dir.join("manifest.json");
        // Sparse: reading it whole would take minutes and 8 GiB.
        fs::File::create(&path).unwrap().set_len(8 << 30).unwrap();
        assert_eq!(home.manifest_error(), "Run manifest is larger than 1 MiB");
    }

    #[test]
    fn concise_titles() {
        assert_eq!(
            concise_title("\n  Fix session restore\nmore").as_deref(),
            Some("Fix session restore")
        );
        assert_eq!(concise_title(" \n\t\n"), None);
        assert_eq!(
            concise_title(&"x".repeat(81)),
            Some(format!("{}…", "x".repeat(80)))
        );
    }
}
