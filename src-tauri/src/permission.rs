//! Answer from the popup: the tray's side of Claude Code's `PermissionRequest` hook
//! (`lf_tray_core::permission`). The hook reaches the tray over a socket in
//! `$XDG_RUNTIME_DIR/lf-tray/` (a directory only this user can enter; each connection's
//! peer checked by its credentials), and the tray either declines at once — popups held
//! back, a request it cannot tie to a session, the person looking at the agent's own
//! terminal, a question it cannot read whole — or shows the session's popup (Allow and
//! Deny; a question's options; a plan's Approve plan and Keep planning) and waits.
//!
//! One answer per request: the first that answers what was asked (from the popup or the
//! window's card) takes the request; the hook going away (Claude ended it: the terminal answered first) or
//! lf's attention leaving `waiting` withdraws it, its popup and its buttons.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lf_tray_core::permission::{self, Client, SHOWN};
use lf_tray_core::terminal::place::Processes;
use lf_tray_core::SessionRecord;
use lf_tray_surface::desk::{self, HookId, Input, ToHook};
use lf_tray_surface::looking;
use lf_tray_surface::policy::Focus;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use crate::shell::{Shell, ToDesk};

/// How long a connected hook may take to send its request: it writes it at once, from
/// memory; a peer slower than this is not a hook.
const READ_WAIT: Duration = Duration::from_secs(1);

/// Listen for the hook while the tray runs. Without `$XDG_RUNTIME_DIR`, or where the
/// socket's directory is not this user's alone, there is no listening: the hook then
/// finds no tray and leaves the terminal's prompt alone.
pub(crate) async fn serve(shell: Arc<Shell>) {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
    let Some(path) = permission::socket_path(runtime) else {
        tracing::info!("PERMISSION no $XDG_RUNTIME_DIR: answering from the popup is off");
        return;
    };
    let listener = match bind(&path) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::warn!("PERMISSION cannot listen on {}: {e}", path.display());
            return;
        }
    };
    tracing::info!("PERMISSION listening on {}", path.display());
    while let Ok((stream, _)) = listener.accept().await {
        tauri::async_runtime::spawn(take(Arc::clone(&shell), stream));
    }
}

fn bind(path: &Path) -> std::io::Result<UnixListener> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    // The directory also holds the popups' icon, written with the umask's mode: a
    // directory of this user's own is closed to others before the socket goes in.
    if meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is not a directory only this user can enter",
            dir.display()
        )));
    }
    // A socket a live tray answers on is that tray's (the demo, or a second tray started
    // with another home, runs beside the person's own): taking it would leave the person's
    // tray deaf to its hooks until it restarts. One that refuses was left by a tray that
    // did not end cleanly.
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(std::io::Error::other(format!(
            "another Loopflow Tray already answers on {}",
            path.display()
        )));
    }
    let _ = std::fs::remove_file(path);
    UnixListener::bind(path)
}

async fn take(shell: Arc<Shell>, stream: UnixStream) {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let pid = match stream.peer_cred() {
        Ok(cred) if cred.uid() == uid => cred.pid(),
        Ok(cred) => {
            tracing::warn!("PERMISSION refused a connection from uid {}", cred.uid());
            return;
        }
        Err(e) => {
            tracing::warn!("PERMISSION no peer credentials: {e}");
            return;
        }
    };
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut bounded = (&mut reader).take(permission::MAX_REQUEST as u64 + 1);
    let read = bounded.read_until(b'\n', &mut line);
    let request = match tokio::time::timeout(READ_WAIT, read).await {
        Ok(Ok(_)) => permission::read_request(line.trim_ascii_end()),
        _ => return,
    };
    let Ok(request) = request else {
        tracing::info!("PERMISSION no popup: an unreadable request");
        return;
    };
    let Some(pid) = pid.and_then(|p| u32::try_from(p).ok()) else {
        return;
    };
    let on = answering(&shell.settings(), request.client);
    // The desk decides; the shell finds only what the desk cannot: the session whose agent
    // asks, and where the person looks. A request refused anyway is refused before that.
    let found = async {
        desk::takes(&request, on, shell.held_back().as_deref())?;
        find(&shell, pid).await
    }
    .await;
    let (record, focus) = match found {
        Ok(found) => found,
        Err(why) => {
            tracing::info!("PERMISSION no popup for pid {pid}: {why}");
            return;
        }
    };
    let hook = next_hook();
    let (to_hook, mut news) = mpsc::unbounded_channel();
    let ask = Input::Ask {
        hook,
        record,
        request,
        on,
        focus,
    };
    shell.send(ToDesk::Hook(ask, to_hook));
    match news.recv().await {
        Some(ToHook::Taken) => {}
        Some(ToHook::Refused(why)) => {
            tracing::info!("PERMISSION no popup for pid {pid}: {why}");
            return;
        }
        _ => return,
    }
    if reader
        .get_mut()
        .write_all(format!("{SHOWN}\n").as_bytes())
        .await
        .is_err()
    {
        tracing::info!("PERMISSION pid {pid}: the hook left before it was shown");
        shell.tell(Input::HookEnded(hook));
        return;
    }
    let mut rest = [0u8; 64];
    tokio::select! {
        news = news.recv() => match news {
            Some(ToHook::Answer(reply)) => {
                let sent = reader.get_mut().write_all(format!("{}\n", reply.line()).as_bytes()).await;
                if sent.is_err() {
                    tracing::info!("PERMISSION pid {pid}: the hook was gone before its answer");
                }
            }
            // Withdrawn (lf's attention left `waiting`, or a newer request): the hook gets
            // no answer, and the terminal's prompt stands.
            _ => tracing::info!("PERMISSION pid {pid}: withdrawn"),
        },
        // The hook went away or spoke out of turn: Claude ended it, the terminal answered.
        _ = reader.read(&mut rest) => shell.tell(Input::HookEnded(hook)),
    }
}

