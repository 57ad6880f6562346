//! KDE Plasma on Wayland: KWin lets any program of the person's session bus load a script
//! (`org.kde.KWin /Scripting`), and a script may list the windows with their pids and make
//! one active. Nothing needs setting up.
//!
//! Each question is one short script, written to the tray's runtime directory, loaded,
//! run and unloaded again. It answers by calling the tray back on the bus (`callDBus` to
//! this connection's unique name): the pids of the normal windows and of the active one.
//! Its source holds only numbers and that unique name, which the bus daemon assigned and
//! is checked to be `:N.N`; nothing a session wrote reaches it.
//!
//! Plasma 5.27 (Debian 12) calls windows clients (`workspace.clientList()`,
//! `workspace.activeClient`, `clientActivated`, the script at `/<id>`); Plasma 6 renamed
//! them (`windowList()`, `activeWindow`, `windowActivated`, `/Scripting/Script<id>`). The
//! script picks its API by what `workspace` has, and the tray tries both paths; both are
//! run by tests/e2e/focus-wayland.sh (KWin 6.3 inside tests/e2e/debian13.sh).

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::Duration;

use futures_util::StreamExt;
use zbus::{Connection, Message, MessageStream};

use super::View;

pub const NAME: &str = "org.kde.KWin";
const SCRIPTING: &str = "/Scripting";
const SCRIPTING_INTERFACE: &str = "org.kde.kwin.Scripting";
const SCRIPT_INTERFACE: &str = "org.kde.kwin.Script";
/// Where the script calls the tray back (on this connection only, by its unique name).
const ANSWER_PATH: &str = "/org/loopflow/Tray/KWin";
const ANSWER_INTERFACE: &str = "org.loopflow.Tray.KWin1";

/// How long a script gets to answer: KWin answered in 18–25 ms here (measured, 2 cores);
/// a compositor busy drawing on a loaded machine has been seen to take a few hundred.
const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// The script, for `want` (0: only the windows and the active one; a pid: make its
/// normal window active first, and answer once it is). `{BUS}` and `{TOKEN}` are filled in.
const SCRIPT: &str = r#"(function () {
    var plasma6 = typeof workspace.windowList === "function";
    var list = plasma6 ? workspace.windowList() : workspace.clientList();
    var want = {WANT};
    var answered = false;
    function active() { return plasma6 ? workspace.activeWindow : workspace.activeClient; }
    function answer() {
        if (answered) return;
        answered = true;
        var pids = [];
        for (var i = 0; i < list.length; i++)
            if (list[i].normalWindow) pids.push(list[i].pid);
        var now = active();
        callDBus("{BUS}", "/org/loopflow/Tray/KWin", "org.loopflow.Tray.KWin1", "Answer",
                 "{TOKEN} " + (now ? now.pid : 0) + " " + pids.join(","));
    }
    var found = null;
    if (want > 0) {
        // Several windows of one process (konsole without --separate): the topmost
        // where KWin says the stacking order (Plasma 6), else the newest.
        var order = workspace.stackingOrder || list;
        for (var j = 0; j < order.length; j++)
            if (order[j].normalWindow && order[j].pid === want) found = order[j];
    }
    if (found && active() !== found) {
        var activated = plasma6 ? workspace.windowActivated : workspace.clientActivated;
        activated.connect(function (w) { if (w === found) answer(); });
        if (plasma6) workspace.activeWindow = found; else workspace.activeClient = found;
        if (active() === found) answer();
    } else {
        answer();
    }
})();
"#;

/// The windows and the active one, after making `want`'s window active (`Some(pid)`).
pub async fn ask(bus: &Connection, want: Option<u32>) -> Result<View, String> {
    let me = bus
        .unique_name()
        .map(|n| n.to_string())
        .filter(|n| is_unique_name(n))
        .ok_or("the tray has no name on the bus")?;
    let token = token();
    let source = SCRIPT
        .replace("{WANT}", &want.unwrap_or(0).to_string())
        .replace("{BUS}", &me)
        .replace("{TOKEN}", &token.to_string());
    let file = Script::write(token, &source)?;
    let name = format!("lf-tray-{token}");
    // Listening before the script runs, so its answer cannot come first.
    let mut incoming = MessageStream::from(bus);
    let id: i32 = bus
        .call_method(
            Some(NAME),
            SCRIPTING,
            Some(SCRIPTING_INTERFACE),
            "loadScript",
            &(file.path_text()?, name.as_str()),
        )
        .await
        .and_then(|m| m.body().deserialize())
        .map_err(|e| format!("KWin would not load a script: {e}"))?;
    let answered = async {
        run(bus, id).await?;
        tokio::time::timeout(ANSWER_WAIT, answer(bus, &mut incoming, token))
            .await
            .map_err(|_| "KWin's script did not answer".to_string())?
    }
    .await;
    // Unloaded whatever happened: a script left loaded would stay until KWin restarts.
    let _ = bus
        .call_method(
            Some(NAME),
            SCRIPTING,
            Some(SCRIPTING_INTERFACE),
            "unloadScript",
            &(name.as_str(),),
        )
        .await;
    answered
}

