//! Where a session already runs: the terminal window or tmux pane that holds its lf
//! client, so a click can go back there instead of opening a second one.
//!
//! Two ways in, both ending in the same walk up the client's parents:
//! - A terminal the tray opened runs its command through [`Launch::marked`], so the
//!   client carries `LF_TERMINAL_ID` (which lf lists in the record's `terminal_ids`) and
//!   `LF_TERMINAL_TTY`; [`Terminals`] remembers, per id, what was opened.
//! - A terminal the person opened themselves: the client is a process of theirs whose
//!   command line is `… session open|connect … <id>`.
//!
//! Everything here is pure over an injected view of the processes ([`Processes`]), the
//! X11 windows (pid → window) and the tmux panes, so it is tested without a desktop.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Launch;

/// The variables lf reads to list a client's terminal (model §6.3, `terminal_ids`).
pub const TERMINAL_ID: &str = "LF_TERMINAL_ID";
pub const TERMINAL_TTY: &str = "LF_TERMINAL_TTY";

/// The wrapper's script. Only the shell inside the new terminal knows its tty, so it
/// asks `tty` there. The id and the session's argv are positional parameters: nothing
/// of them is ever parsed as shell text, and the argv is exec'd as it is (a leading `-`
/// in an id stays an argument of lf's, never one of sh's).
const MARK_SCRIPT: &str = "LF_TERMINAL_ID=$1; shift; \
LF_TERMINAL_TTY=$(tty 2>/dev/null) || LF_TERMINAL_TTY=; \
export LF_TERMINAL_ID LF_TERMINAL_TTY; exec \"$@\"";

impl Launch {
    /// The same launch, run so that lf sees `LF_TERMINAL_ID=terminal_id` and the
    /// terminal's own tty as `LF_TERMINAL_TTY`. Set inside the terminal, not in the
    /// terminal's environment: a tmux window gets the server's environment, and a
    /// terminal server (gnome-terminal) its own.
    pub fn marked(self, terminal_id: &str) -> Launch {
        let mut argv = vec![
            "/bin/sh".to_string(),
            "-c".into(),
            MARK_SCRIPT.into(),
            "sh".into(),
            terminal_id.into(),
        ];
        argv.extend(self.argv);
        Launch { argv, ..self }
    }
}

