//! The socket a hook asks on, served wherever someone answers it: the tray on its own
//! machine (`src-tauri/src/permission.rs`) and the watcher that relays another machine's
//! hooks to a tray over ssh ([`super::remote`]). Both listen, take a hook and tell it the
//! same way; what happens between — finding the session, showing or relaying the popup —
//! is the caller's.
//!
//! The lines, as the hook reads them ([`super::run_hook`]): the hook writes its
//! [`Request`] as one JSON line; the server writes [`SHOWN`] once the popup is up, then the
//! person's [`Reply`] as one line, or closes the connection: no decision, the terminal
//! keeps the prompt. The hook closing its end (its agent ended it: the terminal answered)
//! is how the server learns that the request was answered elsewhere.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::{read_request, Reply, Request, Unreadable, MAX_REQUEST, SHOWN};

/// How long a connected hook may take to send its request: it writes it at once, from
/// memory; a peer slower than this is not a hook.
const READ_WAIT: Duration = Duration::from_secs(1);

/// Whose directory the socket goes in: where the tray's and the relay's differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// The tray's, `$XDG_RUNTIME_DIR/lf-tray/`. It also holds the popups' icon, written
    /// with the umask's mode, so a directory of this user's own is closed to others before
    /// the socket goes in.
    Tray,
    /// The relay's, which may be `/tmp/lf-tray-<uid>/` (an ssh login without a runtime
    /// dir), where anyone may make a name. It holds only the socket and lf-tray makes it
    /// 0700, so one found open to others was not made by lf-tray: refused, never adopted.
    Relay,
}

/// Why nobody listens.
#[derive(Debug)]
pub enum Unbound {
    /// A live socket is there: a tray answers on it (a second tray on this desktop, or on
    /// the other machine its own). Taking it would leave that tray deaf to its hooks until
    /// it restarts; a socket that refuses was left by one that did not end cleanly.
    Answered,
    /// The directory could not be made or is not this user's alone, or the bind failed.
    Failed(String),
}

/// Listening for hooks; each connection's peer must be `uid`.
pub struct Hooks {
    listener: UnixListener,
    uid: u32,
}

impl Hooks {
    /// Listen at `socket`, in a directory only `uid` may enter (made if absent).
    pub fn bind(socket: &Path, uid: u32, dir: Dir) -> Result<Hooks, Unbound> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        let parent = socket.parent().unwrap_or(Path::new("/"));
        let failed = |what: &str, path: &Path, e: std::io::Error| {
            Unbound::Failed(format!("cannot {what} {}: {e}", path.display()))
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(parent)
            .map_err(|e| failed("make", parent, e))?;
        if dir == Dir::Tray {
            let meta = std::fs::symlink_metadata(parent).map_err(|e| failed("read", parent, e))?;
            if meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 != 0 {
                std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700))
                    .map_err(|e| failed("close", parent, e))?;
            }
        }
        super::private_dir(parent, uid).map_err(Unbound::Failed)?;
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return Err(Unbound::Answered);
        }
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket).map_err(|e| failed("listen on", socket, e))?;
        Ok(Hooks { listener, uid })
    }

    /// The next connection, to be read on a task of its own ([`Arriving::read`]) so that a
    /// slow peer holds up no other; `None` once the listener fails.
    pub async fn next(&self) -> Option<Arriving> {
        let (stream, _) = self.listener.accept().await.ok()?;
        Some(Arriving {
            stream,
            uid: self.uid,
        })
    }
}

/// A connection not read yet.
pub struct Arriving {
    stream: UnixStream,
    uid: u32,
}

/// Why a connection is no hook to answer; it is closed unanswered.
#[derive(Debug)]
pub enum NotAHook {
    /// Another user's process: refused before a byte is read.
    Stranger(u32),
    /// No credentials, or no pid in them, to tie it to an agent.
    Unknown(String),
    /// No whole line within [`READ_WAIT`], or the connection failed.
    Silent,
    Unreadable(Unreadable),
}

impl fmt::Display for NotAHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotAHook::Stranger(uid) => write!(f, "refused a connection from uid {uid}"),
            NotAHook::Unknown(why) => write!(f, "no peer credentials: {why}"),
            NotAHook::Silent => f.write_str("no request within a second"),
            NotAHook::Unreadable(why) => write!(f, "an unreadable request ({why:?})"),
        }
    }
}

impl Arriving {
    /// The peer checked and its request read: the hook, and what it asks.
    pub async fn read(self) -> Result<(Hook, Request), NotAHook> {
        let (hook, line) = self.line().await?;
        let request = read_request(&line).map_err(NotAHook::Unreadable)?;
        Ok((hook, request))
    }

    /// The peer checked and its first line read (without its end), for whatever speaks
    /// on a socket of this kind (`lf-tray answer`'s, [`super::pressed`]).
    pub async fn line(self) -> Result<(Hook, Vec<u8>), NotAHook> {
        let pid = match self.stream.peer_cred() {
            Ok(cred) if cred.uid() == self.uid => cred.pid(),
            Ok(cred) => return Err(NotAHook::Stranger(cred.uid())),
            Err(e) => return Err(NotAHook::Unknown(e.to_string())),
        };
        let pid = pid
            .and_then(|p| u32::try_from(p).ok())
            .ok_or_else(|| NotAHook::Unknown("no pid".into()))?;
        let mut reader = BufReader::new(self.stream);
        let mut line = Vec::new();
        let mut bounded = (&mut reader).take(MAX_REQUEST as u64 + 1);
        let read = bounded.read_until(b'\n', &mut line);
        let Ok(Ok(_)) = tokio::time::timeout(READ_WAIT, read).await else {
            return Err(NotAHook::Silent);
        };
        line.truncate(line.trim_ascii_end().len());
        Ok((Hook { pid, reader }, line))
    }
}

