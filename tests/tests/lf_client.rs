//! lf-tray-core's `lf` client against the stand-in lf: what it runs, what it reads back,
//! and that an lf that never answers is stopped.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lf_sim::{AskSpec, FlowSpec, SimHome};
use lf_tray_core::{Dialect, Generation};
use lf_tray_core::{Kind, State};
use lf_tray_core::{Lf, LfAction, LfError, RUN_CONTEXT_VARS};
use serde_json::Value;

const LF: &str = env!("CARGO_BIN_EXE_lf");

/// A home, and an lf that answers from it. The stand-in finds its knobs through
/// `LF_SIM_DIR`; tests run in parallel in one process environment, so each harness calls
/// the stand-in through a tiny wrapper that sets its own; `exec` keeps the pid the client
/// spawned.
struct Harness {
    dir: tempfile::TempDir,
    sim: SimHome,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let sim = SimHome::new(dir.path().join("home"));
        fs::create_dir(dir.path().join("sim")).unwrap();
        let wrapper = format!(
            "#!/bin/sh\nLF_SIM_DIR='{}' exec '{LF}' \"$@\"\n",
            dir.path().join("sim").display()
        );
        script(&dir.path().join("lf"), &wrapper);
        Harness { dir, sim }
    }

    fn lf(&self) -> Lf {
        Lf::new(self.dir.path().join("lf")).with_home(self.sim.home())
    }

    fn knob(&self, name: &str, contents: &str) {
        fs::write(self.dir.path().join("sim").join(name), contents).unwrap();
    }

    fn calls(&self) -> Vec<Value> {
        fs::read_to_string(self.dir.path().join("sim/argv.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn last_argv(&self) -> Value {
        self.calls().last().expect("lf was called")["argv"].clone()
    }
}

/// Written by a child `sh`, not by this process: another test's fork could otherwise inherit
/// the open file for a moment, and running a file open for writing fails with "text file
/// busy" (seen under load).
fn script(path: &Path, text: &str) {
    use std::io::Write;
    let mut sh = std::process::Command::new("/bin/sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    sh.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    assert!(
        sh.wait().unwrap().success(),
        "could not write {}",
        path.display()
    );
}

fn pid_of(call: &Value) -> u32 {
    call["pid"].as_u64().unwrap() as u32
}

/// Gone, or a zombie waiting for the runtime's reaper: either way no longer running.
fn is_running(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim().to_string())
        })
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

#[tokio::test]
async fn list_reads_what_lf_lists() {
    let h = Harness::new();
    let ask = h
        .sim
        .ask(&AskSpec::new("Which target first?", "/src/app"))
        .unwrap();
    h.sim.set_ready(&ask, "macOS").unwrap();
    let mut flow = FlowSpec::new("task_1:ship:review:0", "Ship", "review", "/src/flow");
    flow.work = Some("task:task_1".into());
    h.sim.flows(&[flow]).unwrap();

    let (records, problems) = h.lf().list(&Dialect::of(Generation::A)).await.unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(records.len(), 2);
    let shipped = &records[0];
    assert_eq!(shipped.id, "task_1:ship:review:0");
    assert_eq!(shipped.kind, Some(Kind::Flow));
    assert_eq!(shipped.state, State::Waiting);
    assert_eq!(shipped.work.as_ref().unwrap().id, "task_1");
    let asked = &records[1];
    assert_eq!(asked.id, ask);
    assert_eq!(asked.kind, Some(Kind::Ask));
    assert_eq!(asked.state, State::Ready);
    assert_eq!(asked.ready_summary.as_deref(), Some("macOS"));
    let words: Vec<&str> = asked.open_argv.iter().map(|w| &**w).collect();
    assert_eq!(words, [LF, "session", "open", &ask]);
    assert_eq!(
        h.last_argv(),
        serde_json::json!(["session", "list", "--json", "--all"])
    );
}

