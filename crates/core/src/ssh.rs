//! ssh as the tray runs it: the options that make a dead link fail fast, the destinations
//! it accepts, and argvs whose remote words arrive as the words they were. Apart from
//! [`crate::machine`] (which follows machines) so that lf's client can run lf over ssh
//! without depending on the followers.

use std::path::{Path, PathBuf};

use tokio::process::Command;

use crate::quote::shell_quote;

/// Options for every ssh the tray runs. `BatchMode=yes`: a password or passphrase prompt
/// would hang a process nobody sees, so ssh fails instead (keys and agents still work).
/// `ConnectTimeout=10`: a host that does not answer is given up on in 10 s, not the
/// system's TCP timeout of minutes. `ServerAliveInterval=10` with `ServerAliveCountMax=2`:
/// on a silent link ssh asks the server every 10 s and gives up after two unanswered asks,
/// so a dead link (a laptop that changed networks, a server that rebooted) is noticed in
/// about 30 s, at the cost of one small packet per 10 s on an idle link.
pub const SSH_OPTIONS: [&str; 8] = [
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    "-o",
    "ServerAliveInterval=10",
    "-o",
    "ServerAliveCountMax=2",
];

/// A destination the tray can hand to ssh: not empty, no blanks or control characters
/// (ssh would split or misread them), and not starting with `-`, which ssh would read
/// as an option (`-oProxyCommand=…` runs a command).
pub fn check_destination(dest: &str) -> Result<(), String> {
    if dest.is_empty() {
        return Err(
            "A machine needs an ssh destination (a Host from ~/.ssh/config, or user@host).".into(),
        );
    }
    if dest.starts_with('-') {
        return Err(format!(
            "“{dest}” is not a machine: an ssh destination cannot start with “-”."
        ));
    }
    if dest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "“{}” is not a machine: an ssh destination has no blanks.",
            dest.escape_default()
        ));
    }
    Ok(())
}

/// How ssh is run for one machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ssh {
    /// The `ssh` program; `ssh` on `PATH` unless told otherwise.
    pub program: PathBuf,
    pub dest: String,
}

impl Ssh {
    pub fn new(dest: &str) -> Result<Ssh, String> {
        check_destination(dest)?;
        Ok(Ssh {
            program: PathBuf::from("ssh"),
            dest: dest.to_string(),
        })
    }

    /// The argv of `ssh` running `words` on the machine. ssh joins what follows the
    /// destination with blanks and gives it to the remote shell, so each word is quoted
    /// for that shell here: text from a session arrives as text. `--` ends ssh's options
    /// before the destination.
    pub fn argv(&self, tty: bool, remote_line: &str) -> Vec<String> {
        let mut argv = vec![self.program.display().to_string()];
        argv.extend(SSH_OPTIONS.iter().map(|o| o.to_string()));
        argv.push(if tty { "-t" } else { "-T" }.into());
        argv.push("--".into());
        argv.push(self.dest.clone());
        argv.push(remote_line.to_string());
        argv
    }

    /// A command that runs `words` on the machine, without a terminal.
    pub fn command(&self, words: &[&str]) -> Command {
        self.shell(&quote_words(words))
    }

    /// A command that gives `line` to the machine's shell as it is. The ssh ends with the
    /// tray, however the tray ends ([`crate::child`]).
    pub(crate) fn shell(&self, line: &str) -> Command {
        let argv = self.argv(false, line);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]).kill_on_drop(true);
        crate::child::end_with_tray(&mut command);
        command
    }

    /// What the person's local terminal runs to open a session of this machine: `ssh -t`
    /// to it, then the session's own `open_argv` in the session's directory there. The
    /// argv names the remote's paths and is never run here.
    pub fn open(&self, argv: &[String], cwd: &Path) -> Vec<String> {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut line = String::new();
        let cwd = cwd.to_string_lossy();
        if !cwd.is_empty() {
            // `cd --`: a directory starting with `-` is a directory, not an option.
            line.push_str(&format!("cd -- {} && ", shell_quote(&cwd)));
        }
        line.push_str("exec ");
        line.push_str(&quote_words(&words));
        self.argv(true, &line)
    }
}

/// Words joined for a POSIX shell, each quoted.
fn quote_words(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}
