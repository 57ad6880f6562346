//! Whether the person is at the desk: not followed on this platform (not built here), so
//! pushes take the person as present and push only when set to always.

use std::time::Duration;

use tokio::sync::watch;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub desk: lf_tray_surface::push::Desk,
    pub lock_by: String,
    pub idle_by: String,
}

impl Seen {
    pub fn settled(&self) -> bool {
        true
    }

    pub fn describe(&self) -> String {
        "Nothing tells Loopflow Tray on this platform whether you are away: nothing is pushed \
         unless you choose always."
            .into()
    }
}

pub struct Following {
    pub seen: watch::Receiver<Seen>,
    _said: watch::Sender<Seen>,
}

pub fn follow(_away_after: Duration) -> Following {
    let (said, seen) = watch::channel(Seen::default());
    Following { seen, _said: said }
}