/// One hook's connection, its request read. Dropped unanswered, it closes: the hook gives
/// no decision ([`Hook::withdraw`] says so where that is the point).
pub struct Hook {
    /// The hook's process: its ancestors name the agent that asks.
    pub pid: u32,
    reader: BufReader<UnixStream>,
}

impl Hook {
    /// The popup is up: the hook waits for the person now, not for the popup.
    pub async fn shown(&mut self) -> std::io::Result<()> {
        self.say(SHOWN).await
    }

    /// The person's answer; the hook checks it against its own copy of the request.
    pub async fn answer(mut self, reply: &Reply) -> std::io::Result<()> {
        self.say(&reply.line()).await
    }

    /// A last line to the peer, then the connection closes.
    pub async fn say_last(mut self, line: &str) -> std::io::Result<()> {
        self.say(line).await
    }

    /// No answer: the connection closes, and the terminal keeps the prompt.
    pub fn withdraw(self) {}

    /// Resolves when the hook leaves (its agent ended it: the terminal answered) or speaks
    /// out of turn, which ends its request too. Safe to drop unresolved (in a `select!`):
    /// nothing is lost that a later call would need.
    pub async fn left(&mut self) {
        let mut rest = [0u8; 64];
        let _ = self.reader.read(&mut rest).await;
    }

    async fn say(&mut self, line: &str) -> std::io::Result<()> {
        self.reader
            .get_mut()
            .write_all(format!("{line}\n").as_bytes())
            .await
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    pub(in crate::permission) const BASH: &[u8] =
        b"{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\"}}\n";

    /// A hook in this process: connected, its line written.
    pub(in crate::permission) async fn ask(socket: &Path, line: &[u8]) -> BufReader<UnixStream> {
        let mut hook = UnixStream::connect(socket).await.unwrap();
        hook.write_all(line).await.unwrap();
        BufReader::new(hook)
    }

    /// The next line the hook reads; empty once the connection is closed.
    pub(in crate::permission) async fn said(hook: &mut BufReader<UnixStream>) -> String {
        let mut line = String::new();
        // Bounded so that a hook never told fails the test instead of hanging it.
        tokio::time::timeout(Duration::from_secs(5), hook.read_line(&mut line))
            .await
            .expect("the hook was told within 5 s")
            .unwrap();
        line
    }

    fn uid() -> u32 {
        // SAFETY: getuid cannot fail.
        unsafe { libc::getuid() }
    }

    #[tokio::test]
    async fn a_live_trays_socket_is_left_to_it_and_a_dead_ones_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join("permission.sock");
        for place in [Dir::Tray, Dir::Relay] {
            let live = Hooks::bind(&path, uid(), place).unwrap();
            let refused = Hooks::bind(&path, uid(), place).err();
            assert!(matches!(refused, Some(Unbound::Answered)), "{refused:?}");
            // The first is gone without removing its socket: the next one takes it.
            drop(live);
            assert!(path.exists());
            Hooks::bind(&path, uid(), place).unwrap();
        }
    }

    #[tokio::test]
    async fn the_trays_own_directory_is_closed_to_others_and_the_relays_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let place = dir.path().join("lf-tray");
        let path = place.join("permission.sock");
        let open = || {
            std::fs::create_dir_all(&place).unwrap();
            std::fs::set_permissions(&place, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        open();
        let refused = Hooks::bind(&path, uid(), Dir::Relay).err();
        assert!(
            matches!(&refused, Some(Unbound::Failed(why)) if why.contains("only this user")),
            "{refused:?}"
        );
        assert!(!path.exists());
        Hooks::bind(&path, uid(), Dir::Tray).unwrap();
        let mode = std::fs::metadata(&place).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Someone else's directory is nobody's to listen in.
        let refused = Hooks::bind(&path, uid() + 1, Dir::Tray).err();
        assert!(matches!(refused, Some(Unbound::Failed(_))), "{refused:?}");
    }

    /// A real socket and a hook in this process: what the hook reads, line by line.
    #[tokio::test]
    async fn a_hook_is_read_told_shown_then_answered_withdrawn_or_seen_to_leave() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join("permission.sock");
        let hooks = Hooks::bind(&path, uid(), Dir::Relay).unwrap();
        let ask = |line| ask(&path, line);
        let hooks = &hooks;
        let take = move || async move { hooks.next().await.unwrap().read().await };

        let mut hook = ask(BASH).await;
        let (mut there, request) = take().await.unwrap();
        assert_eq!(there.pid, std::process::id());
        assert_eq!(request.tool_input["command"], "ls");
        there.shown().await.unwrap();
        assert_eq!(said(&mut hook).await, "shown\n");
        there.answer(&Reply::Deny).await.unwrap();
        assert_eq!(said(&mut hook).await, "{\"reply\":\"deny\"}\n");
        assert_eq!(said(&mut hook).await, "", "closed after the answer");

        let mut hook = ask(BASH).await;
        let (there, _) = take().await.unwrap();
        there.withdraw();
        assert_eq!(
            said(&mut hook).await,
            "",
            "withdrawn: closed without a word"
        );

        let hook = ask(BASH).await;
        let (mut there, _) = take().await.unwrap();
        drop(hook);
        tokio::time::timeout(Duration::from_secs(5), there.left())
            .await
            .expect("the hook's leaving is seen");

        let _hook = ask(b"yes please\n").await;
        assert!(matches!(
            take().await,
            Err(NotAHook::Unreadable(Unreadable::NotJson(_)))
        ));
        // A peer that connects and says nothing is given up on, not waited for.
        let _mute = ask(b"").await;
        assert!(matches!(take().await, Err(NotAHook::Silent)));
    }
}
