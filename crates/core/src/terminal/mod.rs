//! Opening a session in the user's own terminal: the session's `open_argv`, run verbatim
//! in a NEW window of the terminal the user picked (or the first one found), starting in
//! the session's directory. "Move here" is the same with `--replace` appended by the
//! caller.
//!
//! What every launch does, whichever terminal:
//! - The argv is handed over as separate arguments wherever the terminal allows it;
//!   where only one command string can be given, every word is [`shell_quote`]d.
//! - The directory is both the terminal's own option and the child's current directory.
//!   A directory that is gone (or not absolute) is replaced by `$HOME`, else `/`: a
//!   terminal refuses to start in a missing directory, while `lf session open` finds the
//!   session's directory by itself. [`Opened::cwd`] says which directory was used.
//! - The variables in [`SCRUBBED_VARS`] are removed from the terminal's environment, or
//!   the new session would become a child of whatever Run the tray inherited. `LF_HOME`
//!   and the other store variables stay. So does `$TMUX`, for tmux only.
//! - The terminal is detached: null stdin/stdout/stderr, a session of its own
//!   (`setsid`), and a thread that waits for it so that no zombie is left behind.

mod adapter;
#[cfg(any(target_os = "macos", test))]
mod macos;
pub mod place;
pub mod tab;
mod template;
#[cfg(any(windows, test))]
mod windows;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub use crate::quote::{shell_quote, split_words};

/// The id of Loopflow Tray's GNOME Shell extension (`lf-tray setup gnome-focus`), the
/// directory it is installed in under `gnome-shell/extensions/`: what lets the tray focus
/// a terminal on GNOME's Wayland session.
pub const GNOME_FOCUS_EXTENSION: &str = "lf-tray-focus@loopflow.dev";

use crate::lf::record::SessionRecord;
use adapter::Adapter;

/// lf's Run context, which must not leak into a session the user opens (model §2.9).
/// `LF_TERMINAL_ID`/`LF_TERMINAL_TTY` name the terminal pane the tray was started from,
/// which is not the new window.
pub const SCRUBBED_VARS: [&str; 8] = {
    let run = crate::lf::home::RUN_CONTEXT_VARS;
    let mut all = ["LF_TERMINAL_ID"; 8];
    let mut i = 0;
    while i < run.len() {
        all[i] = run[i];
        i += 1;
    }
    all[7] = "LF_TERMINAL_TTY";
    all
};

/// Removed too, except for tmux itself: a window outside tmux is not inside the pane the
/// tray may have been started from.
const TMUX_VARS: [&str; 2] = ["TMUX", "TMUX_PANE"];

/// Which terminal to open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Choice {
    /// The first one found: `$TERMINAL`; tmux when `$TMUX` is set (the tray runs inside
    /// tmux, so that is where the user works); then on Linux xdg-terminal-exec,
    /// x-terminal-emulator, the desktop's own terminal (`$XDG_CURRENT_DESKTOP`), and
    /// kitty, wezterm, alacritty, ghostty, foot, gnome-terminal, konsole,
    /// xfce4-terminal, xterm. On macOS iTerm2 if installed, else Terminal.app; on
    /// Windows, Windows Terminal.
    #[default]
    Auto,
    /// A program name or absolute path (`kitty`, `/opt/kitty/bin/kitty`, `tmux`), or on
    /// macOS `Terminal` / `iTerm2`. An unknown name gets the `-e program args…` convention.
    Named(String),
    /// The user's own command line, with `{cwd}` and `{argv}` placeholders:
    /// 1. It is split into words as a shell would (quotes and backslashes, no expansion
    ///    of any kind); the first word is the program.
    /// 2. A word that is exactly `{argv}` becomes the session's argv, one argument per
    ///    item; a word that is exactly `{cwd}` becomes the directory, as one argument.
    /// 3. A placeholder inside a longer word is replaced by shell-quoted text: `{argv}`
    ///    by the whole command line (`/bin/lf session open 'ask 1'`), `{cwd}` by the
    ///    quoted directory, since such a word is meant for a shell:
    ///    `sh -c "cd {cwd} && exec {argv}"`. A directory of plain characters needs no
    ///    quotes, so `--dir={cwd}` works for it; for any directory write `--dir {cwd}`.
    /// 4. Text that came from the session is never searched for placeholders again.
    /// 5. A command without `{argv}` is refused: the session would never run.
    Custom(String),
}

