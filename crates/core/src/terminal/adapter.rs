//! Each terminal's own way of being told "run this argv in that directory, in a new window".
//!
//! Sources, read for this module (versions in Debian 12 unless said otherwise):
//! - gnome-terminal(1) 3.46: `--working-directory=DIR`, and `--` ends the options with
//!   the program and its arguments after it (`-e`/`-x` are deprecated). Its client
//!   sends its own environment to the server (it has a `--no-environment` opt-out).
//! - Konsole 22.12 handbook: `--workdir DIR`, `-e` takes every following argument, and
//!   `--separate` runs a new process. Without it, a Konsole started with no controlling
//!   tty (ours: `setsid`) hands the request to the running instance, whose environment
//!   the new tab gets instead of ours (see `shouldUseNewProcess` in its `main.cpp`).
//! - xfce4-terminal(1) 1.0: `--working-directory=DIR`, `-x` runs the rest of the command
//!   line (`-e` takes ONE string). `--disable-server`, because its D-Bus `Launch` call
//!   carries argv and display only, not our environment.
//! - kitty(1) 0.26: `--directory DIR` then the program; its parser ends options at `--`.
//! - alacritty(1) 0.11: `--working-directory DIR`, `-e` takes the rest.
//! - WezTerm docs (`wezterm start`): `--cwd DIR`, program after `--`;
//!   `--always-new-process` keeps it from handing the command to a running GUI, where
//!   it is not documented whose environment the command would get.
//! - foot(1) 1.13: `--working-directory=DIR`, trailing arguments are the command; `--`
//!   stops getopt from reading a later `-x` as one of foot's options.
//! - Ghostty docs: `--working-directory=DIR` (the `=` is required), `-e` takes the rest
//!   and, since 1.2, execs it directly (before 1.2 it joined the words for `/bin/sh -c`,
//!   so words with spaces or shell syntax broke). Any argument disables its GTK
//!   single-instance mode, so the window gets our environment.
//! - tilix(1) 1.9: `--working-directory=DIR`; `-e` takes ONE string that it splits again
//!   with shell rules (GLib's `g_shell_parse_argv`), so each word is [`shell_quote`]d.
//!   `--new-process`, as a running Tilix would otherwise run the command with its own
//!   environment instead of ours (seen: an inherited `LF_RUN_ID` came back).
//! - xterm(1) 379: `-e program args…`, last option; no directory option, so the
//!   directory is the child's current directory.
//! - tmux(1) 3.3: `new-window -c DIR -- command args…`; with more than one word tmux
//!   execs them without a shell. See [`Adapter::Tmux`] for the environment and `-c`.
//! - xdg-terminal-exec (reference implementation): the command after its options;
//!   `-e` is accepted and dropped by old and new versions alike, and ends the options of
//!   new ones. Old versions have no `--dir=`, so the directory is our current directory.
//! - x-terminal-emulator (Debian policy 11.8.3) and `$TERMINAL`: the `-e program args…`
//!   convention.

use super::{shell_quote, Env, SCRUBBED_VARS};
use crate::lf::home::STORE_VARS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Adapter {
    GnomeTerminal,
    Konsole,
    Xfce4Terminal,
    Kitty,
    Alacritty,
    WezTerm,
    Foot,
    Ghostty,
    Tilix,
    Xterm,
    /// A new window in the RUNNING tmux server (found through `$TMUX`). The window's
    /// process is started by the server, with the server's environment, not ours, so
    /// our store variables (`LF_HOME`, …) are passed with `-e NAME=VALUE` (tmux 3.0;
    /// not format-expanded), and the command is wrapped in
    /// `sh -c 'unset LF_RUN_ID … <store variables we lack>; exec "$@"'` with the argv as
    /// positional parameters (nothing is parsed by the shell). tmux expands formats in
    /// `-c`, where `#(…)` would run a command, so every `#` of the directory is doubled.
    Tmux,
    XdgTerminalExec,
    XTerminalEmulator,
    /// A terminal we know nothing about (`$TERMINAL`, or a name the user typed): the
    /// `-e program args…` convention most terminals share.
    DashE,
}

/// The terminals Auto looks for on PATH after `$TERMINAL`, tmux, xdg-terminal-exec,
/// x-terminal-emulator and the desktop's own: terminals people install on purpose
/// first, then the desktops' defaults, xterm last (often there only as a dependency).
pub(super) const FALLBACK_ORDER: [&str; 9] = [
    "kitty",
    "wezterm",
    "alacritty",
    "ghostty",
    "foot",
    "gnome-terminal",
    "konsole",
    "xfce4-terminal",
    "xterm",
];

