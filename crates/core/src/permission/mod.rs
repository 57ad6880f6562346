//! Answering an agent's permission request from the desktop, through Claude Code's own
//! `PermissionRequest` hook (lf has no verb to answer an agent).
//!
//! Claude Code starts `lf-tray permission-hook` with the request as JSON on stdin while its
//! terminal shows the same prompt; the first answer wins, and Claude ends the hook when the
//! person answers in the terminal. The hook hands the request to the running tray over a
//! socket only the same user can open and waits for the person's click. Whatever goes
//! wrong — no tray, bad input, popups held back — it prints nothing and exits 0 at once:
//! no decision, and the terminal's prompt is the only one. It never exits 2 (Claude's
//! blocking error).
//!
//! Between hook and tray: the hook writes one line, the [`Request`] as JSON; the tray
//! answers `shown` once its popup is up, then the person's [`Reply`] as one JSON line. The
//! hook makes Claude's answer from its own copy of the request ([`Request::decide`]), so a
//! reply that does not answer what was asked — a bare allow on a question, a question left
//! open — is no decision there too. The tray closing the socket without an answer is "no
//! decision"; the hook going away (Claude ended it) tells the tray the request was answered
//! elsewhere. The tray's end of that socket, and the relay's for another machine's tray, is
//! [`socket`].

pub mod claude_settings;
pub mod moved_on;
pub mod pressed;
mod prompt;
pub mod remote;
pub mod socket;

pub use prompt::{
    Always, Answer, Choice, Decision, Prompt, Question, Refused, Reply, ASK_USER_QUESTION, DENIED,
    EXIT_PLAN_MODE, KEEP_PLANNING,
};

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A request bigger than this is not read: a tool input that large (a whole file for
/// `Write`) could not be shown in a popup anyway, and the bound keeps a runaway input from
/// growing the hook without limit.
pub const MAX_REQUEST: usize = 1 << 20;

/// How long the hook waits for the tray to say its popup is up. The tray decides from
/// what it already holds, plus one "is the person looking at that terminal" question that
/// takes up to about a second for a kitty (`kitty @ ls`); past this the tray is taken to be
/// stuck, and the terminal's prompt stays the only one.
pub const SHOWN_WAIT: Duration = Duration::from_secs(2);

/// How long the hook waits for the person in all: well before the `timeout` written into
/// Claude's settings (`claude_settings::TIMEOUT_SECONDS`, 600 s), so Claude never has to
/// kill it, with room for a loaded machine to print nothing and exit.
pub const GIVE_UP: Duration = Duration::from_secs(590);

/// The socket's name under `$XDG_RUNTIME_DIR/lf-tray/`.
const SOCKET: &str = "permission.sock";

/// Where the tray listens: `$XDG_RUNTIME_DIR/lf-tray/permission.sock`. Without a runtime
/// dir (no login session) there is none: a socket in a shared place could be raced.
pub fn socket_path(runtime_dir: Option<PathBuf>) -> Option<PathBuf> {
    runtime_dir
        .filter(|d| d.is_absolute())
        .map(|d| d.join("lf-tray").join(SOCKET))
}

/// Where the hook looks for whoever answers: the tray's socket
/// ([`socket_path`]) where there is a runtime dir; where there is none — an ssh login
/// without PAM and logind, where another machine's tray answers through the watcher
/// ([`remote`]) — `/tmp/lf-tray-<uid>/`. The watcher there listens at the same place,
/// and both check that the directory is the user's alone ([`private_dir`]): anyone may
/// create a name in /tmp, and a directory made by someone else is never used.
pub fn hook_socket(runtime_dir: Option<PathBuf>, uid: u32) -> PathBuf {
    socket_path(runtime_dir)
        .unwrap_or_else(|| PathBuf::from(format!("/tmp/lf-tray-{uid}")).join(SOCKET))
}

/// [`hook_socket`] for this process: its `$XDG_RUNTIME_DIR` and its user.
#[cfg(unix)]
pub fn hook_socket_here() -> PathBuf {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    // SAFETY: getuid cannot fail.
    hook_socket(runtime, unsafe { libc::getuid() })
}

/// Whether `dir` is a directory (not a link) owned by `uid` that nobody else may enter:
/// a socket in it was put there by that user.
#[cfg(unix)]
pub fn private_dir(dir: &Path, uid: u32) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a directory only this user can enter",
            dir.display()
        ));
    }
    Ok(())
}

