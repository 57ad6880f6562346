//! Which tab (or pane) of a terminal window holds a session's client, as the terminal
//! itself names it, and how to ask the terminal to show it.
//!
//! kitty, WezTerm and Konsole tell each program they run where it is, in its
//! environment: `KITTY_WINDOW_ID` (+ `KITTY_LISTEN_ON`, the remote-control socket, when
//! the person turned it on), `WEZTERM_PANE` (+ `WEZTERM_UNIX_SOCKET`), and
//! `KONSOLE_DBUS_SERVICE` + `KONSOLE_DBUS_SESSION` (+ `KONSOLE_DBUS_WINDOW`). Those
//! variables are read from `/proc/<pid>/environ` of the person's own processes: they are
//! untrusted text, so they are parsed strictly here, and what goes into a command line
//! goes as one `--name=value` argument (a value that starts with `-` is never an option)
//! of a program run without a shell.

use super::place::{terminal_around, Processes};

/// A tab or pane inside a terminal window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tab {
    /// A kitty window (what kitty calls the terminal in a tab or split), and the socket
    /// kitty listens on for remote control, if it does.
    Kitty {
        window: u32,
        listen_on: Option<String>,
    },
    /// A WezTerm pane, and the mux socket of the GUI that holds it, if it said.
    WezTerm { pane: u32, socket: Option<String> },
    /// A Konsole session (`/Sessions/N`) of the Konsole on bus name `service`, and the
    /// window (`/Windows/M`) it was opened in (a tab dragged out since is elsewhere).
    Konsole {
        service: String,
        session: u32,
        window: Option<u32>,
    },
}

/// The tab of the terminal around `pid` (a session's lf client, or the tmux client
/// showing its pane): the variables of that terminal's kind, as the terminal set them
/// for its child, the process just below it in `pid`'s parents. Only the terminal's
/// own kind counts: an xterm started from inside kitty passes kitty's variables on to
/// everything it runs, and they name kitty's window, not the xterm's.
pub fn tab_of(processes: &Processes, pid: u32) -> Option<Tab> {
    let (terminal, name) = terminal_around(processes, pid)?;
    let chain = processes.ancestors(pid);
    let below = chain.iter().position(|p| *p == terminal)?;
    // Nearest to the terminal first: what it set, before anything below could change it.
    let var = |key: &str| {
        chain[..below].iter().rev().find_map(|p| {
            processes
                .get(*p)?
                .env
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        })
    };
    match name {
        "kitty" => Some(Tab::Kitty {
            window: number(&var("KITTY_WINDOW_ID")?)?,
            listen_on: var("KITTY_LISTEN_ON").filter(|v| !v.is_empty()),
        }),
        "WezTerm" => Some(Tab::WezTerm {
            pane: number(&var("WEZTERM_PANE")?)?,
            socket: var("WEZTERM_UNIX_SOCKET").filter(|v| !v.is_empty()),
        }),
        "konsole" => {
            let service = var("KONSOLE_DBUS_SERVICE").filter(|s| bus_name(s))?;
            let session = numbered(&var("KONSOLE_DBUS_SESSION")?, "/Sessions/")?;
            let window = var("KONSOLE_DBUS_WINDOW").and_then(|w| numbered(&w, "/Windows/"));
            Some(Tab::Konsole {
                service,
                session,
                window,
            })
        }
        _ => None,
    }
}

/// Digits only (no sign, no spaces), as the terminals write their ids.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `N` of `/Sessions/N` (or another prefix), nothing else.
fn numbered(path: &str, prefix: &str) -> Option<u32> {
    number(path.strip_prefix(prefix)?)
}

/// A D-Bus bus name as the specification allows it: a unique name (`:1.42`) or a
/// well-known one (`org.kde.konsole-4242`), at most 255 characters.
fn bus_name(name: &str) -> bool {
    let (unique, rest) = match name.strip_prefix(':') {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    let elements: Vec<&str> = rest.split('.').collect();
    name.len() <= 255
        && elements.len() >= 2
        && elements.iter().all(|e| {
            !e.is_empty()
                && e.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                && (unique || !e.as_bytes()[0].is_ascii_digit())
        })
}

/// How a tab is shown: a program to run (no shell), its arguments, and variables to
/// set for it; Konsole is asked over D-Bus instead (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Why a tab cannot be shown by a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCommand {
    /// kitty without a remote-control socket: only its own windows could ask it.
    KittyRemoteControlOff,
    /// Konsole: over D-Bus, see [`konsole_windows`].
    DBus,
}

pub fn command(tab: &Tab) -> Result<Command, NoCommand> {
    match tab {
        Tab::Kitty {
            listen_on: None, ..
        } => Err(NoCommand::KittyRemoteControlOff),
        Tab::Kitty {
            window,
            listen_on: Some(to),
        } => Ok(Command {
            argv: vec![
                "kitty".into(),
                "@".into(),
                format!("--to={to}"),
                "focus-window".into(),
                format!("--match=id:{window}"),
            ],
            env: Vec::new(),
        }),
        Tab::WezTerm { pane, socket } => Ok(Command {
            argv: vec![
                "wezterm".into(),
                "cli".into(),
                "activate-pane".into(),
                format!("--pane-id={pane}"),
            ],
            // `wezterm cli` finds the GUI's mux through this variable, as from a pane.
            env: socket
                .iter()
                .map(|s| ("WEZTERM_UNIX_SOCKET".to_string(), s.clone()))
                .collect(),
        }),
        Tab::Konsole { .. } => Err(NoCommand::DBus),
    }
}

