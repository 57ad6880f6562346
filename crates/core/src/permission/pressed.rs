//! `lf-tray answer allow|deny|open [SESSION]` and the running tray: a socket beside the
//! hooks' ([`super::socket_path`]'s directory, only this user's; each peer checked by its
//! credentials as a hook's is, [`super::socket`]). The command writes one [`Pressed`] line;
//! the tray answers one [`Told`] line once its desk has taken it, and closes. What a key
//! means is the surface's (`lf_tray_surface::keys`); this is only its carrier.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The socket's name under `$XDG_RUNTIME_DIR/lf-tray/`.
const SOCKET: &str = "answer.sock";

/// The longest line either side reads: a key's word and a session's token are a few dozen
/// bytes; this bounds a peer that is neither.
pub const MAX_LINE: usize = 4096;

/// How long the command waits for the tray's word. The desk takes a key in the time of one
/// step (milliseconds); a tray silent this long is stuck, and the command says so rather
/// than hang a key binding.
pub const WAIT: Duration = Duration::from_secs(5);

/// Where the tray listens for the command: `$XDG_RUNTIME_DIR/lf-tray/answer.sock`.
pub fn socket_path(runtime_dir: Option<PathBuf>) -> Option<PathBuf> {
    super::socket_path(runtime_dir).map(|hooks| hooks.with_file_name(SOCKET))
}

/// A key pressed: its word (`allow`, `deny`, `open`), for the session named or, without
/// one, the newest request whose popup the person was shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pressed {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// What the tray did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Told {
    /// Sent (the reply's word, or `open`).
    Done(String),
    /// Nothing was done: why, one line for the person.
    Not(String),
}

impl Told {
    pub fn line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Press `pressed` on the tray listening at `socket`: what it did, or why nothing was done
/// (no tray, a stuck one, or the tray's own reason).
pub fn press(socket: &Path, pressed: &Pressed) -> Result<String, String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| {
        format!(
            "no Loopflow Tray answers on {} ({e}): is it running?",
            socket.display()
        )
    })?;
    let line = serde_json::to_string(pressed).map_err(|e| e.to_string())?;
    let lost = |e: std::io::Error| format!("the tray did not answer: {e}");
    stream.set_read_timeout(Some(WAIT)).map_err(lost)?;
    stream
        .write_all(format!("{line}\n").as_bytes())
        .map_err(lost)?;
    let mut told = String::new();
    BufReader::new(stream.take(MAX_LINE as u64))
        .read_line(&mut told)
        .map_err(lost)?;
    match serde_json::from_str::<Told>(told.trim_end()) {
        Ok(Told::Done(word)) => Ok(word),
        Ok(Told::Not(why)) => Err(one_line(&why)),
        Err(_) if told.is_empty() => Err("the tray closed without an answer".into()),
        Err(e) => Err(format!("the tray's answer is unreadable: {e}")),
    }
}

/// The tray's reason as one line, whatever it holds.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::socket::{Dir, Hooks};

    fn uid() -> u32 {
        // SAFETY: getuid cannot fail.
        unsafe { libc::getuid() }
    }

    #[test]
    fn the_socket_is_beside_the_hooks() {
        assert_eq!(
            socket_path(Some("/run/user/7".into())),
            Some(PathBuf::from("/run/user/7/lf-tray/answer.sock"))
        );
        assert_eq!(socket_path(Some("relative".into())), None);
        assert_eq!(socket_path(None), None);
    }

    /// A real socket: the command's line reaches the tray's end whole and peer-checked,
    /// and the tray's word, or its reason, comes back to the command.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_key_reaches_the_tray_and_its_word_or_reason_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join(SOCKET);
        let none = press(
            &path,
            &Pressed {
                key: "allow".into(),
                session: None,
            },
        );
        assert!(none.unwrap_err().contains("is it running?"));
        let listening = Hooks::bind(&path, uid(), Dir::Tray).unwrap();
        let tray = tokio::spawn(async move {
            let mut seen = Vec::new();
            for told in [
                Told::Done("allow".into()),
                Told::Not("Nothing\nwaits.".into()),
            ] {
                let (hook, line) = listening.next().await.unwrap().line().await.unwrap();
                assert_eq!(hook.pid, std::process::id());
                seen.push(serde_json::from_slice::<Pressed>(&line).unwrap());
                hook.say_last(&told.line()).await.unwrap();
            }
            seen
        });
        let command = path.clone();
        let (first, second) = tokio::task::spawn_blocking(move || {
            let allow = Pressed {
                key: "allow".into(),
                session: None,
            };
            let deny = Pressed {
                key: "deny".into(),
                session: Some("S-1".into()),
            };
            (press(&command, &allow), press(&command, &deny))
        })
        .await
        .unwrap();
        assert_eq!(first, Ok("allow".into()));
        assert_eq!(second, Err("Nothing waits.".into()));
        let seen = tray.await.unwrap();
        assert_eq!(seen[1].session.as_deref(), Some("S-1"));
        assert_eq!(seen[0].session, None);
    }
}
