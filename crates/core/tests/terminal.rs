//! Opening sessions in a terminal, with real processes: stand-in terminals (small scripts
//! on a test PATH) record the argv, directory, environment and process state they were
//! started with, and the test compares that record with what the user asked for.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lf_tray_core::terminal::{
    self, copyable_command, shell_quote, Choice, Env, Launch, Opened, TerminalError, SCRUBBED_VARS,
};
use lf_tray_core::SessionRecord;

/// How long a stand-in may take to start and write its record. Generous because the
/// machine is small and shared; the poll returns as soon as the record is there.
const RECORD_TIMEOUT: Duration = Duration::from_secs(20);
/// How often to look for the record: often enough that a test waits little longer than
/// needed, seldom enough not to compete on two cores with the process it waits for.
const POLL: Duration = Duration::from_millis(20);

/// `terminal::open`, again after "text file busy": while one test writes a stand-in script,
/// another test's fork can briefly hold the written file open (until its exec closes it),
/// and the kernel refuses to run a file open for writing. The product never writes the
/// programs it runs, so this is the tests' own race, not one to handle in the product.
fn open(choice: &Choice, launch: &Launch, env: &Env) -> Result<Opened, TerminalError> {
    let mut tries = 0;
    loop {
        match terminal::open(choice, launch, env) {
            Err(TerminalError::Spawn { error, .. })
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 =>
            {
                tries += 1;
                std::thread::sleep(POLL);
            }
            other => return other,
        }
    }
}

/// A directory name with everything a shell or a terminal might trip on.
const HOSTILE_DIR: &str =
    "it's a \"dir\" $(touch pwned) `touch pwned` ; && \n -rf #(touch pwned) {cwd} ünï ✓";

/// An `open_argv` whose words carry the same, after the `lf` program itself.
fn hostile_argv(lf: &Path) -> Vec<String> {
    let mut argv = vec![lf.to_str().unwrap().to_string()];
    argv.extend(
        [
            "session",
            "open",
            "ask_'single' \"double\"",
            "$(touch pwned)",
            "`touch pwned`",
            "; touch pwned && echo",
            "line\nbreak",
            "-x",
            "--replace",
            "#(touch pwned) #{session_name}",
            "{argv} {cwd}",
            "ünïcødé ✓",
            "",
        ]
        .map(String::from),
    );
    argv
}

/// A scratch world: a PATH directory for stand-ins, a place for their records, a home,
/// and the hostile session directory.
struct Rig {
    root: tempfile::TempDir,
}

/// What a stand-in saw.
#[derive(Debug)]
struct Record {
    argv: Vec<String>,
    cwd: String,
    env: BTreeMap<String, String>,
    pid: u32,
    session_id: u32,
    stdin: String,
}

impl Rig {
    fn new() -> Rig {
        let rig = Rig {
            root: tempfile::tempdir().unwrap(),
        };
        for dir in [rig.bin(), rig.records(), rig.home(), rig.session_dir()] {
            fs::create_dir_all(dir).unwrap();
        }
        rig
    }

    fn bin(&self) -> PathBuf {
        self.root.path().join("bin")
    }