#[tokio::test]
async fn ids_and_text_reach_lf_as_single_argv_items_after_double_dash() {
    let h = Harness::new();
    let hostile = FlowSpec::new("-rf", "Hostile", "review", "/src");
    h.sim.flows(&[hostile]).unwrap();
    let text = "it's \"fine\" $(touch /tmp/pwned) `id`; rm -rf ~\nsecond line";

    let said = h
        .lf()
        .act(&LfAction::Iterate {
            id: "-rf".into(),
            text: text.into(),
        })
        .await
        .unwrap();
    assert_eq!(
        said,
        "Task FlowStep returned to autonomous work for another iteration."
    );
    assert_eq!(
        h.last_argv(),
        serde_json::json!(["session", "iterate", "--", "-rf", text])
    );

    let said = h
        .lf()
        .act(&LfAction::Approve {
            id: "-rf".into(),
            text: text.into(),
        })
        .await
        .unwrap();
    assert_eq!(said, "Task FlowStep approved; the Task may continue.");
    assert_eq!(
        h.last_argv(),
        serde_json::json!(["session", "approve", "--", "-rf", text])
    );
    assert!(h.sim.flow_list().unwrap().is_empty());

    let ask = h.sim.ask(&AskSpec::new("q", "/src")).unwrap();
    h.sim.set_ready(&ask, "done").unwrap();
    let said = h
        .lf()
        .act(&LfAction::Complete { id: ask.clone() })
        .await
        .unwrap();
    assert_eq!(said, "Ask session completed: done");
    assert_eq!(
        h.last_argv(),
        serde_json::json!(["session", "complete", "--", ask])
    );
}

#[tokio::test]
async fn lf_sees_the_chosen_home_and_none_of_the_trays_run_context() {
    // Whatever Run the tray was started from must not reach lf. Every lf call in this
    // binary scrubs these, so setting them for the whole process is harmless.
    for name in RUN_CONTEXT_VARS {
        std::env::set_var(name, "inherited");
    }
    std::env::set_var("LF_DB_PATH", "/elsewhere/loopflow.db");
    let h = Harness::new();
    h.lf().list(&Dialect::of(Generation::A)).await.unwrap();
    let env = &h.calls()[0]["env"];
    for name in RUN_CONTEXT_VARS {
        assert!(env.get(name).is_none(), "{name} reached lf: {env}");
    }
    assert!(env.get("LF_DB_PATH").is_none(), "{env}");
    let home = h.sim.home().to_str().unwrap();
    assert_eq!(env["LF_HOME"], home);
    assert_eq!(env["LF_CONTROL_HOME"], home);
}

#[tokio::test]
async fn lf_refusals_come_back_as_its_own_sentences() {
    let h = Harness::new();
    let ask = h.sim.ask(&AskSpec::new("q", "/src")).unwrap();
    let err = h
        .lf()
        .act(&LfAction::Complete { id: ask.clone() })
        .await
        .unwrap_err();
    let LfError::Failed { code, message } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*code, Some(1));
    assert_eq!(
        message,
        &format!(
            "Ask session \"{ask}\" is not ready; its agent must run `lf session ready \"<summary>\"` first"
        )
    );
    assert_eq!(err.to_string(), *message);

    let err = h
        .lf()
        .act(&LfAction::Approve {
            id: ask.clone(),
            text: "ok".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Ad-hoc Ask Sessions use `lf session complete`"
    );

    h.knob("fail", "database is locked");
    let err = h.lf().list(&Dialect::of(Generation::A)).await.unwrap_err();
    assert!(
        matches!(&err, LfError::Failed { code: Some(1), message } if message == "database is locked"),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_lf_that_never_answers_is_stopped_at_the_timeout() {
    let h = Harness::new();
    h.knob("hang", "");
    let timeout = Duration::from_secs(2);
    let started = Instant::now();
    let err = h
        .lf()
        .with_timeout(timeout)
        .list(&Dialect::of(Generation::A))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(err, LfError::Timeout(t) if t == timeout),
        "{err:?}"
    );
    assert!(took >= timeout, "gave up early: {took:?}");
    assert!(took < timeout + Duration::from_secs(5), "took {took:?}");
    assert_eq!(
        err.to_string(),
        "lf did not answer within 2 s and was stopped."
    );
    let calls = h.calls();
    assert_eq!(calls.len(), 1, "lf started and recorded its call");
    let pid = pid_of(&calls[0]);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "lf {pid} was not killed and reaped"
    );
}