/// Which agent's hook asks. Claude Code and Codex send the same `PermissionRequest` and
/// take the same allow and deny, but wait differently: Claude's terminal shows its prompt
/// while the hook runs (whoever answers first wins), Codex's shows nothing until the hook
/// has ended without a decision (`shared/reference/real-agents.md` §6) — so a Codex request
/// must never keep the person from their prompt for long.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Client {
    #[default]
    Claude,
    Codex,
}

impl Client {
    fn is_claude(&self) -> bool {
        *self == Client::Claude
    }

    /// The agent's name, as the person knows it.
    pub fn name(self) -> &'static str {
        match self {
            Client::Claude => "Claude Code",
            Client::Codex => "Codex",
        }
    }

    /// How long its hook waits for the tray at most. Claude's prompt stays in its terminal
    /// meanwhile, so the hook may wait as long as the person might (within the entry's
    /// timeout); Codex shows no prompt while its hook runs, so the tray withdraws a Codex
    /// request after the person's own setting (at most [`CODEX_WAIT_MAX`]) and the hook
    /// gives up a little after that in case the tray cannot.
    pub fn give_up(self) -> Duration {
        match self {
            Client::Claude => GIVE_UP,
            Client::Codex => CODEX_WAIT_MAX + SHOWN_WAIT,
        }
    }
}

/// The longest the person may let a Codex request wait for the popup (`codex_wait_seconds`
/// in the settings): two minutes of a terminal that shows only *Running hook* is already
/// more than anyone would sit through.
pub const CODEX_WAIT_MAX: Duration = Duration::from_secs(120);

/// What the tray needs of the agent's request, as the hook hands it on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Whose hook asks; absent from an older hook, which was Claude's.
    #[serde(default, skip_serializing_if = "Client::is_claude")]
    pub client: Client,
    /// Claude's own conversation id (not lf's session).
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub cwd: String,
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: serde_json::Value,
    /// Claude's own "don't ask again" suggestions, kept as sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_suggestions: Vec<Raw>,
}

/// A piece of Claude's JSON kept exactly as sent, so it can be echoed back byte for byte.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Raw(Box<serde_json::value::RawValue>);

impl Raw {
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for Raw {
    fn eq(&self, other: &Raw) -> bool {
        self.get() == other.get()
    }
}

/// Why a request was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    TooBig,
    NotJson(String),
    OtherEvent(String),
    /// JSON, but not what its tool asks in a form the tray can answer whole.
    Shape(String),
}

impl Request {
    /// The hook's input: `hook_event_name` must be `PermissionRequest` (a `PreToolUse`
    /// input looks alike but takes another answer), with a tool name. Claude's and Codex's
    /// inputs share those fields (Codex adds `turn_id` and `model`, which are not needed).
    pub fn decode(bytes: &[u8], client: Client) -> Result<Request, Unreadable> {
        if bytes.len() > MAX_REQUEST {
            return Err(Unreadable::TooBig);
        }
        #[derive(Deserialize)]
        struct Event {
            hook_event_name: String,
        }
        let event: Event =
            serde_json::from_slice(bytes).map_err(|e| Unreadable::NotJson(e.to_string()))?;
        if event.hook_event_name != claude_settings::EVENT {
            return Err(Unreadable::OtherEvent(event.hook_event_name));
        }
        // Read apart from the event's name: a flattened struct cannot hold raw JSON.
        let request: Request =
            serde_json::from_slice(bytes).map_err(|e| Unreadable::NotJson(e.to_string()))?;
        Ok(Request { client, ..request })
    }
}

/// The tray's line once the popup is up.
pub const SHOWN: &str = "shown";

