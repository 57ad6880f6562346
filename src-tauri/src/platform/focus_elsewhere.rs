//! Go to terminal where the tray cannot find or focus another app's window (macOS and
//! Windows, not built or tested here): the session is reached the way lf offers.

use lf_tray_core::terminal::place::Terminals;
use lf_tray_core::SessionRecord;

#[allow(dead_code)] // the same shape as the Linux module's, which focuses
pub enum Went {
    There(std::time::Duration),
    Not(lf_tray_surface::route::Unreached),
}

pub fn go(_record: &SessionRecord, _terminals: &Terminals) -> Went {
    Went::Not(lf_tray_surface::route::Unreached::Unsupported)
}

pub fn can_focus() -> bool {
    false
}

pub fn where_it_runs(_record: &SessionRecord, _terminals: &Terminals) -> Option<String> {
    None
}

/// No window can be found here: the looking-at gate always hears "cannot say".
pub struct Desk;

impl Desk {
    pub fn open(_terminals: Terminals) -> Desk {
        Desk
    }
}

impl lf_tray_surface::looking::Screen for Desk {
    fn active(&self) -> Option<u32> {
        None
    }

    fn place(&self, _record: &SessionRecord) -> Option<lf_tray_surface::looking::Place> {
        None
    }

    fn pane_active(&self, _pane: &str) -> bool {
        false
    }

    fn tab_shown(&self, _tab: &lf_tray_core::terminal::tab::Tab) -> Option<bool> {
        None
    }
}