/// A fresh terminal id: a random (version 4) UUID from the kernel, else one made of the
/// time and the pid (unique enough for the one machine the ids are matched on).
pub fn new_terminal_id() -> String {
    if let Ok(text) = std::fs::read_to_string("/proc/sys/kernel/random/uuid") {
        let id = text.trim();
        if id.len() == 36 {
            return id.to_string();
        }
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let bits = nanos ^ (u128::from(std::process::id()) << 96);
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// One process, as much of it as the walk needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub argv: Vec<String>,
    /// Its `LF_TERMINAL_ID`, if it has one.
    pub terminal_id: Option<String>,
    /// Those of its variables that say which tab of a terminal it runs in
    /// ([`TAB_VARIABLES`]), as they were when it started.
    pub env: Vec<(String, String)>,
}

/// The variables that say which tab of a terminal a process runs in, the ones
/// [`super::tab::tab_of`] reads: [`Processes::read`] keeps these of each process.
pub const TAB_VARIABLES: [&str; 7] = [
    "KITTY_WINDOW_ID",
    "KITTY_LISTEN_ON",
    "WEZTERM_PANE",
    "WEZTERM_UNIX_SOCKET",
    "KONSOLE_DBUS_SERVICE",
    "KONSOLE_DBUS_SESSION",
    "KONSOLE_DBUS_WINDOW",
];

/// The processes of one user, as read from `/proc` (or made up by a test).
#[derive(Debug, Clone, Default)]
pub struct Processes {
    by_pid: HashMap<u32, Process>,
}

impl Processes {
    pub fn new(processes: impl IntoIterator<Item = Process>) -> Processes {
        Processes {
            by_pid: processes.into_iter().map(|p| (p.pid, p)).collect(),
        }
    }

    /// The processes under `root` (normally `/proc`) owned by `uid`; ones that end
    /// while being read are skipped. Elsewhere than on Linux there is no `/proc`.
    #[cfg(not(target_os = "linux"))]
    pub fn read(_root: &Path, _uid: u32) -> Processes {
        Processes::default()
    }

    /// The processes under `root` (normally `/proc`) owned by `uid`; ones that end
    /// while being read are skipped.
    #[cfg(target_os = "linux")]
    pub fn read(root: &Path, uid: u32) -> Processes {
        use std::os::unix::fs::MetadataExt;
        let Ok(entries) = std::fs::read_dir(root) else {
            return Processes::default();
        };
        let mut all = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let dir = entry.path();
            if !std::fs::metadata(&dir).is_ok_and(|m| m.uid() == uid) {
                continue;
            }
            let Some(ppid) = std::fs::read_to_string(dir.join("stat"))
                .ok()
                .and_then(|stat| parent_of(&stat))
            else {
                continue;
            };
            let argv = nul_separated(&std::fs::read(dir.join("cmdline")).unwrap_or_default());
            let environ = nul_separated(&std::fs::read(dir.join("environ")).unwrap_or_default());
            let mut terminal_id = None;
            let mut env = Vec::new();
            for var in environ {
                let Some((key, value)) = var.split_once('=') else {
                    continue;
                };
                if key == TERMINAL_ID && !value.is_empty() {
                    terminal_id = Some(value.to_string());
                } else if TAB_VARIABLES.contains(&key) {
                    env.push((key.to_string(), value.to_string()));
                }
            }
            all.push(Process {
                pid,
                ppid,
                argv,
                terminal_id,
                env,
            });
        }
        Processes::new(all)
    }

    pub fn get(&self, pid: u32) -> Option<&Process> {
        self.by_pid.get(&pid)
    }

    /// `pid`, its parent, its parent's parent… up to the first one not in the view.
    pub fn ancestors(&self, pid: u32) -> Vec<u32> {
        let mut chain = Vec::new();
        let mut at = pid;
        while let Some(process) = self.by_pid.get(&at) {
            if chain.contains(&at) {
                break; // a view read while pids were reused can hold a loop
            }
            chain.push(at);
            if process.ppid == 0 || process.ppid == at {
                break;
            }
            at = process.ppid;
        }
        chain
    }

    /// The lf clients of session `id`: processes that carry one of its `terminal_ids`,
    /// then processes whose command line opens it. Lowest pid first within each, so the
    /// answer is the same from one call to the next. A process whose command line names
    /// the session only because it runs the client (`kitty lf session connect ID`,
    /// `tmux new-session lf session open ID`) is its parent, not the client: only the
    /// innermost is kept, whose own variables say which tab it is in; and a terminal
    /// program is never the client (kitty forks a copy of itself, its command line
    /// and all, to start later windows faster).
    pub fn clients(&self, id: &str, terminal_ids: &[String]) -> Vec<u32> {
        let mut marked: Vec<u32> = self
            .by_pid
            .values()
            .filter(|p| {
                p.terminal_id
                    .as_ref()
                    .is_some_and(|t| terminal_ids.contains(t))
                    && runs_client(&p.argv)
            })
            .map(|p| p.pid)
            .collect();
        let mut named: Vec<u32> = self
            .by_pid
            .values()
            .filter(|p| names_session(&p.argv, id) && !marked.contains(&p.pid))
            .map(|p| p.pid)
            .collect();
        let found: Vec<u32> = marked.iter().chain(&named).copied().collect();
        let runs_another = |pid: &u32| {
            found
                .iter()
                .any(|other| other != pid && self.ancestors(*other).contains(pid))
        };
        let is_terminal = |pid: &u32| {
            self.get(*pid)
                .and_then(program_name)
                .is_some_and(|name| TERMINAL_PROGRAMS.iter().any(|(p, _)| *p == name))
        };
        named.retain(|pid| !runs_another(pid) && !is_terminal(pid));
        marked.sort_unstable();
        named.sort_unstable();
        marked.extend(named);
        marked
    }
}

/// The parent pid from `/proc/PID/stat`; the command name in parentheses may itself
/// hold spaces and parentheses, so the fields are counted from the last `)`.
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

