//! Answer from the popup: the tray's side of Claude Code's `PermissionRequest` hook
//! (`lf_tray_core::permission`). The hook reaches the tray over a socket in
//! `$XDG_RUNTIME_DIR/lf-tray/` (a directory only this user can enter; each connection's
//! peer checked by its credentials: `lf_tray_core::permission::socket`, the relay's too),
//! and the tray either declines at once — popups held
//! back, a request it cannot tie to a session, the person looking at the agent's own
//! terminal, a question it cannot read whole — or shows the session's popup (Allow and
//! Deny; a question's options; a plan's Approve plan and Keep planning) and waits.
//!
//! One answer per request: the first that answers what was asked (from the popup or the
//! window's card) takes the request; the hook going away (Claude ended it: the terminal answered first) or
//! lf's attention leaving `waiting` withdraws it, its popup and its buttons.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lf_tray_core::permission::socket::{Arriving, Dir, Hooks, NotAHook, Unbound};
use lf_tray_core::permission::{self, Client};
use lf_tray_core::terminal::place::Processes;
use lf_tray_core::SessionRecord;
use lf_tray_surface::desk::{self, HookId, Input, ToHook};
use lf_tray_surface::looking;
use lf_tray_surface::policy::Focus;
use tokio::sync::mpsc;

use crate::shell::{Shell, ToDesk};

/// Listen for the hook while the tray runs. Without `$XDG_RUNTIME_DIR`, or where the
/// socket's directory is not this user's alone, there is no listening: the hook then
/// finds no tray and leaves the terminal's prompt alone.
pub(crate) async fn serve(shell: Arc<Shell>) {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
    let Some(path) = permission::socket_path(runtime) else {
        tracing::info!("PERMISSION no $XDG_RUNTIME_DIR: answering from the popup is off");
        return;
    };
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let hooks = match Hooks::bind(&path, uid, Dir::Tray) {
        Ok(hooks) => hooks,
        // The demo, or a second tray started with another home, runs beside the person's
        // own: the person's keeps its hooks.
        Err(Unbound::Answered) => {
            tracing::warn!(
                "PERMISSION cannot listen on {}: another Loopflow Tray already answers there",
                path.display()
            );
            return;
        }
        Err(Unbound::Failed(why)) => {
            tracing::warn!("PERMISSION cannot listen on {}: {why}", path.display());
            return;
        }
    };
    tracing::info!("PERMISSION listening on {}", path.display());
    while let Some(arriving) = hooks.next().await {
        tauri::async_runtime::spawn(take(Arc::clone(&shell), arriving));
    }
}

async fn take(shell: Arc<Shell>, arriving: Arriving) {
    let (mut hook, request) = match arriving.read().await {
        Ok(read) => read,
        Err(why @ (NotAHook::Stranger(_) | NotAHook::Unknown(_))) => {
            tracing::warn!("PERMISSION {why}");
            return;
        }
        Err(why @ NotAHook::Unreadable(_)) => {
            tracing::info!("PERMISSION no popup: {why}");
            return;
        }
        Err(NotAHook::Silent) => return,
    };
    let pid = hook.pid;
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
    let id = next_hook();
    let (to_hook, mut news) = mpsc::unbounded_channel();
    let ask = Input::Ask {
        hook: id,
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
    if hook.shown().await.is_err() {
        tracing::info!("PERMISSION pid {pid}: the hook left before it was shown");
        shell.tell(Input::HookEnded(id));
        return;
    }
    tokio::select! {
        news = news.recv() => match news {
            Some(ToHook::Answer(reply)) => {
                if hook.answer(&reply).await.is_err() {
                    tracing::info!("PERMISSION pid {pid}: the hook was gone before its answer");
                }
            }
            // Withdrawn (lf's attention left `waiting`, or a newer request): the hook gets
            // no answer, and the terminal's prompt stands.
            _ => {
                hook.withdraw();
                tracing::info!("PERMISSION pid {pid}: withdrawn");
            }
        },
        // The hook went away or spoke out of turn: Claude ended it, the terminal answered.
        () = hook.left() => shell.tell(Input::HookEnded(id)),
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
    let terminals = shell.desktop.terminals.now();
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
