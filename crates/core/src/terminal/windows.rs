//! Windows: Windows Terminal (`wt`).
//!
//! UNVERIFIED: written from Microsoft's `wt` command-line documentation, never run (this
//! project is built and tested on Linux; only the argument building is tested here).
//!
//! `wt [-w new] [-d DIR] commandline…`: `-w new` asks for a new window whatever the
//! user's windowing setting says, `-d` sets the directory. `wt` splits its whole command
//! line into sub-commands at every `;`, inside arguments too, unless it is written `\;`,
//! so each `;` of the argv is escaped that way.

pub(super) fn is_windows_terminal(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "wt" | "wt.exe" | "windows terminal"
    )
}

pub(super) fn args(cwd: &str, argv: &[String]) -> Vec<String> {
    let mut args: Vec<String> = ["-w", "new", "-d", cwd].map(String::from).to_vec();
    args.extend(argv.iter().map(|arg| arg.replace(';', r"\;")));
    args
}

/// A console-less, independent process: `DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP`,
/// so closing the tray (or a Ctrl-C sent to its group) does not reach the terminal.
#[cfg(windows)]
pub(super) fn detach(command: &mut std::process::Command) {
    use std::os::windows::process::CommandExt;
    const DETACHED_PROCESS: u32 = 0x0000_0008;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    command.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semicolons_are_escaped_and_the_rest_kept_in_order() {
        let argv = [r"C:\lf\lf.exe", "session", "open", "ask;1 && x"].map(String::from);
        assert_eq!(
            args(r"C:\src\my app", &argv),
            [
                "-w",
                "new",
                "-d",
                r"C:\src\my app",
                r"C:\lf\lf.exe",
                "session",
                "open",
                r"ask\;1 && x"
            ]
        );
        assert!(is_windows_terminal("WT.exe"));
        assert!(!is_windows_terminal("kitty"));
    }
}