fn nul_separated(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

/// A command line that is an lf client in a terminal: `… session open|connect …`,
/// and not the tray's own `--json` question (which attaches nothing).
fn runs_client(argv: &[String]) -> bool {
    let Some(at) = argv.iter().position(|a| a == "session") else {
        return false;
    };
    matches!(
        argv.get(at + 1).map(String::as_str),
        Some("open" | "connect")
    ) && !argv.iter().any(|a| a == "--json")
}

/// Whether `argv` is an lf client of session `id` (the id as a whole argument after the
/// verb, so `ask_1` is not found in `ask_12`).
pub fn names_session(argv: &[String], id: &str) -> bool {
    runs_client(argv)
        && argv
            .iter()
            .skip_while(|a| *a != "session")
            .skip(2)
            .any(|a| a == id)
}

/// A tmux pane, from `tmux list-panes -a -F` with [`PANE_FORMAT`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pane {
    pub pid: u32,
    pub pane: String,
    pub window: String,
    pub window_index: String,
    pub session: String,
}

/// The fields [`parse_panes`] reads, the session name last since it may hold spaces.
pub const PANE_FORMAT: &str = "#{pane_pid} #{pane_id} #{window_id} #{window_index} #{session_name}";

pub fn parse_panes(text: &str) -> Vec<Pane> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.splitn(5, ' ');
            Some(Pane {
                pid: words.next()?.parse().ok()?,
                pane: words.next()?.to_string(),
                window: words.next()?.to_string(),
                window_index: words.next()?.to_string(),
                session: words.next()?.to_string(),
            })
        })
        .collect()
}

/// A tmux client (a terminal showing a tmux session), from `tmux list-clients -F` with
/// [`CLIENT_FORMAT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxClient {
    pub pid: u32,
    pub tty: String,
    pub session: String,
}

pub const CLIENT_FORMAT: &str = "#{client_pid} #{client_tty} #{client_session}";

pub fn parse_clients(text: &str) -> Vec<TmuxClient> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.splitn(3, ' ');
            Some(TmuxClient {
                pid: words.next()?.parse().ok()?,
                tty: words.next()?.to_string(),
                session: words.next()?.to_string(),
            })
        })
        .collect()
}

/// Where a session's client is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// A top-level X11 window (or, with `window` `None`, a process a compositor can
    /// focus by pid), owned by `pid`, an ancestor of the client.
    Window { pid: u32, window: Option<u32> },
    /// A tmux pane, and the terminal window showing a client of its tmux session, if one
    /// is found.
    Tmux {
        pane: Pane,
        client: Option<TmuxClient>,
        window: Option<u32>,
    },
}

/// Where the process `client` is held: the nearest ancestor that is a tmux pane, else
/// the nearest one owning an X11 window (`windows`: pid → window). A tmux pane is shown
/// through a tmux client; its window is found from that client's own ancestors.
pub fn holder(
    processes: &Processes,
    client: u32,
    windows: &HashMap<u32, u32>,
    panes: &[Pane],
    clients: &[TmuxClient],
) -> Option<Holder> {
    let window_of = |pid: u32| {
        processes
            .ancestors(pid)
            .into_iter()
            .find_map(|p| windows.get(&p).map(|w| (p, *w)))
    };
    for pid in processes.ancestors(client) {
        if let Some(pane) = panes.iter().find(|p| p.pid == pid) {
            let client = clients
                .iter()
                .filter(|c| c.session == pane.session)
                .find(|c| window_of(c.pid).is_some())
                .or_else(|| clients.iter().find(|c| c.session == pane.session))
                .cloned();
            let window = client
                .as_ref()
                .and_then(|c| window_of(c.pid))
                .map(|(_, w)| w);
            return Some(Holder::Tmux {
                pane: pane.clone(),
                client,
                window,
            });
        }
        if let Some(window) = windows.get(&pid) {
            return Some(Holder::Window {
                pid,
                window: Some(*window),
            });
        }
    }
    None
}

/// Terminal programs by the name their process has (a server's included), and how a
/// person calls them: where no window can be seen (Wayland without a compositor
/// interface), the nearest of them up the client's parents says where the session runs.
const TERMINAL_PROGRAMS: [(&str, &str); 12] = [
    ("xterm", "xterm"),
    ("gnome-terminal-server", "gnome-terminal"),
    ("gnome-terminal", "gnome-terminal"),
    ("konsole", "konsole"),
    ("xfce4-terminal", "xfce4-terminal"),
    ("kitty", "kitty"),
    ("alacritty", "alacritty"),
    ("wezterm-gui", "WezTerm"),
    ("foot", "foot"),
    ("ghostty", "Ghostty"),
    ("tilix", "tilix"),
    ("kgx", "Console"),
];