    fn records(&self) -> PathBuf {
        self.root.path().join("records")
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn session_dir(&self) -> PathBuf {
        self.root.path().join(HOSTILE_DIR)
    }

    fn cwd(&self) -> String {
        self.session_dir().to_str().unwrap().to_string()
    }

    /// An environment as the tray might have inherited it: inside an lf Run, inside tmux.
    fn env(&self) -> Env {
        Env::default()
            .set("PATH", self.bin())
            .set("HOME", self.home())
            .set("LF_HOME", "/srv/lf home")
            .set("LF_BIN", "/usr/local/bin/lf")
            .set("LF_RUN_ID", "run_parent")
            .set("LF_RUN_DIR", "/srv/lf home/runs/ab/run_parent")
            .set("LF_PARENT_RUN_ID", "run_grandparent")
            .set("LF_HUMAN_SESSION", r#"{"kind":"ask","id":"ask_parent"}"#)
            .set("LF_HUMAN_SESSION_RUN", "run_prepared")
            .set("LF_HUMAN_SESSION_RUN_BIND", "/tmp/bind")
            .set("LF_TERMINAL_ID", "pane-1")
            .set("LF_TERMINAL_TTY", "/dev/pts/9")
    }

    /// A stand-in terminal named `name` on the test PATH. It records what it was started
    /// with into `records/<name>`, renamed into place last so a reader sees all or nothing.
    fn stand_in(&self, name: &str) -> PathBuf {
        let out = self.records().join(name);
        let script = format!(
            r#"#!/bin/sh
PATH=/usr/bin:/bin
out={out}
mkdir "$out.part"
printf '%s\0' "$@" > "$out.part/argv"
pwd -P > "$out.part/cwd"
cat /proc/$$/environ > "$out.part/env"
echo $$ > "$out.part/pid"
cut -d' ' -f6 /proc/$$/stat > "$out.part/sid"
readlink /proc/$$/fd/0 > "$out.part/stdin"
mv "$out.part" "$out"
"#,
            out = shell_quote(out.to_str().unwrap()),
        );
        self.executable(name, &script)
    }

    fn executable(&self, name: &str, text: &str) -> PathBuf {
        let path = self.bin().join(name);
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn wait_for_record(&self, name: &str) -> Record {
        let dir = self.records().join(name);
        let deadline = Instant::now() + RECORD_TIMEOUT;
        while !dir.exists() {
            assert!(Instant::now() < deadline, "{name} never recorded its start");
            std::thread::sleep(POLL);
        }
        let read = |file: &str| fs::read_to_string(dir.join(file)).unwrap();
        let line = |file: &str| read(file).trim_end().to_string();
        let mut cwd = read("cwd");
        assert_eq!(cwd.pop(), Some('\n'));
        Record {
            argv: read("argv")
                .split_terminator('\0')
                .map(String::from)
                .collect(),
            cwd,
            env: read("env")
                .split_terminator('\0')
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            pid: line("pid").parse().unwrap(),
            session_id: line("sid").parse().unwrap(),
            stdin: line("stdin"),
        }
    }

    /// Nothing in the session text was run by a shell anywhere.
    fn assert_nothing_ran(&self) {
        for dir in [
            self.root.path().to_path_buf(),
            self.session_dir(),
            self.home(),
        ] {
            assert!(
                !dir.join("pwned").exists(),
                "a shell ran session text in {dir:?}"
            );
        }
    }
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn assert_scrubbed(env: &BTreeMap<String, String>) {
    for name in SCRUBBED_VARS {
        assert!(!env.contains_key(name), "{name} leaked into the terminal");
    }
    assert_eq!(env.get("LF_HOME").map(String::as_str), Some("/srv/lf home"));
    assert_eq!(
        env.get("LF_BIN").map(String::as_str),
        Some("/usr/local/bin/lf")
    );
}

#[test]
fn every_terminal_receives_the_argv_intact_in_the_session_directory() {
    let rig = Rig::new();
    let argv = hostile_argv(Path::new("/opt/lf tools/bin/lf"));
    let cwd = rig.cwd();
    let launch = Launch {
        argv: argv.clone(),
        cwd: rig.session_dir(),
    };
    // Each terminal's own conventions, restated from its documentation.
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "gnome-terminal",
            vec![format!("--working-directory={cwd}"), "--".into()],
        ),
        ("konsole", strings(&["--separate", "--workdir", &cwd, "-e"])),
        (
            "xfce4-terminal",
            vec![
                "--disable-server".into(),
                format!("--working-directory={cwd}"),
                "-x".into(),
            ],
        ),
        ("kitty", strings(&["--directory", &cwd, "--"])),
        ("alacritty", strings(&["--working-directory", &cwd, "-e"])),
        (
            "wezterm",
            strings(&["start", "--always-new-process", "--cwd", &cwd, "--"]),
        ),
        (
            "foot",
            vec![format!("--working-directory={cwd}"), "--".into()],
        ),
        (
            "ghostty",
            vec![format!("--working-directory={cwd}"), "-e".into()],
        ),
        ("xterm", strings(&["-e"])),
        ("xdg-terminal-exec", strings(&["-e"])),
        ("x-terminal-emulator", strings(&["-e"])),
        // A terminal with no adapter of its own gets the common `-e` convention.
        ("urxvt", strings(&["-e"])),
    ];
    let env = rig.env().set("TMUX", "/tmp/tmux-0/default,1,0");
    for (name, _) in &cases {
        rig.stand_in(name);
    }
    for (name, expected_prefix) in cases {
        let choice = Choice::Named(name.to_string());
        let plan = terminal::plan(&choice, &launch, &env).unwrap();
        let opened = open(&choice, &launch, &env).unwrap();
        assert_eq!(opened.terminal, name);
        assert_eq!(opened.cwd, rig.session_dir());

        let record = rig.wait_for_record(name);
        let mut expected = expected_prefix;
        expected.extend(argv.iter().cloned());
        assert_eq!(record.argv, expected, "{name}");
        assert_eq!(record.argv, plan.args, "{name}: plan and launch differ");
        assert!(record.argv.ends_with(&argv));
        assert_eq!(record.cwd, cwd, "{name}");
        assert_scrubbed(&record.env);
        assert!(!record.env.contains_key("TMUX"), "{name}: TMUX leaked");
        assert_eq!(record.env.get("PWD"), Some(&cwd));
        // Detached: its own session, nothing to read from us.
        assert_eq!(record.pid, opened.pid);
        assert_eq!(
            record.session_id, record.pid,
            "{name} is not a session leader"
        );
        assert_eq!(record.stdin, "/dev/null");
    }
    rig.assert_nothing_ran();
}

#[test]
fn tilix_gets_one_command_string_that_shell_rules_split_back_into_the_argv() {
    let rig = Rig::new();
    let argv = hostile_argv(Path::new("/opt/lf tools/bin/lf"));
    let launch = Launch {
        argv: argv.clone(),
        cwd: rig.session_dir(),
    };
    rig.stand_in("tilix");
    let choice = Choice::Named("tilix".into());
    open(&choice, &launch, &rig.env()).unwrap();
    let record = rig.wait_for_record("tilix");
    let cwd = rig.cwd();
    assert_eq!(
        record.argv[..3],
        strings(&["--new-process", &format!("--working-directory={cwd}"), "-e"])
    );
    assert_eq!(record.argv.len(), 4, "{:?}", record.argv);
    // Tilix splits it with GLib's shell rules, which for quoted words are POSIX sh's;
    // if the quoting were wrong, the hostile words would run something here.
    let words = std::process::Command::new("/bin/sh")
        .args([
            "-c",
            "eval \"set -- $1\"; printf '%s\\0' \"$@\"",
            "sh",
            &record.argv[3],
        ])
        .output()
        .unwrap();
    let words: Vec<String> = String::from_utf8(words.stdout)
        .unwrap()
        .split_terminator('\0')
        .map(str::to_string)
        .collect();
    assert_eq!(words, argv);
    assert_scrubbed(&record.env);
    rig.assert_nothing_ran();
}

#[test]
fn terminal_variable_is_used_first_with_the_dash_e_convention() {
    let rig = Rig::new();
    let st = rig.stand_in("st");
    rig.stand_in("kitty");
    let argv = hostile_argv(Path::new("/usr/bin/lf"));
    // The launch comes from the session record as `lf session list --json` gives it.
    let record: SessionRecord = serde_json::from_value(serde_json::json!({
        "id": argv[3], "kind": "ask", "state": "waiting",
        "cwd": rig.cwd(), "open_argv": argv,
    }))
    .unwrap();
    let launch = Launch::for_session(&record);
    assert_eq!(launch.cwd, rig.session_dir());
    let env = rig.env().set("TERMINAL", &st);
    let opened = open(&Choice::Auto, &launch, &env).unwrap();
    assert_eq!(opened.terminal, "st");
    let record = rig.wait_for_record("st");
    let mut expected = strings(&["-e"]);
    expected.extend(argv.iter().cloned());
    assert_eq!(record.argv, expected);
    assert_eq!(record.cwd, rig.cwd());
    assert_scrubbed(&record.env);

    // A `$TERMINAL` naming a known terminal gets that terminal's own conventions.
    let env = rig.env().set("TERMINAL", "kitty");
    let plan = terminal::plan(&Choice::Auto, &launch, &env).unwrap();
    assert_eq!(plan.terminal, "kitty");
    assert_eq!(plan.args[..3], strings(&["--directory", &rig.cwd(), "--"]));
}

#[test]
fn auto_tries_terminals_in_order() {
    let rig = Rig::new();
    let launch = Launch {
        argv: strings(&["/usr/bin/lf", "session", "open", "ask_1"]),
        cwd: rig.session_dir(),
    };
    let order = [
        "xdg-terminal-exec",
        "x-terminal-emulator",
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
    for name in order.iter().chain(&["tmux", "st"]) {
        rig.stand_in(name);
    }
    let chosen = |env: &Env| terminal::plan(&Choice::Auto, &launch, env).map(|plan| plan.terminal);
    let base = rig.env();

    let env = base
        .clone()
        .set("TERMINAL", "st")
        .set("TMUX", "/tmp/tmux-0/default,1,0");
    assert_eq!(chosen(&env).unwrap(), "st");
    // A `$TERMINAL` that is not installed is passed over.
    let env = env.set("TERMINAL", "not-installed");
    assert_eq!(chosen(&env).unwrap(), "tmux");
    assert_eq!(chosen(&base).unwrap(), "xdg-terminal-exec");

    // The desktop's own terminal comes before the fixed list.
    fs::remove_file(rig.bin().join("xdg-terminal-exec")).unwrap();
    fs::remove_file(rig.bin().join("x-terminal-emulator")).unwrap();
    let desktop = |name: &str| base.clone().set("XDG_CURRENT_DESKTOP", name);
    assert_eq!(chosen(&desktop("ubuntu:GNOME")).unwrap(), "gnome-terminal");
    assert_eq!(chosen(&desktop("KDE")).unwrap(), "konsole");
    assert_eq!(chosen(&desktop("XFCE")).unwrap(), "xfce4-terminal");
    assert_eq!(chosen(&desktop("sway")).unwrap(), "foot");

    for name in &order[2..] {
        assert_eq!(chosen(&base).unwrap(), *name);
        fs::remove_file(rig.bin().join(name)).unwrap();
    }
    // tmux is there, but only a tray running inside tmux uses it.
    match terminal::plan(&Choice::Auto, &launch, &base) {
        Err(TerminalError::NotFound { tried, .. }) => assert_eq!(tried, order),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

/// A private tmux server on its own socket, killed when dropped.
struct TmuxServer {
    socket: PathBuf,
}

impl TmuxServer {
    /// Started from inside an lf Run, so the server's environment carries one.
    fn start(socket: PathBuf) -> TmuxServer {
        let server = TmuxServer { socket };
        server.run(&["-f", "/dev/null", "new-session", "-d", "-s", "lf-test"]);
        server
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env("LF_RUN_ID", "run_of_the_server")
            .env("LF_HUMAN_SESSION", "{}")
            .env("LF_HOME", "/srv/lf home")
            .env("LF_BIN", "/usr/local/bin/lf")
            .output()
            .expect("tmux must be installed for this test");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// `$TMUX` as tmux sets it inside the server's panes: socket, server pid, session.
    fn tmux_var(&self) -> String {
        let pid = self.run(&["display-message", "-p", "#{pid}"]);
        format!("{},{},0", self.socket.display(), pid.trim())
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        // No assertion here: a panic while a failed test unwinds would abort the run.
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

#[test]
fn tmux_opens_a_window_in_the_running_server_without_its_run_context() {
    let rig = Rig::new();
    let server = TmuxServer::start(rig.root.path().join("tmux.sock"));
    let lf = rig.stand_in("lf");
    let argv = hostile_argv(&lf);
    let launch = Launch {
        argv: argv.clone(),
        cwd: rig.session_dir(),
    };
    // Where Debian installs tmux; the stand-ins come first.
    let path = std::env::join_paths([rig.bin(), "/usr/bin".into()]).unwrap();
    // The tray looks at another home than the server was started with, and has no LF_BIN.
    let env = rig
        .env()
        .set("PATH", path)
        .set("TMUX", server.tmux_var())
        .set("LF_HOME", "/tray's home")
        .unset("LF_BIN");
    let opened = open(&Choice::Auto, &launch, &env).unwrap();
    assert_eq!(opened.terminal, "tmux");

    let record = rig.wait_for_record("lf");
    assert_eq!(record.argv, argv[1..]);
    assert_eq!(record.cwd, rig.cwd());
    for name in SCRUBBED_VARS {
        assert!(
            !record.env.contains_key(name),
            "{name} leaked into the window"
        );
    }
    assert!(record.env.contains_key("TMUX"), "the window is inside tmux");
    assert_eq!(
        record.env.get("LF_HOME").map(String::as_str),
        Some("/tray's home"),
        "the window has the server's home, not the tray's"
    );
    assert!(
        !record.env.contains_key("LF_BIN"),
        "the server's LF_BIN leaked"
    );
    rig.assert_nothing_ran();
}

#[test]
fn custom_templates_expand_words_and_quote_embedded_text() {
    let rig = Rig::new();
    rig.stand_in("myterm");
    let argv = hostile_argv(Path::new("/usr/bin/lf"));
    let launch = Launch {
        argv: argv.clone(),
        cwd: rig.session_dir(),
    };
    let env = rig.env();
    let choice = Choice::Custom("myterm --title 'lf session' --cd {cwd} -e {argv}".into());
    open(&choice, &launch, &env).unwrap();
    let record = rig.wait_for_record("myterm");
    let mut expected = strings(&["--title", "lf session", "--cd", &rig.cwd(), "-e"]);
    expected.extend(argv.iter().cloned());
    assert_eq!(record.argv, expected);
    assert_scrubbed(&record.env);

    // A command string for a real shell: the quoted directory and argv must reach `lf`
    // untouched after the shell has parsed them.
    let lf = rig.stand_in("lf");
    let argv = hostile_argv(&lf);
    let launch = Launch {
        argv: argv.clone(),
        cwd: rig.session_dir(),
    };
    let env = rig.env().set(
        "PATH",
        std::env::join_paths([rig.bin(), "/bin".into()]).unwrap(),
    );
    let choice = Choice::Custom(r#"sh -c "cd {cwd} && exec {argv}""#.into());
    let opened = open(&choice, &launch, &env).unwrap();
    assert_eq!(opened.terminal, "sh");
    let record = rig.wait_for_record("lf");
    assert_eq!(record.argv, argv[1..]);
    assert_eq!(record.cwd, rig.cwd());
    assert_scrubbed(&record.env);
    rig.assert_nothing_ran();

    let bad = |template: &str| match terminal::plan(&Choice::Custom(template.into()), &launch, &env)
    {
        Err(TerminalError::BadTemplate(why)) => why,
        other => panic!("{template}: expected BadTemplate, got {other:?}"),
    };
    assert!(bad("myterm -e").contains("{argv}"));
    assert!(bad("myterm -e '{argv}").contains("not closed"));
    assert!(bad("   ").contains("empty"));
}

#[test]
fn with_no_terminal_the_user_gets_a_command_that_reproduces_the_launch() {
    let rig = Rig::new();
    let mut argv = strings(&["/bin/sh", "-c", r#"printf '%s\0' "$PWD" "$@""#, "sh"]);
    argv.extend(hostile_argv(Path::new("/usr/bin/lf")));
    let launch = Launch {
        argv: argv.clone(),
        cwd: rig.session_dir(),
    };
    let env = rig.env().set("PATH", "");
    let error = open(&Choice::Auto, &launch, &env).unwrap_err();
    let message = error.to_string();
    let TerminalError::NotFound { command, tried } = error else {
        panic!("expected NotFound, got {error:?}")
    };
    assert!(message.contains(&command), "{message}");
    assert!(tried.contains(&"xterm".to_string()));
    assert_eq!(command, copyable_command(&launch));
    assert!(command.starts_with("cd -- '"));

    let out = Command::new("sh")
        .args(["-c", &command])
        .current_dir(rig.home())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed: Vec<&str> = std::str::from_utf8(&out.stdout)
        .unwrap()
        .split_terminator('\0')
        .collect();
    assert_eq!(printed[0], rig.cwd());
    assert_eq!(printed[1..], argv[4..]);
    rig.assert_nothing_ran();

    // A named terminal that is not installed says the same.
    match terminal::plan(&Choice::Named("kitty".into()), &launch, &env) {
        Err(TerminalError::NotFound { tried, command }) => {
            assert_eq!(tried, ["kitty"]);
            assert_eq!(command, copyable_command(&launch));
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[test]
fn a_missing_session_directory_opens_at_home() {
    let rig = Rig::new();
    rig.stand_in("kitty");
    let launch = Launch {
        argv: strings(&["/usr/bin/lf", "session", "open", "ask_1"]),
        cwd: rig.root.path().join("deleted worktree"),
    };
    let home = rig.home().to_str().unwrap().to_string();
    let opened = open(&Choice::Named("kitty".into()), &launch, &rig.env()).unwrap();
    assert_eq!(opened.cwd, rig.home());
    let record = rig.wait_for_record("kitty");
    assert_eq!(record.cwd, home);
    assert_eq!(record.argv[..3], strings(&["--directory", &home, "--"]));
}

#[test]
fn a_terminal_that_exits_is_reaped() {
    let rig = Rig::new();
    rig.stand_in("xterm");
    let launch = Launch {
        argv: strings(&["/usr/bin/lf", "session", "open", "ask_1"]),
        cwd: rig.session_dir(),
    };
    let opened = open(&Choice::Named("xterm".into()), &launch, &rig.env()).unwrap();
    rig.wait_for_record("xterm");
    // An unreaped child would stay in /proc as a zombie for as long as the tray runs.
    let proc_entry = PathBuf::from(format!("/proc/{}", opened.pid));
    let deadline = Instant::now() + RECORD_TIMEOUT;
    while proc_entry.exists() {
        assert!(
            Instant::now() < deadline,
            "terminal {} not reaped",
            opened.pid
        );
        std::thread::sleep(POLL);
    }
}

#[test]
fn launch_failures_are_reported() {
    let rig = Rig::new();
    let launch = Launch {
        argv: strings(&["/usr/bin/lf", "session", "open", "ask_1"]),
        cwd: rig.session_dir(),
    };
    rig.executable("kitty", "#!/nonexistent/interpreter\n");
    match open(&Choice::Named("kitty".into()), &launch, &rig.env()) {
        Err(error @ TerminalError::Spawn { .. }) => {
            assert!(error.to_string().starts_with("Could not start kitty: "));
        }
        other => panic!("expected Spawn, got {other:?}"),
    }
    // A file that is not executable is not a terminal.
    fs::write(rig.bin().join("foot"), "#!/bin/sh\n").unwrap();
    assert!(matches!(
        terminal::plan(&Choice::Named("foot".into()), &launch, &rig.env()),
        Err(TerminalError::NotFound { .. })
    ));
    let empty = Launch {
        argv: Vec::new(),
        cwd: rig.session_dir(),
    };
    assert!(matches!(
        open(&Choice::Auto, &empty, &rig.env()),
        Err(TerminalError::EmptyArgv)
    ));
}

fn session_with_argv(argv: &[&str]) -> SessionRecord {
    serde_json::from_value(serde_json::json!({
        "id": argv.last().unwrap(), "kind": "ask", "state": "waiting", "cwd": "/tmp",
        "open_argv": argv,
    }))
    .unwrap()
}

#[test]
fn an_id_that_looks_like_an_option_stays_an_id() {
    let launch = Launch::for_session(&session_with_argv(&[
        "/bin/lf",
        "session",
        "open",
        "--replace",
    ]));
    assert_eq!(
        launch.argv,
        ["/bin/lf", "session", "open", "--", "--replace"]
    );
    // Move here: the flag goes before `--`, where lf still reads it as a flag.
    assert_eq!(
        launch.replace().argv,
        ["/bin/lf", "session", "open", "--replace", "--", "--replace"]
    );
    let plain = Launch::for_session(&session_with_argv(&["/bin/lf", "session", "open", "ask_1"]));
    assert_eq!(plain.argv, ["/bin/lf", "session", "open", "ask_1"]);
    assert_eq!(
        plain.replace().argv,
        ["/bin/lf", "session", "open", "ask_1", "--replace"]
    );
    // An argv that already separates its operands is left as lf built it.
    let guarded = session_with_argv(&["/bin/lf", "session", "open", "--", "-x"]);
    let words: Vec<&str> = guarded.open_argv.iter().map(|w| &**w).collect();
    assert_eq!(Launch::for_session(&guarded).argv, words);
}
