//! What Loopflow Tray tells the person, and when, with no desktop dependency: the popups'
//! words (`notice`), the policy that decides when they show and go (`policy`, time passed
//! in, beside the core's memory of what was told), the grouping the tray and the window
//! show (`board`), the window's rows and buttons, worded for a page that only draws
//! (`window`, `buttons`), the tray's menu and icon (`menu`) and whether a tray shows it
//! (`tray_host`), whether the person is looking at a session's terminal so no popup is
//! needed (`looking`), what is pushed to the person's phone while they are away
//! (`push`), and the agents' requests that wait for an answer (`requests`), held with the
//! popups' policy at one desk (`desk`), which decides what a request and a popup's button
//! mean. The shell delivers popups over D-Bus and draws the tray and the window;
//! everything it decides about them is here, tested without a display.

pub mod answer;
pub mod board;
pub mod buttons;
pub mod desk;
pub mod keys;
pub mod looking;
pub mod menu;
pub mod notice;
pub mod phone;
pub mod policy;
pub mod push;
pub mod requests;
pub mod route;
pub mod rows;
pub mod settings;
pub mod tray_host;
pub mod view;
pub mod window;

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
