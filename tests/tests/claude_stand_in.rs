//! The stand-in Claude (`tests/e2e/stand-in-claude`) against what the real Claude Code sends
//! and takes (`tests/fixtures/claude/`, see its README): the input its `PermissionRequest`
//! hooks get has the keys of a captured payload, in its order, with the same JSON types and
//! no other; and it reads each decision — allow, allow with `updatedInput`, allow with the
//! request's suggestion echoed as `updatedPermissions`, deny with a message — as Claude
//! does, reporting what it got. The tray's answers are tested against this stand-in in the
//! desktop suites: a drift of the stand-in from Claude's payloads fails here.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
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

fn fixture_text(name: &str) -> String {
    let path = root().join("fixtures/claude").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture(name: &str) -> Value {
    serde_json::from_str(&fixture_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// An object's keys in the order the text has them (`Value` sorts them).
fn key_order(text: &str) -> Vec<String> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(key);
            }
            Ok(keys)
        }
    }
    serde_json::Deserializer::from_str(text)
        .deserialize_map(Keys)
        .unwrap_or_else(|e| panic!("{e}: {text}"))
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
    /// hook's input as it was sent and the runner's report.
    fn prompt(&mut self, asked: &Value, decision: Option<&Value>) -> (String, Value) {
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
        (seen, report)
    }
}

impl Drop for Claude {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "exit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

/// What the stand-in is asked for to send `real`: its tool, input, mode and suggestions.
fn asked_as(real: &Value) -> Value {
    let mut asked = json!({"tool_name": real["tool_name"], "tool_input": real["tool_input"],
        "permission_mode": real["permission_mode"]});
    if let Some(suggestions) = real.get("permission_suggestions") {
        asked["permission_suggestions"] = suggestions.clone();
    }
    asked
}

#[test]
fn a_permission_request_hook_gets_claudes_input_whole_in_its_order_and_nothing_else() {
    let modes = fixture("decisions.json")["permission_modes"].clone();
    let mut claude = Claude::start();
    // With a suggestion, without one (a question has no `permission_suggestions` key), and a
    // plan in plan mode.
    for name in [
        "bash.json",
        "bash-compound.json",
        "write.json",
        "ask-user-question.json",
        "exit-plan-mode.json",
    ] {
        let text = fixture_text(&format!("hook-input/{name}"));
        let real: Value = serde_json::from_str(&text).unwrap();
        let (sent, report) = claude.prompt(&asked_as(&real), None);
        let seen: Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(key_order(&sent), key_order(&text), "{name}: {sent}");
        for (key, value) in real.as_object().unwrap() {
            assert_eq!(
                type_name(&seen[key]),
                type_name(value),
                "{name}: {key} in {sent}"
            );
        }
        for key in [
            "permission_mode",
            "effort",
            "hook_event_name",
            "tool_name",
            "tool_input",
        ] {
            assert_eq!(seen[key], real[key], "{name}: {key}");
        }
        assert_eq!(
            seen.get("permission_suggestions"),
            real.get("permission_suggestions"),
            "{name}"
        );
        assert!(modes.as_array().unwrap().contains(&seen["permission_mode"]));
        assert_eq!(report["decided_by"], "none", "{name}: {report}");
    }
}

#[test]
fn each_prompt_has_its_own_prompt_id() {
    let real = fixture("hook-input/bash.json");
    let mut claude = Claude::start();
    let (first, _) = claude.prompt(&asked_as(&real), None);
    let (second, _) = claude.prompt(&asked_as(&real), None);
    let id = |sent: &str| serde_json::from_str::<Value>(sent).unwrap()["prompt_id"].clone();
    assert_ne!(id(&first), id(&second));
}

#[test]
fn each_of_claudes_decisions_is_read_as_claude_reads_it() {
    let real = fixture("hook-input/bash.json");
    let asked = asked_as(&real);
    let mut decisions = fixture("decisions.json")["decisions"].clone();
    // Always allow: the request's own suggestion, echoed (real-agents.md §3).
    decisions["allow_always"] = json!({"behavior": "allow",
        "updatedPermissions": real["permission_suggestions"]});
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
    let real = fixture("hook-input/ask-user-question.json");
    let answers = fixture("decisions.json")["answers"].clone();
    let mut answered = real["tool_input"].clone();
    answered["answers"] = answers.clone();
    let decision = json!({"behavior": "allow", "updatedInput": answered});
    let mut claude = Claude::start();
    let (sent, report) = claude.prompt(&asked_as(&real), Some(&decision));
    let seen: Value = serde_json::from_str(&sent).unwrap();
    assert_eq!(seen["tool_name"], "AskUserQuestion");
    assert_eq!(seen["tool_input"], real["tool_input"]);
    assert_eq!(report["updated_input"], answered, "{report}");
    // Claude's own format for several answers: the labels joined with ", ".
    let several = answers["Which sections should I include?"]
        .as_str()
        .unwrap();
    assert_eq!(several.split(", ").count(), 2);
}