impl Adapter {
    const NAMED: [Adapter; 13] = [
        Adapter::GnomeTerminal,
        Adapter::Konsole,
        Adapter::Xfce4Terminal,
        Adapter::Kitty,
        Adapter::Alacritty,
        Adapter::WezTerm,
        Adapter::Foot,
        Adapter::Ghostty,
        Adapter::Tilix,
        Adapter::Xterm,
        Adapter::Tmux,
        Adapter::XdgTerminalExec,
        Adapter::XTerminalEmulator,
    ];

    /// The program name the adapter is for; `None` for [`Adapter::DashE`].
    pub(super) fn name(self) -> Option<&'static str> {
        Some(match self {
            Adapter::GnomeTerminal => "gnome-terminal",
            Adapter::Konsole => "konsole",
            Adapter::Xfce4Terminal => "xfce4-terminal",
            Adapter::Kitty => "kitty",
            Adapter::Alacritty => "alacritty",
            Adapter::WezTerm => "wezterm",
            Adapter::Foot => "foot",
            Adapter::Ghostty => "ghostty",
            Adapter::Tilix => "tilix",
            Adapter::Xterm => "xterm",
            Adapter::Tmux => "tmux",
            Adapter::XdgTerminalExec => "xdg-terminal-exec",
            Adapter::XTerminalEmulator => "x-terminal-emulator",
            Adapter::DashE => return None,
        })
    }

    /// The adapter for a program given by name or path (`kitty`, `/opt/bin/kitty`).
    pub(super) fn for_program(program: &str) -> Adapter {
        let file_name = program.rsplit('/').next().unwrap_or(program);
        Adapter::NAMED
            .into_iter()
            .find(|adapter| adapter.name() == Some(file_name))
            .unwrap_or(Adapter::DashE)
    }

    /// The terminal's own arguments around `argv`, for a window starting in `cwd`.
    pub(super) fn args(self, cwd: &str, argv: &[String], env: &Env) -> Vec<String> {
        let dir_eq = |flag: &str| format!("{flag}={cwd}");
        let mut args = match self {
            Adapter::GnomeTerminal => vec![dir_eq("--working-directory"), "--".into()],
            Adapter::Konsole => strings(&["--separate", "--workdir", cwd, "-e"]),
            Adapter::Xfce4Terminal => vec![
                "--disable-server".into(),
                dir_eq("--working-directory"),
                "-x".into(),
            ],
            Adapter::Kitty => strings(&["--directory", cwd, "--"]),
            Adapter::Alacritty => strings(&["--working-directory", cwd, "-e"]),
            Adapter::WezTerm => strings(&["start", "--always-new-process", "--cwd", cwd, "--"]),
            Adapter::Foot => vec![dir_eq("--working-directory"), "--".into()],
            Adapter::Ghostty => vec![dir_eq("--working-directory"), "-e".into()],
            Adapter::Tilix => {
                let command: Vec<String> = argv.iter().map(|word| shell_quote(word)).collect();
                return vec![
                    "--new-process".into(),
                    dir_eq("--working-directory"),
                    "-e".into(),
                    command.join(" "),
                ];
            }
            Adapter::Xterm
            | Adapter::XdgTerminalExec
            | Adapter::XTerminalEmulator
            | Adapter::DashE => strings(&["-e"]),
            Adapter::Tmux => {
                let mut args = strings(&["new-window", "-c", &cwd.replace('#', "##")]);
                let mut unset: Vec<&str> = SCRUBBED_VARS.to_vec();
                for name in STORE_VARS {
                    match env.get(name).and_then(|v| v.to_str()) {
                        Some(value) => args.extend(["-e".into(), format!("{name}={value}")]),
                        None => unset.push(name),
                    }
                }
                let scrub = format!("unset {}; exec \"$@\"", unset.join(" "));
                args.extend(strings(&["--", "/bin/sh", "-c", &scrub, "sh"]));
                args
            }
        };
        args.extend(argv.iter().cloned());
        args
    }

    /// Whether the terminal needs our `$TMUX` (to find the server). Every other one
    /// opens a window outside tmux, where an inherited `$TMUX` would mislead.
    pub(super) fn talks_to_tmux(self) -> bool {
        self == Adapter::Tmux
    }
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The terminals that come with a desktop, for `$XDG_CURRENT_DESKTOP` (a `:` list such
/// as `ubuntu:GNOME`): tried before [`FALLBACK_ORDER`], as the one the user sees daily.
/// sway's and Hyprland's sample configs open foot and kitty.
pub(super) fn desktop_terminals(desktops: &str) -> Vec<&'static str> {
    desktops
        .split(':')
        .filter_map(|desktop| match desktop.to_ascii_lowercase().as_str() {
            "gnome" | "unity" | "budgie" => Some("gnome-terminal"),
            "kde" => Some("konsole"),
            "xfce" => Some("xfce4-terminal"),
            "sway" => Some("foot"),
            "hyprland" => Some("kitty"),
            _ => None,
        })
        .collect()
}
