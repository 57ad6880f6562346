//! tmux, through its command line: which panes and clients there are, selecting a pane,
//! and whether one is active.

use super::*;
use lf_tray_core::terminal::place::{Pane, TmuxClient};

/// The panes and clients of the tmux server the tray would talk to (`$TMUX`, else
/// the default socket); none when there is no server.
pub(super) fn state() -> (Vec<Pane>, Vec<TmuxClient>) {
    let panes = run("tmux", &["list-panes", "-a", "-F", PANE_FORMAT]).unwrap_or_default();
    let clients = run("tmux", &["list-clients", "-F", CLIENT_FORMAT]).unwrap_or_default();
    (place::parse_panes(&panes), place::parse_clients(&clients))
}

pub(super) fn select(pane: &Pane, client: Option<&TmuxClient>) -> Result<(), String> {
    run("tmux", &["select-window", "-t", &pane.window])?;
    run("tmux", &["select-pane", "-t", &pane.pane])?;
    if let Some(client) = client {
        run(
            "tmux",
            &["switch-client", "-c", &client.tty, "-t", &pane.pane],
        )?;
    }
    Ok(())
}

/// Whether the pane is its window's active pane in its session's current window.
pub(super) fn is_active(pane: &str) -> bool {
    run(
        "tmux",
        &[
            "display-message",
            "-p",
            "-t",
            pane,
            "#{pane_active}#{window_active}",
        ],
    )
    .is_ok_and(|out| out.trim() == "11")
}