/// `lf-tray permission-hook`: read the request from `input`, reach the tray at `socket`,
/// wait for the person, and write Claude's answer to `output` — or nothing. `claude` is
/// Claude's own state file for the client that asks ([`moved_on::state_file`]): when it
/// says the prompt was answered in the terminal, the hook leaves at once, and the tray
/// takes its popup down. Returns what happened, for the hook's one line on stderr; the
/// exit code is always 0.
pub fn run_hook(
    client: Client,
    input: impl Read,
    output: &mut impl Write,
    socket: Option<&Path>,
    claude: Option<&Path>,
) -> String {
    let mut bytes = Vec::new();
    if let Err(e) = input.take(MAX_REQUEST as u64 + 1).read_to_end(&mut bytes) {
        return format!("no decision: could not read the request: {e}");
    }
    let request = match Request::decode(&bytes, client) {
        Ok(request) => request,
        Err(why) => return format!("no decision: not a permission request ({why:?})"),
    };
    // A question or plan the tray could not answer whole is left to the terminal at once.
    if let Err(why) = request.prompt() {
        return format!("no decision: an unreadable {} ({why:?})", request.tool_name);
    }
    let Some(socket) = socket else {
        return "no decision: no $XDG_RUNTIME_DIR, so no tray to ask".into();
    };
    // A socket in a place someone else controls could answer for them.
    #[cfg(unix)]
    if let Some(dir) = socket.parent() {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        if let Err(why) = private_dir(dir, uid) {
            return format!("no decision: no tray to ask ({why})");
        }
    }
    match ask_tray(socket, &request, claude) {
        Ok(Asked::MovedOn) => "no decision: answered in Claude's terminal".into(),
        Ok(Asked::NotTaken) if client == Client::Codex => {
            "no decision: Codex shows its own prompt now".into()
        }
        Ok(Asked::Replied(reply)) => match request.decide(&reply) {
            Ok(decision) => {
                let _ = writeln!(output, "{}", decision.output());
                let _ = output.flush();
                format!("answered {} from the desktop", reply.word())
            }
            Err(why) => format!(
                "no decision: the tray's {} does not answer it: {why}",
                reply.word()
            ),
        },
        Ok(Asked::NotTaken) => "no decision: the tray did not take it".into(),
        Err(e) => format!("no decision: {e}"),
    }
}

/// How asking the tray ended.
enum Asked {
    Replied(Reply),
    /// The tray declined, gave up, or said something that is no reply.
    NotTaken,
    /// The person answered in the terminal first.
    MovedOn,
}

fn ask_tray(socket: &Path, request: &Request, claude: Option<&Path>) -> std::io::Result<Asked> {
    let started = Instant::now();
    let stream = UnixStream::connect(socket)?;
    // Claude moving on ends the wait: the tray sees its hook leave and withdraws the popup.
    let watch = match (claude, stream.try_clone()) {
        (Some(file), Ok(ours)) => moved_on::watch(file, move || {
            let _ = ours.shutdown(std::net::Shutdown::Both);
        }),
        _ => None,
    };
    let asked = ask(stream, request, started);
    // A reply that crossed the terminal's answer would be dropped by Claude: none is made.
    if watch.as_ref().is_some_and(moved_on::Watch::moved) {
        return Ok(Asked::MovedOn);
    }
    Ok(match asked? {
        Some(reply) => Asked::Replied(reply),
        None => Asked::NotTaken,
    })
}