/// What to run, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
}

impl Launch {
    /// The session's own `open_argv`, in its directory. An id that starts with `-` would
    /// be read by lf as an option, so one that lf's argv leaves bare gets `--` before it.
    pub fn for_session(record: &SessionRecord) -> Launch {
        let mut argv: Vec<String> = record.open_argv.iter().map(|w| w.to_string()).collect();
        let bare = argv.len() > 1 && !argv[1..].iter().any(|a| a == "--");
        if bare && argv.last().is_some_and(|id| id.starts_with('-')) {
            argv.insert(argv.len() - 1, "--".into());
        }
        Launch {
            argv,
            cwd: PathBuf::from(&record.cwd),
        }
    }

    /// "Move here": `lf session open --replace` stops the client in the other terminal.
    /// The flag goes before a `--`, where lf still reads it as one.
    pub fn replace(mut self) -> Launch {
        match self.argv.iter().skip(1).position(|a| a == "--") {
            Some(i) => self.argv.insert(i + 1, "--replace".into()),
            None => self.argv.push("--replace".into()),
        }
        self
    }
}

/// The environment a launch starts from: where programs are looked up (`PATH`), the
/// preferences read (`TERMINAL`, `TMUX`, `XDG_CURRENT_DESKTOP`, `HOME`), and what the
/// terminal inherits, less [`Plan::env_remove`]. Passed in so tests need not touch the
/// process environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<OsString, OsString>,
}

impl Env {
    pub fn from_process() -> Env {
        Env {
            vars: std::env::vars_os().collect(),
        }
    }

    pub fn set(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Env {
        self.vars.insert(name.into(), value.into());
        self
    }

    pub fn unset(mut self, name: impl AsRef<OsStr>) -> Env {
        self.vars.remove(name.as_ref());
        self
    }

    pub fn get(&self, name: impl AsRef<OsStr>) -> Option<&OsStr> {
        self.vars.get(name.as_ref()).map(OsString::as_os_str)
    }

    /// A setting: set, not empty, and text.
    fn setting(&self, name: &str) -> Option<&str> {
        self.get(name)
            .and_then(OsStr::to_str)
            .filter(|value| !value.is_empty())
    }
}

/// The exact command a launch runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The terminal's name, for messages: `kitty`, `tmux`, `Terminal.app`, `urxvt`.
    pub terminal: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The terminal's current directory, and the one it is told to open in.
    pub cwd: PathBuf,
    /// Variables removed from the environment the terminal inherits.
    pub env_remove: Vec<String>,
}

/// A terminal that was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub terminal: String,
    pub pid: u32,
    /// Where it opened: [`Launch::cwd`], unless that was missing and `$HOME` (or `/`)
    /// was used instead.
    pub cwd: PathBuf,
}

#[derive(Debug)]
pub enum TerminalError {
    /// No terminal could be found; `command` is what the user can run themselves.
    NotFound {
        tried: Vec<String>,
        /// A shell command line that runs the session in its directory, every word quoted.
        command: String,
    },
    Spawn {
        terminal: String,
        error: io::Error,
    },
    BadTemplate(String),
    EmptyArgv,
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TerminalError::NotFound { tried, command } => write!(
                f,
                "No terminal was found (looked for {}). Run this in a terminal:\n{command}",
                tried.join(", ")
            ),
            TerminalError::Spawn { terminal, error } => {
                write!(f, "Could not start {terminal}: {error}")
            }
            TerminalError::BadTemplate(why) => write!(f, "Custom terminal command: {why}"),
            TerminalError::EmptyArgv => f.write_str("This session has no command to open it"),
        }
    }
}

