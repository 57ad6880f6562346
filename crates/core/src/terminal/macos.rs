//! macOS: Terminal.app and iTerm2, driven through AppleScript.
//!
//! UNVERIFIED: written from Apple's and iTerm2's scripting documentation, never run (this
//! project is built and tested on Linux; only the command text is tested here, through a
//! real `sh`).
//!
//! Both apps take the command as text typed into a new window's login shell. `osascript`
//! passes the words after the script to its `run` handler, so the command arrives as
//! `item 1 of argv` and is never parsed as AppleScript: no AppleScript quoting, and no
//! temporary `.command` file to clean up. The text is [`copyable_command`], every word
//! shell-quoted. The new window's shell gets the app's environment, not ours.

use std::path::{Path, PathBuf};

use super::{copyable_command, Launch, Plan};

/// Where macOS keeps `osascript`; GUI apps get a short PATH, so it is not looked up.
const OSASCRIPT: &str = "/usr/bin/osascript";

const TERMINAL_APP: [&str; 5] = [
    "on run argv",
    "tell application \"Terminal\"",
    "activate",
    // Without `in`, `do script` opens a new window.
    "do script (item 1 of argv)",
    "end tell",
];

const ITERM: [&str; 6] = [
    "on run argv",
    "tell application \"iTerm\"",
    "activate",
    "set newWindow to (create window with default profile)",
    "tell current session of newWindow to write text (item 1 of argv)",
    "end tell",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum App {
    Terminal,
    ITerm,
}

impl App {
    pub(super) fn named(name: &str) -> Option<App> {
        match name.to_ascii_lowercase().as_str() {
            "terminal" | "terminal.app" => Some(App::Terminal),
            "iterm" | "iterm2" | "iterm.app" => Some(App::ITerm),
            _ => None,
        }
    }

    /// iTerm2 when it is installed (a user who installed it prefers it), else Terminal.app.
    pub(super) fn preferred(home: Option<&Path>) -> App {
        let mut places = vec![PathBuf::from("/Applications/iTerm.app")];
        places.extend(home.map(|home| home.join("Applications/iTerm.app")));
        if places.iter().any(|app| app.is_dir()) {
            App::ITerm
        } else {
            App::Terminal
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            App::Terminal => "Terminal",
            App::ITerm => "iTerm2",
        }
    }

    pub(super) fn plan(self, cwd: &Path, argv: &[String]) -> Plan {
        let script = match self {
            App::Terminal => &TERMINAL_APP[..],
            App::ITerm => &ITERM[..],
        };
        let mut args = Vec::new();
        for line in script.iter().chain(["end run"].iter()) {
            args.push("-e".to_string());
            args.push(line.to_string());
        }
        args.push(copyable_command(&Launch {
            argv: argv.to_vec(),
            cwd: cwd.to_path_buf(),
        }));
        Plan::new(self.name(), OSASCRIPT.into(), args, cwd, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_are_found_by_name_and_iterm_is_preferred_when_installed() {
        assert_eq!(App::named("Terminal.app"), Some(App::Terminal));
        assert_eq!(App::named("iTerm2"), Some(App::ITerm));
        assert_eq!(App::named("kitty"), None);
        let home = tempfile::tempdir().unwrap();
        assert_eq!(App::preferred(Some(home.path())), App::Terminal);
        std::fs::create_dir_all(home.path().join("Applications/iTerm.app")).unwrap();
        assert_eq!(App::preferred(Some(home.path())), App::ITerm);
    }

    #[test]
    fn the_typed_command_reaches_the_shell_intact() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("it's a \"dir\" $(x) `y` ; && \n -x ünï");
        std::fs::create_dir(&cwd).unwrap();
        let argv: Vec<String> = [
            "/bin/sh",
            "-c",
            r#"printf '%s\0' "$PWD" "$@""#,
            "sh",
            "ask_'1\"",
            "$(touch pwned)",
            "`id`; rm -rf ~ && x",
            "line\nbreak",
            "-n",
            "ünï",
        ]
        .map(String::from)
        .to_vec();
        for app in [App::Terminal, App::ITerm] {
            let plan = app.plan(&cwd, &argv);
            assert_eq!(plan.program, Path::new(OSASCRIPT));
            assert_eq!(plan.args[..2], ["-e", "on run argv"]);
            // The script never contains session text; the command is the last argument.
            let (typed, script) = plan.args.split_last().unwrap();
            assert!(script.iter().all(|line| !line.contains("ask_")));
            let out = std::process::Command::new("sh")
                .args(["-c", typed])
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{app:?}: {out:?}");
            let printed: Vec<&str> = std::str::from_utf8(&out.stdout)
                .unwrap()
                .split_terminator('\0')
                .collect();
            assert_eq!(printed[0], cwd.to_str().unwrap());
            assert_eq!(printed[1..], argv[4..]);
            assert!(!cwd.join("pwned").exists());
        }
    }
}
