//! `lf-tray`: the tray app, and its headless forms for scripts and servers.
//!
//! `lf-tray` alone starts the tray; `lf-tray list` and `lf-tray watch` print sessions and
//! never touch a display, D-Bus or GTK.

// The same file as the app's (lib.rs): `setup` writes the extension in every build, the
// desktop-less one too, and the app reads and mends it; `fit` and `mend` go unused here.
#[allow(dead_code)]
mod gnome_extension;
mod headless;
mod setup;

/// The demo's stand-in lf, as a subcommand (see `main`).
#[cfg(feature = "demo")]
const DEMO_LF: &str = lf_tray::DEMO_LF;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use lf_tray_core::Generation;

const USAGE: &str = "\
Loopflow Tray: notifications and a tray menu for the lf sessions waiting on you.

Usage:
  lf-tray [--home DIR] [--lf PATH] [--remote DEST]… [--hidden]
                                                start the tray app
  lf-tray list [--json] [--home DIR] [--lf PATH]
                                                print the current sessions, sorted by title then id
  lf-tray watch [--json] [--home DIR] [--lf PATH]
                                                print a snapshot, then one line per change
  lf-tray demo [--generation e|d|a]             the tray app on a simulated Loopflow, for a first look
                                                (e, the default: today's lf; d: lf's October builds;
                                                a: the files and Approve/Iterate)
  lf-tray answer allow|deny|open [SESSION]
                                                answer the newest request whose popup showed (or
                                                SESSION's) in the running tray, as its keys do:
                                                allow (or approve a plan), deny (or keep planning),
                                                open (its terminal; a question's card); exit 1
                                                with the reason when nothing was answered
  lf-tray setup gnome-focus [--remove]         let the tray bring your terminal to the front on GNOME
                                                (Wayland): installs a small GNOME Shell extension,
                                                working from your next login; --remove takes it out
  lf-tray --help | --version [--verbose]         (--verbose: also the lf found and its generation)

Options:
  --home DIR   read lf's records from DIR (sets both LF_HOME and LF_CONTROL_HOME for lf)
  --lf PATH    the lf executable (default: $LF_BIN, then lf on PATH, then ~/.local/bin/lf)
  --json       machine-readable output: one JSON array (list), one JSON object per line (watch)
  --remote DEST
               also follow the sessions of another machine, an ssh destination (a Host
               from ~/.ssh/config, or user@host); repeatable; with list, watch and the app
  --hidden     start in the tray without showing the window (used by autostart)
  --lf-timeout SECONDS
               how long one lf call may take before it is stopped (default 10)
  --relist SECONDS
               how often `lf session list` runs with no change seen (default 60, at least 30)
  --lf-quiet SECONDS
               lf's quiet time before a silent agent counts as waiting (generation D;
               default 120, lf's own), for an lf built with another
";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    Tray {
        hidden: bool,
    },
    List {
        json: bool,
    },
    Watch {
        json: bool,
    },
    /// `--generation a|d|e`: which lf the demo plays.
    Demo {
        generation: Generation,
    },
    Help,
    /// `answer allow|deny|open [SESSION]`: a key for the running tray.
    Answer {
        key: String,
        session: Option<String>,
    },
    /// `setup gnome-focus [--remove]`.
    SetupGnomeFocus {
        remove: bool,
    },
    /// `--verbose`: also the lf it finds, and that lf's generation.
    Version {
        verbose: bool,
    },
}

#[derive(Debug, PartialEq)]
struct Invocation {
    command: Command,
    home: Option<PathBuf>,
    lf: Option<PathBuf>,
    timing: headless::Timing,
}

/// The switches that belong to one command or another, checked once all are read.
#[derive(Default)]
struct Switches {
    json: bool,
    hidden: bool,
    verbose: bool,
    remove: bool,
    generation: Option<Generation>,
}

fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Invocation, String> {
    let mut args = args.into_iter();
    let mut command = None;
    let mut switches = Switches::default();
    let (mut home, mut lf) = (None, None);
    let mut timing = headless::Timing::default();
    while let Some(arg) = args.next() {
        let Some(text) = arg.to_str() else {
            return Err(format!("unexpected argument {arg:?}"));
        };
        let mut value = |name: &str| {
            args.next()
                .map(PathBuf::from)
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match text {
            "--home" => home = Some(value("--home")?),
            "--lf" => lf = Some(value("--lf")?),
            "--lf-timeout" => timing.lf_timeout = Some(seconds(value("--lf-timeout")?)?),
            "--relist" => timing.relist = Some(seconds(value("--relist")?)?),
            "--lf-quiet" => timing.quiet = Some(seconds(value("--lf-quiet")?)?),
            "--remote" => timing.machines.push(destination(value("--remote")?)?),
            "--generation" => switches.generation = Some(generation(value("--generation")?)?),
            "--json" => switches.json = true,
            "--hidden" => switches.hidden = true,
            "--remove" => switches.remove = true,
            "setup" if command.is_none() => match args.next().as_ref().and_then(|a| a.to_str()) {
                Some("gnome-focus") => command = Some(Command::SetupGnomeFocus { remove: false }),
                _ => return Err("setup takes gnome-focus".into()),
            },
            "answer" if command.is_none() => command = Some(answer_key(args.next())?),
            // The session after `answer`'s key: a word that is not an option.
            session
                if !session.starts_with('-')
                    && matches!(command, Some(Command::Answer { session: None, .. })) =>
            {
                if let Some(Command::Answer { session: named, .. }) = &mut command {
                    *named = Some(session.to_string());
                }
            }
            "-h" | "--help" | "help" => command = Some(Command::Help),
            "-V" | "--version" => command = Some(Command::Version { verbose: false }),
            "-v" | "--verbose" => switches.verbose = true,
            "list" | "watch" | "demo" if command.is_none() => {
                command = Some(match text {
                    "list" => Command::List { json: false },
                    "watch" => Command::Watch { json: false },
                    _ => Command::Demo {
                        generation: Generation::E,
                    },
                })
            }
            other => {
                if let Some(v) = other.strip_prefix("--home=") {
                    home = Some(PathBuf::from(v));
                } else if let Some(v) = other.strip_prefix("--lf=") {
                    lf = Some(PathBuf::from(v));
                } else if let Some(v) = other.strip_prefix("--remote=") {
                    timing.machines.push(destination(PathBuf::from(v))?);
                } else {
                    return Err(format!("unexpected argument '{other}'"));
                }
            }
        }
    }
    Ok(Invocation {
        command: with_switches(command, switches)?,
        home,
        lf,
        timing,
    })
}

/// `answer` with its key; the session, if named, comes next.
fn answer_key(key: Option<OsString>) -> Result<Command, String> {
    match key.and_then(|a| a.into_string().ok()) {
        Some(key) if matches!(key.as_str(), "allow" | "deny" | "open") => {
            Ok(Command::Answer { key, session: None })
        }
        _ => Err("answer takes allow, deny or open".into()),
    }
}

/// `--generation`'s value.
fn generation(value: PathBuf) -> Result<Generation, String> {
    match value.to_str() {
        Some("a" | "A") => Ok(Generation::A),
        Some("d" | "D") => Ok(Generation::D),
        Some("e" | "E") => Ok(Generation::E),
        _ => Err(
            "--generation takes a (files, Approve/Iterate), d (October's lf) or e (today's lf)"
                .into(),
        ),
    }
}

/// The command read (the tray app when none was), given its switches; a switch that goes
/// with another command is refused.
fn with_switches(command: Option<Command>, switches: Switches) -> Result<Command, String> {
    let Switches {
        json,
        hidden,
        verbose,
        remove,
        generation,
    } = switches;
    let command = match command.unwrap_or(Command::Tray { hidden }) {
        Command::List { .. } => Command::List { json },
        Command::Watch { .. } => Command::Watch { json },
        Command::Tray { .. } | Command::Answer { .. } if json => {
            return Err("--json goes with list or watch".into())
        }
        Command::Demo { .. } => Command::Demo {
            // Today's lf: what a newcomer should see first.
            generation: generation.unwrap_or(Generation::E),
        },
        Command::Version { .. } => Command::Version { verbose },
        Command::SetupGnomeFocus { .. } => Command::SetupGnomeFocus { remove },
        _ if generation.is_some() => return Err("--generation goes with demo only".into()),
        other => other,
    };
    if verbose && !matches!(command, Command::Version { .. }) {
        return Err("--verbose goes with --version".into());
    }
    if remove && !matches!(command, Command::SetupGnomeFocus { .. }) {
        return Err("--remove goes with setup gnome-focus".into());
    }
    if hidden && !matches!(command, Command::Tray { .. }) {
        return Err("--hidden goes with the tray app only".into());
    }
    Ok(command)
}

/// An ssh destination for `--remote`; one that ssh would read as an option is refused.
fn destination(value: PathBuf) -> Result<String, String> {
    let text = value
        .to_str()
        .ok_or_else(|| format!("{} is not a machine", value.display()))?;
    lf_tray_core::machine::check_destination(text)?;
    Ok(text.to_string())
}

fn seconds(value: PathBuf) -> Result<std::time::Duration, String> {
    value
        .to_str()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("{} is not a number of seconds", value.display()))
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // `lf-tray demo-lf ARGS…` is the demo's stand-in lf (demo builds only; not in the usage):
    // the demo runs it through a two-line `lf` script of its own, first on the demo's PATH.
    #[cfg(feature = "demo")]
    if args.first().is_some_and(|arg| arg == DEMO_LF) {
        let argv = std::iter::once(OsString::from("lf")).chain(args[1..].iter().cloned());
        return ExitCode::from(lf_sim::cli::main(argv.collect()).clamp(0, 255) as u8);
    }
    // Claude Code's `PermissionRequest` hook (answer from the popup): never a usage error,
    // never exit 2 (Claude's blocking error), whatever it is given.
    if args
        .first()
        .is_some_and(|arg| arg == lf_tray_core::permission::claude_settings::SUBCOMMAND)
    {
        // Codex's entry says so; anything else after the subcommand is Claude's as before.
        let codex = args
            .get(1)
            .is_some_and(|arg| arg == lf_tray_core::permission::claude_settings::CODEX_FLAG);
        return permission_hook(if codex {
            lf_tray_core::permission::Client::Codex
        } else {
            lf_tray_core::permission::Client::Claude
        });
    }
    let invocation = match parse(args) {
        Ok(invocation) => invocation,
        Err(message) => {
            eprintln!("lf-tray: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match invocation.command {
        Command::Help => {
            print!("{USAGE}");
            Ok(())
        }
        Command::Version { verbose } => {
            println!("lf-tray {}", env!("CARGO_PKG_VERSION"));
            if verbose {
                headless::about_lf(invocation.home, invocation.lf, invocation.timing)
            } else {
                Ok(())
            }
        }
        Command::List { json } => {
            headless::list(invocation.home, invocation.lf, invocation.timing, json)
        }
        Command::Watch { json } => {
            headless::watch(invocation.home, invocation.lf, invocation.timing, json)
        }
        Command::Tray { hidden } => desktop(
            invocation.home,
            invocation.lf,
            invocation.timing.machines,
            hidden,
        ),
        Command::Demo { generation } => demo(generation),
        Command::Answer { key, session } => return answer(key, session),
        Command::SetupGnomeFocus { remove } => setup::gnome_focus(remove)
            .map(|said| println!("{said}"))
            .map_err(anyhow::Error::msg),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lf-tray: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `lf-tray answer KEY [SESSION]`: exit 0 once the tray answered (its word on stdout), 1
/// with the reason on stderr when nothing was.
fn answer(key: String, session: Option<String>) -> ExitCode {
    use lf_tray_core::permission::pressed;
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let Some(socket) = pressed::socket_path(runtime) else {
        eprintln!("lf-tray answer: no $XDG_RUNTIME_DIR, so no tray to reach");
        return ExitCode::FAILURE;
    };
    match pressed::press(&socket, &pressed::Pressed { key, session }) {
        Ok(word) => {
            println!("{word}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("lf-tray answer: {why}");
            ExitCode::FAILURE
        }
    }
}

/// `lf-tray permission-hook [--codex]`: the request on stdin, the agent's answer (or
/// nothing) on stdout, one line on stderr saying what happened (Claude shows it in its debug
/// output); exit 0.
fn permission_hook(client: lf_tray_core::permission::Client) -> ExitCode {
    // The tray's socket, or on a machine the tray follows over ssh, its watcher's.
    #[cfg(unix)]
    let socket = Some(lf_tray_core::permission::hook_socket_here());
    #[cfg(not(unix))]
    let socket = lf_tray_core::permission::socket_path(
        std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
    );
    // Claude's own state file for the client that runs the hook (its `CLAUDE_PID`).
    let claude = lf_tray_core::permission::moved_on::state_file(
        std::env::var_os("CLAUDE_PID").as_deref(),
        std::env::var_os("CLAUDE_CONFIG_DIR").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    );
    let said = lf_tray_core::permission::run_hook(
        client,
        std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        socket.as_deref(),
        claude.as_deref(),
    );
    eprintln!("lf-tray permission-hook: {said}");
    ExitCode::SUCCESS
}

#[cfg(feature = "desktop")]
fn desktop(
    home: Option<PathBuf>,
    lf: Option<PathBuf>,
    machines: Vec<String>,
    start_hidden: bool,
) -> anyhow::Result<()> {
    lf_tray::run_desktop(lf_tray::DesktopOptions {
        home,
        lf,
        start_hidden,
        machines,
    })
}

#[cfg(feature = "demo")]
fn demo(generation: Generation) -> anyhow::Result<()> {
    lf_tray::run_demo(generation)
}

#[cfg(all(feature = "desktop", not(feature = "demo")))]
fn demo(_: Generation) -> anyhow::Result<()> {
    anyhow::bail!("this lf-tray was built without the demo (feature `demo`); run scripts/demo.sh from a checkout")
}

#[cfg(not(feature = "desktop"))]
fn desktop(_: Option<PathBuf>, _: Option<PathBuf>, _: Vec<String>, _: bool) -> anyhow::Result<()> {
    anyhow::bail!("this lf-tray was built without the desktop app (feature `desktop`); `list` and `watch` work")
}

#[cfg(not(feature = "desktop"))]
fn demo(_: Generation) -> anyhow::Result<()> {
    desktop(None, None, Vec::new(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Invocation, String> {
        parse(line.split_whitespace().map(OsString::from))
    }

    #[test]
    fn command_lines() {
        assert_eq!(args("").unwrap().command, Command::Tray { hidden: false });
        assert_eq!(
            args("--hidden").unwrap().command,
            Command::Tray { hidden: true }
        );
        let list = args("list --json --home /h").unwrap();
        assert_eq!(list.command, Command::List { json: true });
        assert_eq!(list.home, Some(PathBuf::from("/h")));
        let watch = args("--lf=/x/lf watch").unwrap();
        assert_eq!(watch.command, Command::Watch { json: false });
        assert_eq!(watch.lf, Some(PathBuf::from("/x/lf")));
        assert_eq!(
            args("demo").unwrap().command,
            Command::Demo {
                generation: Generation::E
            }
        );
        assert_eq!(
            args("demo --generation a").unwrap().command,
            Command::Demo {
                generation: Generation::A
            }
        );
        assert_eq!(
            args("demo --generation d").unwrap().command,
            Command::Demo {
                generation: Generation::D
            }
        );
        assert_eq!(
            args("demo --generation e").unwrap().command,
            Command::Demo {
                generation: Generation::E
            }
        );
        assert!(args("demo --generation z").is_err());
        assert_eq!(args("list --help").unwrap().command, Command::Help);
        let answer = |key: &str, session: Option<&str>| Command::Answer {
            key: key.into(),
            session: session.map(String::from),
        };
        assert_eq!(args("answer allow").unwrap().command, answer("allow", None));
        assert_eq!(
            args("answer open S-1").unwrap().command,
            answer("open", Some("S-1"))
        );
        // A leading dash is never a session; one session only; the three words only.
        for wrong in [
            "answer",
            "answer yes",
            "answer -y",
            "answer deny -S1",
            "answer deny S1 S2",
            "answer allow --json",
        ] {
            assert!(args(wrong).is_err(), "{wrong}");
        }
        assert_eq!(
            args("setup gnome-focus").unwrap().command,
            Command::SetupGnomeFocus { remove: false }
        );
        assert_eq!(
            args("setup gnome-focus --remove").unwrap().command,
            Command::SetupGnomeFocus { remove: true }
        );
        assert_eq!(
            args("--version --verbose").unwrap().command,
            Command::Version { verbose: true }
        );
        let timed = args("watch --lf-timeout 0.5 --relist 45").unwrap();
        assert_eq!(
            timed.timing.lf_timeout,
            Some(std::time::Duration::from_millis(500))
        );
        assert_eq!(
            timed.timing.relist,
            Some(std::time::Duration::from_secs(45))
        );
        let remote = args("watch --json --remote box --remote=me@far").unwrap();
        assert_eq!(remote.timing.machines, ["box", "me@far"]);
        assert_eq!(args("--remote box").unwrap().timing.machines, ["box"]);
    }

    #[test]
    fn bad_usage_is_refused() {
        assert!(args("list --home").is_err());
        assert!(args("frobnicate").is_err());
        assert!(args("--json").is_err());
        assert!(args("list --hidden").is_err());
        assert!(args("list watch").is_err());
        assert!(args("watch --lf-timeout soon").is_err());
        assert!(args("watch --relist -1").is_err());
        assert!(args("list --verbose").is_err());
        assert!(args("setup").is_err());
        assert!(args("setup gnome").is_err());
        assert!(args("list --remove").is_err());
        let refused = args("watch --remote -oProxyCommand=sh").unwrap_err();
        assert!(refused.contains("cannot start with"), "{refused}");
        assert!(args("watch --remote").is_err());
    }
}