/// How to ask which tab shows, where the terminal can be asked by a command: kitty's
/// `ls` (read by [`kitty_shows`]). WezTerm's answer is not known here (its `cli list`
/// is unverified), Konsole's is over D-Bus.
pub fn query(tab: &Tab) -> Option<Command> {
    match tab {
        Tab::Kitty {
            listen_on: Some(to),
            ..
        } => Some(Command {
            argv: vec![
                "kitty".into(),
                "@".into(),
                format!("--to={to}"),
                "ls".into(),
            ],
            env: Vec::new(),
        }),
        _ => None,
    }
}

/// Whether kitty shows `window` (a kitty window id): in the focused tab of its OS
/// window, and the focused one of that tab's splits, from `kitty @ ls` (kitty 0.26:
/// each tab's and each window's `is_focused`, the window's within its tab). `None`
/// when the answer does not list it.
pub fn kitty_shows(ls: &str, window: u32) -> Option<bool> {
    let value: serde_json::Value = serde_json::from_str(ls).ok()?;
    let field = |v: &serde_json::Value, key: &str| v.get(key).and_then(serde_json::Value::as_bool);
    for os_window in value.as_array()? {
        for tab in os_window.get("tabs")?.as_array()? {
            for w in tab.get("windows")?.as_array()? {
                if w.get("id").and_then(serde_json::Value::as_u64) == Some(u64::from(window)) {
                    return Some(field(tab, "is_focused")? && field(w, "is_focused")?);
                }
            }
        }
    }
    None
}