impl std::error::Error for TerminalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TerminalError::Spawn { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Open `launch` in a new terminal window.
pub fn open(choice: &Choice, launch: &Launch, env: &Env) -> Result<Opened, TerminalError> {
    let plan = plan(choice, launch, env)?;
    let child = plan
        .command(env)
        .spawn()
        .map_err(|error| TerminalError::Spawn {
            terminal: plan.terminal.clone(),
            error,
        })?;
    let pid = child.id();
    reap(child);
    Ok(Opened {
        terminal: plan.terminal,
        pid,
        cwd: plan.cwd,
    })
}

/// The command [`open`] would run, after resolving `choice` against `env`'s PATH.
pub fn plan(choice: &Choice, launch: &Launch, env: &Env) -> Result<Plan, TerminalError> {
    if launch.argv.is_empty() {
        return Err(TerminalError::EmptyArgv);
    }
    let cwd = working_dir(&launch.cwd, env);
    let argv = &launch.argv;
    let not_found = |tried: Vec<String>| TerminalError::NotFound {
        tried,
        command: copyable_command(launch),
    };
    match choice {
        Choice::Auto => auto(&cwd, argv, env).map_err(not_found),
        Choice::Named(name) => {
            named(name, &cwd, argv, env).ok_or_else(|| not_found(vec![name.clone()]))
        }
        Choice::Custom(template) => {
            let mut words =
                template::expand(template, &cwd, argv).map_err(TerminalError::BadTemplate)?;
            let name = words.remove(0);
            let program = find_program(&name, env).ok_or_else(|| not_found(vec![name.clone()]))?;
            let adapter = Adapter::for_program(&name);
            Ok(Plan::new(
                file_name(&name),
                program,
                words,
                &cwd,
                adapter.talks_to_tmux(),
            ))
        }
    }
}

/// `cd -- DIR && argv…`, every word quoted: what a user can paste into a terminal to
/// open the session themselves.
pub fn copyable_command(launch: &Launch) -> String {
    let mut words = vec![
        "cd".to_string(),
        "--".to_string(),
        shell_quote(&launch.cwd.to_string_lossy()),
        "&&".to_string(),
    ];
    words.extend(launch.argv.iter().map(|arg| shell_quote(arg)));
    words.join(" ")
}

fn auto(cwd: &str, argv: &[String], env: &Env) -> Result<Plan, Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    names.extend(env.setting("TERMINAL").map(String::from));
    if env.setting("TMUX").is_some() {
        names.push("tmux".into());
    }
    names.extend(platform_terminals(env));
    let mut tried: Vec<String> = Vec::new();
    for name in names {
        if tried.contains(&name) {
            continue;
        }
        if let Some(plan) = named(&name, cwd, argv, env) {
            return Ok(plan);
        }
        tried.push(name);
    }
    Err(tried)
}

#[cfg(not(any(target_os = "macos", windows)))]
fn platform_terminals(env: &Env) -> Vec<String> {
    let desktop = env.setting("XDG_CURRENT_DESKTOP").unwrap_or_default();
    ["xdg-terminal-exec", "x-terminal-emulator"]
        .into_iter()
        .chain(adapter::desktop_terminals(desktop))
        .chain(adapter::FALLBACK_ORDER)
        .map(String::from)
        .collect()
}

#[cfg(target_os = "macos")]
fn platform_terminals(env: &Env) -> Vec<String> {
    let home = env.get("HOME").map(Path::new);
    vec![macos::App::preferred(home).name().to_string()]
}

#[cfg(windows)]
fn platform_terminals(_env: &Env) -> Vec<String> {
    vec!["wt".into()]
}

/// The plan for a terminal given by name, if it is there.
fn named(name: &str, cwd: &str, argv: &[String], env: &Env) -> Option<Plan> {
    #[cfg(target_os = "macos")]
    if let Some(app) = macos::App::named(name) {
        return Some(app.plan(Path::new(cwd), argv));
    }
    let program = find_program(name, env)?;
    #[cfg(windows)]
    if windows::is_windows_terminal(name) {
        let args = windows::args(cwd, argv);
        return Some(Plan::new("Windows Terminal", program, args, cwd, false));
    }
    let adapter = Adapter::for_program(name);
    let terminal = match adapter.name() {
        Some(known) => known,
        None => file_name(name),
    };
    let args = adapter.args(cwd, argv, env);
    Some(Plan::new(
        terminal,
        program,
        args,
        cwd,
        adapter.talks_to_tmux(),
    ))
}