/// Run script `id`: at `/<id>` on 5.27, `/Scripting/Script<id>` on Plasma 6.
async fn run(bus: &Connection, id: i32) -> Result<(), String> {
    let mut last = String::new();
    for path in [format!("/{id}"), format!("/Scripting/Script{id}")] {
        match bus
            .call_method(
                Some(NAME),
                path.as_str(),
                Some(SCRIPT_INTERFACE),
                "run",
                &(),
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("KWin would not run its script: {last}"))
}

/// The script's call back with this `token`; answered, as a D-Bus call should be.
async fn answer(
    bus: &Connection,
    incoming: &mut MessageStream,
    token: u64,
) -> Result<View, String> {
    while let Some(message) = incoming.next().await {
        let Ok(message) = message else { continue };
        if !is_answer(&message) {
            continue;
        }
        let _ = bus.reply(&message.header(), &()).await;
        let Ok(text) = message.body().deserialize::<String>() else {
            continue;
        };
        if let Some((said, view)) = parse_answer(&text) {
            if said == token {
                return Ok(view);
            }
        }
    }
    Err("the bus closed".into())
}

fn is_answer(message: &Message) -> bool {
    let header = message.header();
    header.message_type() == zbus::message::Type::MethodCall
        && header.path().is_some_and(|p| p.as_str() == ANSWER_PATH)
        && header
            .interface()
            .is_some_and(|i| i.as_str() == ANSWER_INTERFACE)
        && header.member().is_some_and(|m| m.as_str() == "Answer")
}

/// `TOKEN ACTIVE PID,PID,…` (ACTIVE 0: no window is active).
fn parse_answer(text: &str) -> Option<(u64, View)> {
    let mut words = text.split(' ');
    let token = words.next()?.parse().ok()?;
    let active: u32 = words.next()?.parse().ok()?;
    let pids = words
        .next()?
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    if words.next().is_some() {
        return None;
    }
    Some((
        token,
        View {
            pids,
            active: (active != 0).then_some(active),
        },
    ))
}

/// A unique bus name as the daemon makes them (`:1.42`): the only text in the script.
fn is_unique_name(name: &str) -> bool {
    name.strip_prefix(':').is_some_and(|rest| {
        rest.split('.').count() == 2
            && rest
                .split('.')
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// A number no other script of this tray has at the same time (its answer and its name).
fn token() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0);
    // Microseconds and a count: unique within this process, and a number JavaScript
    // holds exactly (below 2^53).
    ((now % 1_000_000_000_000) * 1000 + NEXT.fetch_add(1, Ordering::Relaxed) % 1000) % (1 << 53)
}

/// The script's file in `$XDG_RUNTIME_DIR/lf-tray/` (0700, the person's only), removed
/// when dropped.
struct Script(PathBuf);

impl Script {
    fn write(token: u64, source: &str) -> Result<Script, String> {
        use std::io::Write;
        let dir = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|d| !d.is_empty())
            .map(|d| PathBuf::from(d).join("lf-tray"))
            .ok_or("XDG_RUNTIME_DIR is not set")?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        let path = dir.join(format!("kwin-{token}.js"));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("could not write {}: {e}", path.display()))?;
        let script = Script(path);
        file.write_all(source.as_bytes())
            .map_err(|e| format!("could not write {}: {e}", script.0.display()))?;
        Ok(script)
    }

    fn path_text(&self) -> Result<&str, String> {
        self.0
            .to_str()
            .ok_or_else(|| format!("{} is not UTF-8", self.0.display()))
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_read_strictly() {
        let (token, view) = parse_answer("42 1234 1234,99").unwrap();
        assert_eq!(token, 42);
        assert_eq!(view.pids, [1234, 99]);
        assert_eq!(view.active, Some(1234));
        let (_, none) = parse_answer("7 0 ").unwrap();
        assert!(none.pids.is_empty() && none.active.is_none());
        for bad in ["", "x 1 2", "1 2 3,y", "1 2 3 4", "1 -2 3"] {
            assert!(parse_answer(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn only_a_daemon_made_name_and_numbers_reach_the_script() {
        assert!(is_unique_name(":1.42"));
        for bad in ["org.kde.KWin", ":1", ":1.4\"2", ":1.42); x(", "", ":.1"] {
            assert!(!is_unique_name(bad), "{bad:?}");
        }
        let source = SCRIPT
            .replace("{WANT}", "77")
            .replace("{BUS}", ":1.42")
            .replace("{TOKEN}", "9");
        for placeholder in ["{WANT}", "{BUS}", "{TOKEN}"] {
            assert!(
                !source.contains(placeholder),
                "{placeholder} left in the script"
            );
        }
        assert!(source.contains("var want = 77;"));
        assert!(token() < (1 << 53));
        assert_ne!(token(), token());
    }
}