/// The windows (`/Windows/N`, as N) listed in the introspection XML of Konsole's
/// `/Windows` object (`<node name="1"/>`), in their order.
pub fn konsole_windows(xml: &str) -> Vec<u32> {
    xml.split("<node")
        .skip(1)
        .filter_map(|tag| {
            let value = tag.trim_start().strip_prefix("name=")?;
            let quote = value.chars().next().filter(|q| *q == '"' || *q == '\'')?;
            let value = &value[1..];
            number(&value[..value.find(quote)?])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::place::Process;
    use super::*;

    fn proc(pid: u32, ppid: u32, argv: &[&str], env: &[(&str, &str)]) -> Process {
        Process {
            pid,
            ppid,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            terminal_id: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    const KITTY: [(&str, &str); 2] = [
        ("KITTY_WINDOW_ID", "3"),
        ("KITTY_LISTEN_ON", "unix:/tmp/kitty-7"),
    ];

    #[test]
    fn kittys_window_is_what_kitty_set_for_its_child() {
        let v = Processes::new([
            proc(1, 0, &["/sbin/init"], &[]),
            proc(10, 1, &["/usr/bin/kitty"], &[]),
            proc(11, 10, &["bash"], &KITTY),
            // Something below changed the variable: kitty's own word wins.
            proc(12, 11, &["sh"], &[("KITTY_WINDOW_ID", "99")]),
            proc(13, 12, &["lf", "session", "connect", "S"], &[]),
        ]);
        let tab = tab_of(&v, 13).unwrap();
        assert_eq!(
            tab,
            Tab::Kitty {
                window: 3,
                listen_on: Some("unix:/tmp/kitty-7".into())
            }
        );
        assert_eq!(
            command(&tab).unwrap().argv,
            [
                "kitty",
                "@",
                "--to=unix:/tmp/kitty-7",
                "focus-window",
                "--match=id:3"
            ]
        );
    }

    #[test]
    fn kitty_without_remote_control_has_no_command() {
        let v = Processes::new([
            proc(10, 1, &["kitty"], &[]),
            proc(11, 10, &["lf"], &[("KITTY_WINDOW_ID", "2")]),
        ]);
        let tab = tab_of(&v, 11).unwrap();
        assert_eq!(command(&tab), Err(NoCommand::KittyRemoteControlOff));
    }

    #[test]
    fn another_terminals_variables_inherited_say_nothing() {
        // An xterm started from a kitty shell: its programs carry kitty's variables.
        let v = Processes::new([
            proc(10, 1, &["kitty"], &[]),
            proc(11, 10, &["bash"], &KITTY),
            proc(20, 11, &["xterm"], &KITTY),
            proc(21, 20, &["lf"], &KITTY),
        ]);
        assert_eq!(tab_of(&v, 21), None);
        // No terminal up the parents at all (a tmux server's pane).
        let v = Processes::new([
            proc(30, 1, &["tmux: server"], &[]),
            proc(31, 30, &["lf"], &KITTY),
        ]);
        assert_eq!(tab_of(&v, 31), None);
    }

    #[test]
    fn untrusted_values_are_parsed_strictly_and_never_become_options() {
        for bad in ["-1", "3 ", "+3", "", "3;rm", "0x3", "99999999999"] {
            let v = Processes::new([
                proc(10, 1, &["kitty"], &[]),
                proc(11, 10, &["lf"], &[("KITTY_WINDOW_ID", bad)]),
            ]);
            assert_eq!(tab_of(&v, 11), None, "{bad:?}");
        }
        // A socket that looks like an option stays the value of --to.
        let tab = Tab::Kitty {
            window: 1,
            listen_on: Some("--help".into()),
        };
        assert_eq!(command(&tab).unwrap().argv[2], "--to=--help");
        let konsole = |service: &str, session: &str| {
            let v = Processes::new([
                proc(10, 1, &["/usr/bin/konsole"], &[]),
                proc(
                    11,
                    10,
                    &["bash"],
                    &[
                        ("KONSOLE_DBUS_SERVICE", service),
                        ("KONSOLE_DBUS_SESSION", session),
                    ],
                ),
            ]);
            tab_of(&v, 11)
        };
        assert!(konsole(":1.1", "/Sessions/1").is_some());
        assert!(konsole("org.kde.konsole-4242", "/Sessions/12").is_some());
        for (service, session) in [
            ("--session", "/Sessions/1"),
            (":1.1", "/Sessions/-1"),
            (":1.1", "/Windows/1"),
            (":1.1", "/Sessions/1/.."),
            ("org..kde", "/Sessions/1"),
            ("org.kde konsole", "/Sessions/1"),
            ("2org.kde", "/Sessions/1"),
            ("konsole", "/Sessions/1"),
        ] {
            assert_eq!(konsole(service, session), None, "{service:?} {session:?}");
        }
    }

    #[test]
    fn konsoles_session_and_window_as_it_set_them() {
        // As konsole 22.12 sets them (read from a real one's child under Xvfb).
        let v = Processes::new([
            proc(10, 1, &["konsole", "--separate", "-e", "sh"], &[]),
            proc(
                11,
                10,
                &["sh"],
                &[
                    ("KONSOLE_DBUS_SERVICE", ":1.1"),
                    ("KONSOLE_DBUS_SESSION", "/Sessions/2"),
                    ("KONSOLE_DBUS_WINDOW", "/Windows/1"),
                ],
            ),
            proc(12, 11, &["lf", "session", "open", "S"], &[]),
        ]);
        let tab = tab_of(&v, 12).unwrap();
        assert_eq!(
            tab,
            Tab::Konsole {
                service: ":1.1".into(),
                session: 2,
                window: Some(1)
            }
        );
        assert_eq!(command(&tab), Err(NoCommand::DBus));
    }

    #[test]
    fn wezterms_pane_and_socket() {
        // Unverified against a real WezTerm (not in Debian 12): the variables and the
        // command line as its documentation gives them.
        let v = Processes::new([
            proc(10, 1, &["wezterm-gui"], &[]),
            proc(
                11,
                10,
                &["zsh"],
                &[
                    ("WEZTERM_PANE", "7"),
                    ("WEZTERM_UNIX_SOCKET", "/run/user/1000/wezterm/gui-sock-10"),
                ],
            ),
        ]);
        let tab = tab_of(&v, 11).unwrap();
        let command = command(&tab).unwrap();
        assert_eq!(
            command.argv,
            ["wezterm", "cli", "activate-pane", "--pane-id=7"]
        );
        assert_eq!(
            command.env,
            [(
                "WEZTERM_UNIX_SOCKET".to_string(),
                "/run/user/1000/wezterm/gui-sock-10".to_string()
            )]
        );
    }

    #[test]
    fn kitty_says_which_tab_shows() {
        // Two tabs, the second shown, as kitty 0.26 answers (trimmed).
        let ls = r#"[{"id": 1, "is_focused": true, "tabs": [
            {"id": 1, "is_focused": false, "windows": [{"id": 1, "is_focused": true}]},
            {"id": 2, "is_focused": true, "windows": [
                {"id": 2, "is_focused": false}, {"id": 3, "is_focused": true}]}]}]"#;
        assert_eq!(
            kitty_shows(ls, 1),
            Some(false),
            "its tab is not the shown one"
        );
        assert_eq!(
            kitty_shows(ls, 2),
            Some(false),
            "another split of the tab has it"
        );
        assert_eq!(kitty_shows(ls, 3), Some(true));
        assert_eq!(kitty_shows(ls, 4), None);
        assert_eq!(kitty_shows("not json", 1), None);
        let tab = Tab::Kitty {
            window: 1,
            listen_on: Some("unix:/k".into()),
        };
        assert_eq!(
            query(&tab).unwrap().argv,
            ["kitty", "@", "--to=unix:/k", "ls"]
        );
    }

    #[test]
    fn konsoles_windows_from_its_introspection() {
        let xml = r#"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<node>
  <interface name="org.freedesktop.DBus.Introspectable"/>
  <node name="1"/>
  <node name='3'/>
  <node name="x"/>
</node>"#;
        assert_eq!(konsole_windows(xml), [1, 3]);
    }
}