impl Plan {
    fn new(
        terminal: &str,
        program: PathBuf,
        args: Vec<String>,
        cwd: impl Into<PathBuf>,
        keep_tmux: bool,
    ) -> Plan {
        let mut env_remove: Vec<String> = SCRUBBED_VARS.map(String::from).to_vec();
        if !keep_tmux {
            env_remove.extend(TMUX_VARS.map(String::from));
        }
        Plan {
            terminal: terminal.to_string(),
            program,
            args,
            cwd: cwd.into(),
            env_remove,
        }
    }

    fn command(&self, env: &Env) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(env.vars.iter().filter(|(name, _)| {
                !self
                    .env_remove
                    .iter()
                    .any(|gone| name.as_os_str() == gone.as_str())
            }))
            // The tray's own directory would be stale here; shells trust a PWD that
            // names their real directory.
            .env("PWD", &self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        detach(&mut command);
        command
    }
}

/// A session of its own (not only a process group): the terminal has no controlling
/// tty, so neither a hangup of the terminal the tray was started from nor a Ctrl-C in it
/// reaches the new window, and it outlives the tray.
#[cfg(unix)]
fn detach(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only calls setsid,
    // which is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(windows)]
use windows::detach;

/// Wait for the terminal in a thread of its own, so it never lingers as a zombie. A
/// double fork would need an intermediate shell (or an unsafe fork in `pre_exec`) and
/// would hide the terminal's pid; the thread is parked in `waitpid` and most terminal
/// launchers (gnome-terminal, wezterm, tmux) exit at once anyway. If no thread can be
/// started the process stays unreaped until the tray exits, which is harmless.
fn reap(mut child: Child) {
    // A thread that only waits needs next to no stack.
    const STACK: usize = 64 * 1024;
    let _ = std::thread::Builder::new()
        .name("terminal-reaper".into())
        .stack_size(STACK)
        .spawn(move || {
            let _ = child.wait();
        });
}

/// The session's directory if it is usable, else the home directory, else `/`. Text
/// only, since it is also passed as an argument.
fn working_dir(requested: &Path, env: &Env) -> String {
    let home = env
        .get("HOME")
        .or_else(|| env.get("USERPROFILE"))
        .map(PathBuf::from);
    [Some(requested.to_path_buf()), home]
        .into_iter()
        .flatten()
        .filter(|dir| dir.is_absolute() && dir.is_dir())
        .find_map(|dir| dir.into_os_string().into_string().ok())
        .unwrap_or_else(|| "/".into())
}

/// An absolute path as it is, or a bare name looked up in `env`'s PATH. Relative PATH
/// entries (an empty one means the current directory) are skipped: running whatever
/// sits in the tray's current directory would be a trap.
fn find_program(name: &str, env: &Env) -> Option<PathBuf> {
    if name.is_empty() {
        return None;
    }
    let path = Path::new(name);
    if path.components().count() > 1 {
        return path.is_absolute().then(|| executable(path)).flatten();
    }
    std::env::split_paths(env.get("PATH")?)
        .filter(|dir| dir.is_absolute())
        .find_map(|dir| executable(&dir.join(name)))
}

#[cfg(unix)]
fn executable(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then(|| path.to_path_buf())
}

#[cfg(windows)]
fn executable(path: &Path) -> Option<PathBuf> {
    [path.to_path_buf(), path.with_extension("exe")]
        .into_iter()
        .find(|candidate| candidate.is_file())
}

fn file_name(program: &str) -> &str {
    Path::new(program)
        .file_name()
        .and_then(OsStr::to_str)
        .unwrap_or(program)
}

/// The launch that opens another machine's session from here: `ssh -t` to it running the
/// session's own launch there ([`crate::ssh::Ssh::open`]), started in `local_dir` (the
/// person's home: the session's directory names a path on the other machine).
pub fn remote_launch(dest: &str, launch: &Launch, local_dir: PathBuf) -> Result<Launch, String> {
    Ok(Launch {
        argv: crate::ssh::Ssh::new(dest)?.open(&launch.argv, &launch.cwd),
        cwd: local_dir,
    })
}