fn program_name(process: &Process) -> Option<&str> {
    let first = process.argv.first()?;
    Some(first.rsplit('/').next().unwrap_or(first))
}

/// The nearest ancestor of `pid` that is a terminal program, and its name for a person.
pub fn terminal_around(processes: &Processes, pid: u32) -> Option<(u32, &'static str)> {
    processes.ancestors(pid).into_iter().find_map(|p| {
        let name = program_name(processes.get(p)?)?;
        TERMINAL_PROGRAMS
            .iter()
            .find(|(program, _)| *program == name)
            .map(|(_, said)| (p, *said))
    })
}

/// Where a holder is, in words for the window or a popup: `attached in tmux session
/// work, window 3, in a gnome-terminal window`. `opened`: the terminal the tray opened
/// for it, if it did, for when its process says nothing known.
pub fn sentence(processes: &Processes, holder: &Holder, opened: Option<&str>) -> String {
    let window_words = |pid: Option<u32>| {
        pid.and_then(|p| terminal_around(processes, p).map(|(_, name)| name.to_string()))
            .or_else(|| opened.map(String::from))
            .map(|name| {
                // "an xterm", "an alacritty": said as they are spelled, but for x ("ex").
                let article = match name.chars().next() {
                    Some('a' | 'e' | 'i' | 'o' | 'u' | 'x' | 'A' | 'E' | 'I' | 'O' | 'U') => "an",
                    _ => "a",
                };
                format!("in {article} {name} window")
            })
    };
    match holder {
        Holder::Tmux { pane, client, .. } => {
            let mut said = format!(
                "attached in tmux session {}, window {}",
                pane.session, pane.window_index
            );
            if let Some(words) = window_words(client.as_ref().map(|c| c.pid)) {
                said = format!("{said}, {words}");
            }
            said
        }
        Holder::Window { pid, .. } => match window_words(Some(*pid)) {
            Some(words) => format!("attached {words}"),
            None => "attached in a terminal".to_string(),
        },
    }
}

/// What the tray remembers of a terminal it opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    /// The terminal's name, as the launcher calls it (`xterm`, `tmux`).
    pub terminal: String,
    /// The process the launcher started (a terminal server's client may be gone soon).
    pub pid: u32,
    /// The session it was opened for (lf's id).
    pub session: String,
    /// When, in Unix seconds.
    pub at: i64,
}

/// The terminals the tray opened, by `LF_TERMINAL_ID`; kept in a file of the state
/// directory so that a restarted tray still knows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Terminals {
    pub opened: BTreeMap<String, Opened>,
}

/// How many opened terminals are remembered: a person opens a handful a day, and an id
/// older than the last hundred launches names a terminal long closed.
const REMEMBERED: usize = 100;

impl Terminals {
    pub fn load(path: &Path) -> Terminals {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, path: &Path) -> io::Result<()> {
        crate::history::write_atomically(path, &serde_json::to_vec_pretty(self)?)
    }

