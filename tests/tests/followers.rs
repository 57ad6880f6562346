//! Other machines named and let go while the engine runs, as the settings panel does it:
//! a machine let go ends its ssh at once, one that stays keeps its connection.
//!
//! One test in a binary of its own: it puts a stand-in `ssh` first on the process's PATH
//! before any thread starts, which no other test may share.

use std::path::Path;
use std::time::{Duration, Instant};

use lf_sim::SimHome;
use lf_tray_core::engine::{Config, Engine};

/// Long enough for a loaded CI machine; a passing run takes well under a second.
const WAIT: Duration = Duration::from_secs(20);
/// How soon a machine let go must have no ssh left: the follower is aborted as the engine
/// takes the change, and the kernel ends a SIGKILLed ssh within milliseconds.
const GONE: Duration = Duration::from_secs(2);

/// A stand-in `ssh`: it answers the probe with an lf-tray there and, for the watch,
/// records "DEST PID", prints a snapshot of one session named after the machine and waits
/// as a connection to an idle machine does (`exec` keeps its pid).
fn stand_in_ssh(dir: &Path, pids: &Path) {
    let text = format!(
        r#"#!/bin/sh
dest=
while [ $# -gt 1 ]; do
  [ "$1" = "--" ] && dest=$2
  shift
done
case "$1" in
  *'command -v'*) echo lf-tray=/far/bin/lf-tray; exit 0 ;;
esac
echo "$dest $$" >> '{pids}'
echo '{{"type":"snapshot","at":"2026-01-01T00:00:00Z","sessions":[{{"id":"on-'"$dest"'","state":"active"}}]}}'
exec /bin/sleep 600
"#,
        pids = pids.display()
    );
    let ssh = dir.join("ssh");
    std::fs::write(&ssh, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every connection the stand-in made, in order: (machine, pid).
fn connections(pids: &Path) -> Vec<(String, u32)> {
    std::fs::read_to_string(pids)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (dest, pid) = l.split_once(' ')?;
            Some((dest.to_string(), pid.trim().parse().ok()?))
        })
        .collect()
}

/// A process that runs: it exists and is not a zombie waiting to be reaped.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// The sessions the engine lists, as "id@machine", sorted.
fn listed(engine: &Engine) -> Vec<String> {
    let mut names: Vec<String> = engine
        .sessions()
        .iter()
        .filter_map(|s| Some(format!("{}@{}", s.id, s.machine.as_deref()?)))
        .collect();
    names.sort();
    names
}

async fn until<T>(what: &str, within: Duration, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(it) = found() {
            return it;
        }
        assert!(Instant::now() < deadline, "no {what} within {within:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The one running connection to `dest`, once there is exactly one.
fn connected(pids: &Path, dest: &str) -> Option<u32> {
    match connections(pids)
        .into_iter()
        .filter(|(d, pid)| d == dest && running(*pid))
        .collect::<Vec<_>>()[..]
    {
        [(_, pid)] => Some(pid),
        _ => None,
    }
}

#[test]
fn a_machine_let_go_ends_its_ssh_at_once_and_one_that_stays_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let pids = dir.path().join("ssh-pids");
    stand_in_ssh(&bin, &pids);
    let path = std::env::var("PATH").unwrap_or_default();
    // No thread runs yet: the runtime is built below.
    std::env::set_var("PATH", format!("{}:{path}", bin.display()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let sim = SimHome::new(dir.path().join("home"));
        let mut config = Config::from_env(
            Some(sim.home().to_path_buf()),
            Some(env!("CARGO_BIN_EXE_lf").into()),
        );
        config.machines = vec!["box".into(), "far".into()];
        let (engine, events) = Engine::start(config);
        let both =
            || -> Option<(u32, u32)> { Some((connected(&pids, "box")?, connected(&pids, "far")?)) };
        let (box_ssh, far_ssh) = until("ssh to both machines", WAIT, both).await;
        until("both machines' sessions", WAIT, || {
            (listed(&engine) == ["on-box@box", "on-far@far"]).then_some(())
        })
        .await;

        engine.set_machines(vec!["far".into()]);
        let asked = Instant::now();
        // Gone and reaped: no zombie is left for the tray's life either.
        let reaped = || !Path::new(&format!("/proc/{box_ssh}")).exists();
        until("box's ssh gone", GONE, || reaped().then_some(())).await;
        let took = asked.elapsed();
        until("box's sessions gone", GONE, || {
            (listed(&engine) == ["on-far@far"]).then_some(())
        })
        .await;
        eprintln!("machine let go → its ssh gone: {took:?}");
        assert!(running(far_ssh), "far's ssh was ended");
        assert_eq!(connected(&pids, "far"), Some(far_ssh));
        assert!(
            !engine.status().contains("box:"),
            "box is not in the status: {}",
            engine.status()
        );

        engine.set_machines(vec!["far".into(), "box".into()]);
        let again = until("a new ssh to box", WAIT, || connected(&pids, "box")).await;
        assert_ne!(again, box_ssh);
        until("box's sessions back", WAIT, || {
            (listed(&engine) == ["on-box@box", "on-far@far"]).then_some(())
        })
        .await;
        let to_far: Vec<_> = connections(&pids)
            .into_iter()
            .filter(|(dest, _)| dest == "far")
            .collect();
        assert_eq!(
            to_far,
            [("far".to_string(), far_ssh)],
            "far was not reconnected"
        );

        // The engine let go: no connection outlives it.
        drop(engine);
        drop(events);
        until("every ssh gone after the engine", GONE, || {
            connections(&pids)
                .iter()
                .all(|(_, pid)| !running(*pid))
                .then_some(())
        })
        .await;
    });
}
