//! Go to terminal where the tray cannot find or focus another app's window (macOS and
//! Windows, not built or tested here): the session is reached the way lf offers.

use lf_tray_core::terminal::place::Terminals;
use lf_tray_core::SessionRecord;

#[allow(dead_code)] // the same shape as the Linux module's, which focuses
pub enum Went {
    There(std::time::Duration),
    Not(String),
}

pub fn go(_record: &SessionRecord, _terminals: &Terminals) -> Went {
    Went::Not("Going back to a terminal is not supported on this system yet.".into())
}

pub fn can_focus() -> bool {
    false
}

pub fn where_it_runs(_record: &SessionRecord, _terminals: &Terminals) -> Option<String> {
    None
}

pub fn looking_at(_record: &SessionRecord, _terminals: &Terminals) -> bool {
    false
}