    pub fn remember(&mut self, id: String, opened: Opened) {
        self.opened.insert(id, opened);
        while self.opened.len() > REMEMBERED {
            let oldest = self
                .opened
                .iter()
                .min_by_key(|(_, o)| o.at)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => self.opened.remove(&id),
                None => break,
            };
        }
    }

    /// The terminal the tray opened that the record lists as attached, if any.
    pub fn of_record<'a>(&'a self, terminal_ids: &'a [String]) -> Option<(&'a str, &'a Opened)> {
        terminal_ids
            .iter()
            .find_map(|id| self.opened.get(id).map(|o| (id.as_str(), o)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: u32, ppid: u32, argv: &[&str]) -> Process {
        Process {
            pid,
            ppid,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            terminal_id: None,
            env: Vec::new(),
        }
    }

    fn view() -> Processes {
        let mut marked = proc(40, 30, &["/bin/lf", "session", "connect", "S-2"]);
        marked.terminal_id = Some("T-1".into());
        Processes::new([
            proc(1, 0, &["/sbin/init"]),
            proc(10, 1, &["xterm", "-e", "sh"]),
            proc(11, 10, &["sh"]),
            proc(12, 11, &["/bin/lf", "session", "open", "ask_1"]),
            proc(20, 1, &["tmux: server"]),
            proc(21, 20, &["bash"]),
            proc(22, 21, &["lf", "session", "connect", "--", "-dash"]),
            proc(30, 1, &["kitty"]),
            marked,
            proc(50, 10, &["lf", "session", "open", "ask_1", "--json"]),
            proc(60, 1, &["xterm"]),
            proc(61, 60, &["tmux", "attach", "-t", "work"]),
        ])
    }

    #[cfg(unix)]
    #[test]
    fn the_mark_passes_the_id_and_argv_as_arguments_never_as_shell_text() {
        let launch = Launch {
            argv: vec![
                "/bin/lf".into(),
                "session".into(),
                "open".into(),
                "-x; rm -rf ~".into(),
            ],
            cwd: "/w".into(),
        };
        let marked = launch.clone().marked("T'1");
        assert_eq!(marked.argv[..2], ["/bin/sh", "-c"]);
        assert_eq!(marked.argv[3..5], ["sh", "T'1"]);
        assert_eq!(marked.argv[5..], launch.argv[..]);
        assert_eq!(marked.cwd, launch.cwd);
        // Run for real: lf sees the id, the tty variable, and its argv untouched.
        let out = std::process::Command::new(&marked.argv[0])
            .args(&marked.argv[1..4])
            .arg("T'1")
            .args([
                "/bin/sh",
                "-c",
                "printf '%s|%s|%s' \"$LF_TERMINAL_ID\" \"${LF_TERMINAL_TTY-unset}\" \"$1\"",
                "x",
                "-x; rm -rf ~",
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        // No tty on stdin here: the variable is there, empty, as lf then ignores it.
        assert_eq!(String::from_utf8_lossy(&out.stdout), "T'1||-x; rm -rf ~");
    }

    #[test]
    fn fresh_terminal_ids_differ() {
        let a = new_terminal_id();
        assert_eq!(a.len(), 36, "{a}");
        assert_ne!(a, new_terminal_id());
    }

    #[test]
    fn clients_are_found_by_terminal_id_then_by_command_line() {
        let v = view();
        assert_eq!(v.clients("ask_1", &[]), [12], "--json asks attach nothing");
        assert_eq!(v.clients("-dash", &[]), [22]);
        assert_eq!(v.clients("S-2", &["T-1".into()]), [40]);
        assert!(v.clients("ask_", &[]).is_empty(), "whole arguments only");
        assert!(!names_session(&["lf".into(), "ask_1".into()], "ask_1"));
        // A terminal started on the command names the session too; its lf is the client.
        let v = Processes::new([
            proc(70, 1, &["kitty", "/bin/lf", "session", "connect", "S-3"]),
            // kitty's copy of itself, started before the client (a lower pid).
            proc(69, 70, &["kitty", "/bin/lf", "session", "connect", "S-3"]),
            proc(71, 70, &["/bin/lf", "session", "connect", "S-3"]),
            proc(80, 1, &["tmux", "new", "lf", "session", "connect", "S-3"]),
            proc(90, 1, &["konsole", "-e", "lf", "session", "connect", "S-3"]),
        ]);
        assert_eq!(v.clients("S-3", &[]), [71, 80]);
    }

    #[test]
    fn the_walk_goes_up_to_the_first_window_or_pane() {
        let v = view();
        assert_eq!(v.ancestors(12), [12, 11, 10, 1]);
        let windows = HashMap::from([(10, 0xa00001), (60, 0xb00001)]);
        assert_eq!(
            holder(&v, 12, &windows, &[], &[]),
            Some(Holder::Window {
                pid: 10,
                window: Some(0xa00001)
            })
        );
        assert_eq!(
            holder(&v, 40, &windows, &[], &[]),
            None,
            "kitty shows no window"
        );
        let panes = parse_panes("21 %3 @2 2 work\n99 %4 @3 3 other one\n");
        assert_eq!(panes[1].session, "other one");
        let clients = parse_clients("61 /dev/pts/4 work\n");
        assert_eq!(
            holder(&v, 22, &windows, &panes, &clients),
            Some(Holder::Tmux {
                pane: panes[0].clone(),
                client: Some(clients[0].clone()),
                window: Some(0xb00001)
            })
        );
        // Nobody attached to that tmux session: the pane, with no window to show it.
        let Some(Holder::Tmux { client, window, .. }) = holder(&v, 22, &windows, &panes, &[])
        else {
            panic!("not a tmux pane")
        };
        assert_eq!((client, window), (None, None));
    }

    #[test]
    fn a_loop_in_a_stale_view_ends_the_walk() {
        let v = Processes::new([proc(5, 6, &["a"]), proc(6, 5, &["b"])]);
        assert_eq!(v.ancestors(5), [5, 6]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_real_proc_view_holds_this_process_and_its_parent() {
        let me = std::process::id();
        // SAFETY: getuid cannot fail and touches no memory of ours.
        let uid = unsafe { libc::getuid() };
        let v = Processes::read(Path::new("/proc"), uid);
        let chain = v.ancestors(me);
        assert_eq!(chain[0], me);
        assert_eq!(
            chain.get(1).copied(),
            Some(std::os::unix::process::parent_id())
        );
        assert!(parent_of("7 (a) b) (c) S 42 7 7").is_some_and(|p| p == 42));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_real_proc_view_keeps_the_tab_variables_and_no_others() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("KITTY_WINDOW_ID", "-4=x")
            .env("LF_TERMINAL_ID", "T-9")
            .env("SOMETHING_ELSE", "1")
            .spawn()
            .unwrap();
        // SAFETY: getuid cannot fail and touches no memory of ours.
        let uid = unsafe { libc::getuid() };
        let v = Processes::read(Path::new("/proc"), uid);
        let _ = child.kill();
        let _ = child.wait();
        let p = v.get(child.id()).expect("the child in the view");
        assert_eq!(p.terminal_id.as_deref(), Some("T-9"));
        assert_eq!(p.env, [("KITTY_WINDOW_ID".to_string(), "-4=x".to_string())]);
    }

    #[test]
    fn remembered_terminals_survive_a_restart_and_match_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("terminals.json");
        let mut t = Terminals::default();
        for n in 0..(REMEMBERED as i64 + 5) {
            t.remember(
                format!("T-{n}"),
                Opened {
                    terminal: "xterm".into(),
                    pid: 100 + n as u32,
                    session: "S".into(),
                    at: n,
                },
            );
        }
        assert_eq!(t.opened.len(), REMEMBERED);
        assert!(!t.opened.contains_key("T-0"), "the oldest go first");
        t.save(&path).unwrap();
        let back = Terminals::load(&path);
        assert_eq!(back, t);
        let ids = vec!["elsewhere".to_string(), "T-50".to_string()];
        assert_eq!(
            back.of_record(&ids).map(|(id, o)| (id, o.pid)),
            Some(("T-50", 150))
        );
        assert_eq!(
            Terminals::load(&dir.path().join("none")),
            Terminals::default()
        );
    }

    #[test]
    fn where_it_runs_is_said_in_a_persons_words() {
        let v = Processes::new([
            proc(1, 0, &["/sbin/init"]),
            proc(5, 1, &["/usr/libexec/gnome-terminal-server"]),
            proc(6, 5, &["bash"]),
            proc(7, 6, &["tmux", "attach"]),
            proc(8, 6, &["lf", "session", "connect", "S-1"]),
            proc(20, 1, &["tmux: server"]),
            proc(21, 20, &["lf", "session", "connect", "S-2"]),
        ]);
        assert_eq!(terminal_around(&v, 8), Some((5, "gnome-terminal")));
        assert_eq!(terminal_around(&v, 21), None);
        let window = Holder::Window {
            pid: 5,
            window: None,
        };
        assert_eq!(
            sentence(&v, &window, None),
            "attached in a gnome-terminal window"
        );
        let pane = parse_panes("21 %3 @2 3 work")[0].clone();
        let tmux = Holder::Tmux {
            pane: pane.clone(),
            client: parse_clients("7 /dev/pts/3 work").pop(),
            window: None,
        };
        assert_eq!(
            sentence(&v, &tmux, None),
            "attached in tmux session work, window 3, in a gnome-terminal window"
        );
        let detached = Holder::Tmux {
            pane,
            client: None,
            window: None,
        };
        assert_eq!(
            sentence(&v, &detached, Some("xterm")),
            "attached in tmux session work, window 3, in an xterm window"
        );
    }
}
