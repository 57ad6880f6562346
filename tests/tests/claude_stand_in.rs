//! The stand-in Claude (`tests/e2e/stand-in-claude`) against Claude Code's hook shapes
//! (`tests/fixtures/claude/`, see its README): the input its `PermissionRequest` hooks get
//! has every key of the reference with the same JSON type and no other, and it reads each
//! of the reference's decisions — allow, allow with `updatedInput`, allow with
//! `updatedPermissions`, deny with a message — as Claude does, reporting what it got. The
//! tray's answers are tested against this stand-in in the desktop suites: a drift of the
//! stand-in from Claude's shapes fails here.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

/// How long one prompt may take: a hook is a shell running `cat` and `printf`, started by
/// python; a loaded machine takes well under a second.
const PROMPT_WAIT: Duration = Duration::from_secs(20);

fn root() -> PathBuf {
    // As conformance.rs: the manifest directory at run time, right for a test binary built
    // in another clone that shared the target directory.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn fixture(name: &str) -> Value {
    let path = root().join("fixtures/claude").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The stand-in, run as Claude with one `PermissionRequest` hook: a shell command that
/// keeps what it got on stdin in `seen` and prints the decision in `said` (if any).
struct Claude {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    seen: PathBuf,
    said: PathBuf,
    _dir: tempfile::TempDir,
}

impl Claude {
    fn start() -> Claude {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("seen.json");
        let said = dir.path().join("said.json");
        let hook = format!(
            "cat > '{}'; if [ -f '{}' ]; then cat '{}'; fi",
            seen.display(),
            said.display(),
            said.display()
        );
        let settings = json!({"hooks": {"PermissionRequest": [
            {"matcher": "", "hooks": [{"type": "command", "command": hook, "timeout": 30}]}
        ]}});
        std::fs::write(dir.path().join("settings.json"), settings.to_string()).unwrap();
        let runner = root().join("e2e/stand-in-claude");
        let mut child = Command::new("python3")
            .arg(&runner)
            .env("CLAUDE_CONFIG_DIR", dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("python3 {}: {e}", runner.display()));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Claude {
            child,
            stdin,
            lines,
            seen,
            said,
            _dir: dir,
        }
    }

    /// One prompt whose hook answers `decision` (none: the hook prints nothing): the
    /// hook's input and the runner's report.
    fn prompt(&mut self, asked: &Value, decision: Option<&Value>) -> (Value, Value) {
        let _ = std::fs::remove_file(&self.seen);
        match decision {
            Some(decision) => std::fs::write(
                &self.said,
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                    "decision": decision}})
                .to_string(),
            )
            .unwrap(),
            None => {
                let _ = std::fs::remove_file(&self.said);
            }
        }
        writeln!(self.stdin, "request {asked}").unwrap();
        self.stdin.flush().unwrap();
        let report: Value = serde_json::from_str(
            &self
                .lines
                .recv_timeout(PROMPT_WAIT)
                .expect("the stand-in Claude reported nothing"),
        )
        .unwrap();
        if decision.is_none() {
            // Undecided: the prompt stays in the terminal until it answers.
            writeln!(self.stdin, "terminal allow").unwrap();
            self.stdin.flush().unwrap();
            self.lines.recv_timeout(PROMPT_WAIT).unwrap();
        }
        let seen = std::fs::read_to_string(&self.seen).expect("the hook did not run");
        (serde_json::from_str(&seen).unwrap(), report)
    }
}

impl Drop for Claude {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "exit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn assert_shape(got: &Value, reference: &Value, optional: &[&str], with_optional: bool) {
    let mut want: Vec<&str> = keys(reference)
        .into_iter()
        .filter(|k| with_optional || !optional.contains(k))
        .collect();
    want.sort_unstable();
    assert_eq!(keys(got), want, "the hook's input: {got}");
    for key in want {
        assert_eq!(
            type_name(&got[key]),
            type_name(&reference[key]),
            "{key} in {got}"
        );
    }
}

#[test]
fn a_permission_request_hook_gets_claudes_input_whole_and_nothing_else() {
    let reference = fixture("permission-request.json");
    let input = &reference["input"];
    let optional: Vec<&str> = reference["optional"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let modes = reference["permission_modes"].as_array().unwrap();
    let mut claude = Claude::start();

    let bare = json!({"tool_name": input["tool_name"], "tool_input": input["tool_input"]});
    let (seen, report) = claude.prompt(&bare, None);
    assert_shape(&seen, input, &optional, false);
    assert_eq!(seen["hook_event_name"], "PermissionRequest");
    assert!(modes.contains(&seen["permission_mode"]), "{seen}");
    assert_eq!(seen["tool_input"], input["tool_input"]);
    assert_eq!(report["decided_by"], "none", "{report}");

    let suggesting = json!({"tool_name": input["tool_name"], "tool_input": input["tool_input"],
        "permission_suggestions": input["permission_suggestions"]});
    let (seen, _) = claude.prompt(&suggesting, None);
    assert_shape(&seen, input, &optional, true);
    assert_eq!(
        seen["permission_suggestions"],
        input["permission_suggestions"]
    );
}

#[test]
fn each_of_claudes_decisions_is_read_as_claude_reads_it() {
    let reference = fixture("permission-request.json");
    let input = &reference["input"];
    let asked = json!({"tool_name": input["tool_name"], "tool_input": input["tool_input"]});
    let decisions = &reference["decisions"];
    let mut claude = Claude::start();
    for name in ["allow", "allow_with_input", "allow_always", "deny"] {
        let decision = &decisions[name];
        let (_, report) = claude.prompt(&asked, Some(decision));
        assert_eq!(report["decided_by"], "hook", "{name}: {report}");
        assert_eq!(report["behavior"], decision["behavior"], "{name}");
        assert_eq!(
            report["message"],
            decision.get("message").cloned().unwrap_or(Value::Null),
            "{name}"
        );
        assert_eq!(
            report["updated_input"],
            decision.get("updatedInput").cloned().unwrap_or(Value::Null),
            "{name}"
        );
        assert_eq!(
            report["updated_permissions"],
            decision
                .get("updatedPermissions")
                .cloned()
                .unwrap_or(Value::Null),
            "{name}"
        );
        assert_eq!(report["hooks"][0]["exit"], 0, "{name}: {report}");
    }
}

#[test]
fn a_question_reaches_the_hook_as_asked_and_its_answers_come_back_as_given() {
    let question = fixture("ask-user-question.json");
    let asked = json!({"tool_name": "AskUserQuestion", "tool_input": question["tool_input"]});
    let mut answered = question["tool_input"].clone();
    answered["answers"] = question["answers"].clone();
    let decision = json!({"behavior": "allow", "updatedInput": answered});
    let mut claude = Claude::start();
    let (seen, report) = claude.prompt(&asked, Some(&decision));
    assert_eq!(seen["tool_name"], "AskUserQuestion");
    assert_eq!(seen["tool_input"], question["tool_input"]);
    assert_eq!(report["updated_input"], answered, "{report}");
    // Claude's own format for several answers: the labels joined with ", ".
    let several = question["answers"]["Which sections should I include?"]
        .as_str()
        .unwrap();
    assert_eq!(several.split(", ").count(), 2);
}