fn ask(
    mut stream: UnixStream,
    request: &Request,
    started: Instant,
) -> std::io::Result<Option<Reply>> {
    let mut line = serde_json::to_vec(request).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.set_write_timeout(Some(SHOWN_WAIT))?;
    stream.write_all(&line)?;
    stream.set_read_timeout(Some(SHOWN_WAIT))?;
    let mut reader = BufReader::new(stream);
    let mut said = String::new();
    if reader.read_line(&mut said)? == 0 || said.trim() != SHOWN {
        return Ok(None);
    }
    let left = request.client.give_up().saturating_sub(started.elapsed());
    reader
        .get_ref()
        .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
    said.clear();
    // The person's own words travel in the reply; the bound is the request's.
    match (&mut reader).take(MAX_REQUEST as u64).read_line(&mut said) {
        Ok(_) => Ok(Reply::read(&said)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The session whose agent asks: Claude runs the hook below its own process (through a
/// shell), so the first of the hook's ancestors (`chain`, the hook first) that is a listed
/// agent's pid on this machine names it.
pub fn requester<'a, R: std::borrow::Borrow<crate::SessionRecord>>(
    chain: &[u32],
    sessions: &'a [R],
) -> Option<&'a crate::SessionRecord> {
    chain.iter().find_map(|pid| {
        sessions
            .iter()
            .map(R::borrow)
            .find(|s| s.machine.is_none() && s.agent().and_then(|a| a.pid) == Some(*pid))
    })
}

/// The tray's side of one line from the hook: the request, or why not.
pub fn read_request(line: &[u8]) -> Result<Request, Unreadable> {
    if line.len() > MAX_REQUEST {
        return Err(Unreadable::TooBig);
    }
    serde_json::from_slice(line).map_err(|e| Unreadable::NotJson(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    const BASH: &str = r#"{"session_id":"abc","transcript_path":"/t","cwd":"/w",
        "permission_mode":"default","hook_event_name":"PermissionRequest",
        "tool_name":"Bash","tool_input":{"command":"cargo publish --dry-run","description":"Publish"}}"#;

    #[test]
    fn the_requester_is_the_nearest_listed_agent_above_the_hook() {
        let agent = |id: &str, pid: u32, machine: Option<&str>| {
            let mut r = crate::lf::record::test_record(id, None, crate::State::Active);
            r.set_agent(Some(crate::Agent {
                id: format!("lf-{id}"),
                pid: Some(pid),
                runs: Default::default(),
            }));
            r.machine = machine.map(String::from);
            r
        };
        let sessions = [
            agent("far", 300, Some("box")),
            agent("outer", 100, None),
            agent("inner", 300, None),
        ];
        // hook 500 ← sh 400 ← claude 300 ← lf 100
        assert_eq!(
            requester(&[500, 400, 300, 100, 1], &sessions).unwrap().id,
            "inner"
        );
        assert_eq!(requester(&[500, 100], &sessions).unwrap().id, "outer");
        assert!(requester(&[500, 400, 1], &sessions).is_none());
    }

    #[test]
    fn only_a_permission_request_is_taken() {
        let request = Request::decode(BASH.as_bytes(), Client::Claude).unwrap();
        assert_eq!(request.tool_name, "Bash");
        assert_eq!(request.tool_input["command"], "cargo publish --dry-run");
        assert_eq!(request.cwd, "/w");
        let pre = BASH.replace("PermissionRequest", "PreToolUse");
        assert_eq!(
            Request::decode(pre.as_bytes(), Client::Claude),
            Err(Unreadable::OtherEvent("PreToolUse".into()))
        );
        assert!(matches!(
            Request::decode(b"garbage", Client::Claude),
            Err(Unreadable::NotJson(_))
        ));
        assert!(matches!(
            Request::decode(
                br#"{"hook_event_name":"PermissionRequest"}"#,
                Client::Claude
            ),
            Err(Unreadable::NotJson(_))
        ));
        let big = vec![b' '; MAX_REQUEST + 1];
        assert_eq!(
            Request::decode(&big, Client::Claude),
            Err(Unreadable::TooBig)
        );
    }

    /// Codex's input as 0.169 sends it (real-agents.md §6): the same request, taking only
    /// allow or deny, and said to be Codex's on the wire (an older tray reads it as before).
    #[test]
    fn a_codex_request_is_a_tool_to_allow_or_deny_and_says_whose_it_is() {
        const CODEX: &str = r#"{"session_id":"01a24935","turn_id":"01a24935","transcript_path":"/c/rollout.jsonl","cwd":"/tmp/cproj","hook_event_name":"PermissionRequest","model":"gpt-5","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"cargo publish","description":"Publish the crate to crates.io?"}}"#;
        let request = Request::decode(CODEX.as_bytes(), Client::Codex).unwrap();
        assert_eq!(request.client, Client::Codex);
        assert_eq!(request.prompt().unwrap(), Prompt::Tool { always: None });
        let allow = request.decide(&Reply::Allow).unwrap();
        assert!(allow
            .output()
            .contains(r#""decision":{"behavior":"allow"}"#));
        assert!(request.decide(&Reply::AlwaysAllow).is_err());
        let line = serde_json::to_string(&request).unwrap();
        assert!(line.contains(r#""client":"codex""#), "{line}");
        assert_eq!(read_request(line.as_bytes()).unwrap(), request);
        // Claude's travels as an older hook sent it: no new key.
        let claude = Request::decode(BASH.as_bytes(), Client::Claude).unwrap();
        assert!(!serde_json::to_string(&claude).unwrap().contains("client"));
        // Codex's terminal shows nothing while the hook waits: it never waits long.
        assert!(Client::Codex.give_up() <= CODEX_WAIT_MAX + SHOWN_WAIT);
        assert_eq!(Client::Claude.give_up(), GIVE_UP);
    }

    fn hook(socket: Option<&Path>, input: &[u8]) -> (String, String, Duration) {
        let started = Instant::now();
        let mut out = Vec::new();
        let said = run_hook(Client::Claude, input, &mut out, socket, None);
        (String::from_utf8(out).unwrap(), said, started.elapsed())
    }

    #[test]
    fn without_a_tray_or_with_bad_input_it_says_nothing_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let nobody = dir.path().join("permission.sock");
        for (socket, input) in [
            (Some(nobody.as_path()), BASH.as_bytes()),
            (None, BASH.as_bytes()),
            (Some(nobody.as_path()), b"\x00\xffnot json".as_slice()),
            (Some(nobody.as_path()), b"".as_slice()),
        ] {
            let (out, said, took) = hook(socket, input);
            assert_eq!(out, "", "{said}");
            assert!(said.starts_with("no decision"), "{said}");
            assert!(took < Duration::from_millis(200), "{took:?}");
        }
    }

    /// The tray's own directory is the user's alone; a test's must be too.
    fn private_tempdir() -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    /// A tray that would answer, listening where the hook looks: a test checks with
    /// `accept` that it was never asked.
    fn unasked_tray() -> (tempfile::TempDir, PathBuf, UnixListener) {
        let dir = private_tempdir();
        let socket = dir.path().join("permission.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        listener.set_nonblocking(true).unwrap();
        (dir, socket, listener)
    }

    #[test]
    fn a_socket_others_may_reach_is_never_asked() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, socket, listener) = unasked_tray();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let (out, said, took) = hook(Some(&socket), BASH.as_bytes());
        assert_eq!(out, "");
        assert!(said.contains("only this user can enter"), "{said}");
        assert!(took < Duration::from_millis(200), "{took:?}");
        assert!(listener.accept().is_err(), "the tray was asked");
    }

    fn tray(
        replies: &'static [&'static str],
    ) -> (tempfile::TempDir, PathBuf, std::thread::JoinHandle<String>) {
        let dir = private_tempdir();
        let socket = dir.path().join("permission.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        // A hook that never comes fails the test instead of hanging it.
        listener.set_nonblocking(true).unwrap();
        let serve = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            let stream = loop {
                match listener.accept() {
                    Ok((stream, _)) => break stream,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        assert!(Instant::now() < deadline, "the hook never asked the tray");
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => panic!("{e}"),
                }
            };
            stream.set_nonblocking(false).unwrap();
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            for reply in replies {
                let _ = writeln!(reader.get_mut(), "{reply}");
            }
            line
        });
        (dir, socket, serve)
    }

    #[test]
    fn the_trays_answer_is_printed_once_shown() {
        let (_dir, socket, serve) = tray(&[SHOWN, r#"{"reply":"deny"}"#]);
        let (out, said, _) = hook(Some(&socket), BASH.as_bytes());
        let sent = read_request(serve.join().unwrap().trim_end().as_bytes()).unwrap();
        assert_eq!(sent.tool_input["command"], "cargo publish --dry-run");
        let deny = Request::decode(BASH.as_bytes(), Client::Claude)
            .unwrap()
            .decide(&Reply::Deny)
            .unwrap();
        assert_eq!(out.trim_end(), deny.output());
        assert!(said.contains("deny"));
        // An older tray's word is read as before.
        let (_dir, socket, serve) = tray(&[SHOWN, "allow"]);
        let (out, _, _) = hook(Some(&socket), BASH.as_bytes());
        serve.join().unwrap();
        assert!(out.contains(r#""behavior":"allow""#), "{out}");
    }

    #[test]
    fn a_tray_that_declines_or_answers_without_showing_is_no_decision() {
        for replies in [&[][..], &["allow"][..], &[SHOWN, "maybe"][..], &[SHOWN][..]] {
            let replies: &'static [&'static str] = Box::leak(replies.to_vec().into_boxed_slice());
            let (_dir, socket, serve) = tray(replies);
            let (out, said, took) = hook(Some(&socket), BASH.as_bytes());
            serve.join().unwrap();
            assert_eq!(out, "", "{replies:?}: {said}");
            assert!(took < Duration::from_secs(1), "{took:?}");
        }
    }

    /// Claude 2.1.328 leaves the hook running after a terminal Yes; its state file says
    /// the prompt moved on, and the hook leaves, so the tray sees it go.
    #[test]
    fn a_terminal_answer_ends_the_hook_and_the_tray_sees_it_leave() {
        let dir = private_tempdir();
        let socket = dir.path().join("permission.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let sessions = dir.path().join("claude/sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        let state = sessions.join("4242.json");
        std::fs::write(
            &state,
            r#"{"pid":4242,"status":"waiting","waitingFor":"permission prompt"}"#,
        )
        .unwrap();
        let tray = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            writeln!(reader.get_mut(), "{SHOWN}").unwrap();
            // The person answers in the terminal while the popup is up.
            std::fs::write(&state, r#"{"pid":4242,"status":"busy"}"#).unwrap();
            // The tray's side: the hook leaves, and no reply is ever needed.
            line.clear();
            reader.read_line(&mut line).unwrap()
        });
        let started = Instant::now();
        let mut out = Vec::new();
        let said = run_hook(
            Client::Claude,
            BASH.as_bytes(),
            &mut out,
            Some(&socket),
            Some(&sessions.join("4242.json")),
        );
        assert_eq!(tray.join().unwrap(), 0, "the tray saw the hook leave");
        assert_eq!(said, "no decision: answered in Claude's terminal");
        assert!(out.is_empty());
        assert!(started.elapsed() < GIVE_UP / 2);
    }

    const QUESTION: &str = r#"{"session_id":"abc","cwd":"/w","hook_event_name":"PermissionRequest",
        "tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Which registry?",
        "header":"Registry","multiSelect":false,"options":[{"label":"crates.io","description":"public"},
        {"label":"internal","description":"ours"}]}]}}"#;

    #[test]
    fn a_question_gets_its_answers_or_nothing_whatever_the_tray_says() {
        // A bare allow (an older tray, or a wrong button) answers no question: nothing.
        for bare in [
            "allow",
            r#"{"reply":"allow"}"#,
            r#"{"reply":"answers","answers":[]}"#,
        ] {
            let replies: &'static [&'static str] = Box::leak(vec![SHOWN, bare].into_boxed_slice());
            let (_dir, socket, serve) = tray(replies);
            let (out, said, _) = hook(Some(&socket), QUESTION.as_bytes());
            serve.join().unwrap();
            assert_eq!(out, "", "{bare}: {said}");
            assert!(said.starts_with("no decision"), "{said}");
        }
        let (_dir, socket, serve) = tray(&[
            SHOWN,
            r#"{"reply":"answers","answers":[{"chosen":["internal"]}]}"#,
        ]);
        let (out, said, _) = hook(Some(&socket), QUESTION.as_bytes());
        serve.join().unwrap();
        let out: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap();
        let decision = &out["hookSpecificOutput"]["decision"];
        assert_eq!(decision["behavior"], "allow", "{said}");
        assert_eq!(
            decision["updatedInput"]["answers"],
            serde_json::json!({"Which registry?": "internal"})
        );
    }

    #[test]
    fn an_unreadable_question_is_left_to_the_terminal_without_asking_the_tray() {
        let (_dir, socket, listener) = unasked_tray();
        let broken = QUESTION.replace(r#""question":"Which registry?","#, "");
        let (out, said, took) = hook(Some(&socket), broken.as_bytes());
        assert_eq!(out, "");
        assert!(said.contains("unreadable AskUserQuestion"), "{said}");
        assert!(took < Duration::from_millis(200), "{took:?}");
        assert!(listener.accept().is_err(), "the tray was asked");
    }
}