/// Numbers the hooks' requests for the desk, which knows each by its number: this
/// machine's and the other machines' (`remote_answer`) from one count.
static NEXT_HOOK: AtomicU64 = AtomicU64::new(1);

pub(crate) fn next_hook() -> HookId {
    HookId(NEXT_HOOK.fetch_add(1, Ordering::Relaxed))
}

/// What only the shell can find for the desk: the session whose agent is the hook's
/// nearest listed ancestor, and whether the person looks at that agent's own terminal.
async fn find(shell: &Arc<Shell>, pid: u32) -> Result<(SessionRecord, Focus), String> {
    let sessions = shell.engine.sessions();
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let chain = Processes::read(Path::new("/proc"), uid).ancestors(pid);
    let record = permission::requester(&chain, &sessions)
        .cloned()
        .ok_or_else(|| format!("no listed agent above it (ancestors {chain:?})"))?;
    let terminals = shell.terminals.now();
    let looked = record.clone();
    let focus = tokio::task::spawn_blocking(move || {
        looking::looking_at(&looked, &crate::platform::focus::Desk::open(terminals))
    })
    .await
    .unwrap_or(Focus::Unknown);
    Ok((record, focus))
}

/// Put the tray's `PermissionRequest` hook into the agent's hooks (`on`) — Claude Code's
/// settings, or Codex's `hooks.json` — or take exactly it out; the sentence for the person
/// when the file was left alone.
#[cfg(unix)]
pub(crate) fn agent_hook(client: Client, on: bool) -> Result<(), String> {
    use lf_tray_core::permission::claude_settings::{self, Applied};
    let var = |name: &str| std::env::var_os(name).map(std::path::PathBuf::from);
    let path = match client {
        Client::Claude => claude_settings::path(var("CLAUDE_CONFIG_DIR"), dirs::home_dir()),
        Client::Codex => claude_settings::codex_path(var("CODEX_HOME"), dirs::home_dir()),
    }
    .ok_or_else(|| {
        format!(
            "No home directory, so no {} hooks to add to.",
            client.name()
        )
    })?;
    let command = if on {
        let program = std::env::current_exe()
            .map_err(|e| format!("Could not find lf-tray's own path for the hook: {e}"))?;
        Some(claude_settings::command(&program, client))
    } else {
        None
    };
    match claude_settings::apply(&path, command.as_deref()) {
        Ok(Applied::Written) => {
            tracing::info!(
                "AGENT_HOOK {} {} in {}",
                client.name(),
                if on { "added" } else { "removed" },
                path.display()
            );
            Ok(())
        }
        Ok(Applied::Unchanged) => Ok(()),
        Err(refusal) => Err(format!(
            "Answering {} from the popup: {refusal}",
            client.name()
        )),
    }
}

/// Whether the person answers this agent's requests from the popup.
pub(crate) fn answering(settings: &lf_tray_surface::settings::Settings, client: Client) -> bool {
    match client {
        Client::Claude => settings.answer_from_popup,
        Client::Codex => settings.answer_codex_from_popup,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_live_trays_socket_is_left_to_it_and_a_dead_ones_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lf-tray").join("permission.sock");
        let live = bind(&path).unwrap();
        let refused = bind(&path).expect_err("a second tray took a live tray's socket");
        assert!(
            refused.to_string().contains("another Loopflow Tray"),
            "{refused}"
        );
        // The first tray is gone without removing its socket: the next one takes it.
        drop(live);
        assert!(path.exists());
        bind(&path).unwrap();
    }
}