#[tokio::test]
async fn giving_up_on_a_call_kills_its_lf() {
    let h = Harness::new();
    h.knob("hang", "");
    let lf = h.lf().with_timeout(Duration::from_secs(600));
    let call = tokio::spawn(async move { lf.list(&Dialect::of(Generation::A)).await });
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        if let Some(call) = h.calls().first() {
            break pid_of(call);
        }
        assert!(Instant::now() < deadline, "lf never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(is_running(pid));
    call.abort();
    let _ = call.await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while is_running(pid) {
        assert!(Instant::now() < deadline, "lf {pid} outlived its caller");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn missing_and_misbehaving_programs_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let err = Lf::new(dir.path().join("nope"))
        .list(&Dialect::of(Generation::A))
        .await
        .unwrap_err();
    assert!(matches!(err, LfError::NotFound), "{err:?}");

    let chatty = dir.path().join("chatty");
    script(&chatty, "#!/bin/sh\necho 'lf 0.1 ready'\n");
    let err = Lf::new(chatty)
        .list(&Dialect::of(Generation::A))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LfError::BadOutput(m) if m.starts_with("lf printed invalid JSON")),
        "{err:?}"
    );

    // More than the output cap: refused, and the flood does not block or exhaust anything.
    let flood = dir.path().join("flood");
    script(&flood, "#!/bin/sh\nhead -c 17000000 /dev/zero\n");
    let err = Lf::new(flood)
        .list(&Dialect::of(Generation::A))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LfError::BadOutput(m) if m.contains("more than 16 MiB")),
        "{err:?}"
    );

    let silent = dir.path().join("silent");
    script(&silent, "#!/bin/sh\nexit 3\n");
    let err = Lf::new(silent)
        .list(&Dialect::of(Generation::A))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "lf failed with exit code 3 and no message."
    );
}

#[tokio::test]
async fn the_resolved_lf_is_the_one_on_path_and_it_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (empty, bin) = (dir.path().join("empty"), dir.path().join("bin"));
    fs::create_dir(&empty).unwrap();
    fs::create_dir(&bin).unwrap();
    symlink(LF, bin.join("lf")).unwrap();
    let path = std::env::join_paths([&empty, &bin]).unwrap();
    let home = dir.path().join("home");

    let env = |name: &str| match name {
        "PATH" => Some(path.clone()),
        "HOME" => Some(home.clone().into()),
        _ => None,
    };
    let found: PathBuf = Lf::find(env).expect("lf on PATH");
    assert_eq!(found, bin.join("lf"));

    let sim = SimHome::new(&home);
    sim.ask(&AskSpec::new("q", "/src")).unwrap();
    let (records, _) = Lf::new(found.clone())
        .with_home(sim.home())
        .list(&Dialect::of(Generation::A))
        .await
        .unwrap();
    assert_eq!(&*records[0].open_argv[0], found.to_str().unwrap());
}

#[tokio::test]
async fn an_lf_that_answers_in_pages_is_followed_to_the_last_one() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    let paged = dir.path().join("paged");
    let record = |id: &str| {
        format!(
            r#"{{"id":"{id}","attention":"waiting","title":"{id}","title_source":"generated","flow_membership":{{"kind":"independent"}},"cwd":"/src","state":"unknown","open_argv":["/usr/bin/env","lf","session","connect","{id}"]}}"#
        )
    };
    script(
        &paged,
        &format!(
            "#!/bin/sh\necho \"$*\" >> {calls}\ncase \"$*\" in\n\
             *'--after S-2'*) printf '{{\"entries\":[{c}],\"next\":null}}' ;;\n\
             *'--after S-1'*) printf '{{\"entries\":[{b}],\"next\":\"S-2\"}}' ;;\n\
             *) printf '{{\"entries\":[{a}],\"next\":\"S-1\"}}' ;;\nesac\n",
            calls = calls.display(),
            a = record("S-1"),
            b = record("S-2"),
            c = record("S-3"),
        ),
    );
    let (records, problems) = Lf::new(paged)
        .list(&Dialect::of(Generation::D))
        .await
        .unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["S-1", "S-2", "S-3"]);
    let calls = fs::read_to_string(&calls).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(
        calls,
        [
            "session list --json --all --interactive all --limit 0",
            "session list --json --all --interactive all --page --limit 100 --after S-1",
            "session list --json --all --interactive all --page --limit 100 --after S-2",
        ],
        "later pages keep the same filters"
    );

    // A cursor that comes back again would never end: refused, not looped on.
    let looping = dir.path().join("looping");
    script(
        &looping,
        &format!(
            "#!/bin/sh\nprintf '{{\"entries\":[{a}],\"next\":\"S-1\"}}'\n",
            a = record("S-1")
        ),
    );
    let err = Lf::new(looping)
        .list(&Dialect::of(Generation::D))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LfError::BadOutput(m) if m.contains("repeat the cursor")),
        "{err:?}"
    );
}
