//! The app's log: `$XDG_STATE_HOME/lf-tray/lf-tray.log` (else `~/.local/state/…`), one line
//! per thing a person may later ask about — a transition, a popup shown or closed, an
//! action, a terminal launched, an lf call that failed (with lf's words). A tray app
//! started at login has no terminal, so stderr alone would be read by nobody.
//!
//! `RUST_LOG` filters it the usual way (`RUST_LOG=debug`, `RUST_LOG=lf_tray=trace`). The
//! file is kept under [`MAX_BYTES`]: past it, it becomes `lf-tray.log.1` and a new one is
//! started, so it never grows without bound on a machine that runs for months. Warnings and
//! errors also go to stderr, for whoever started the app from a terminal.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use lf_tray_core::{Event, SessionRecord};
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// A busy day is a few hundred lines of ~150 bytes; 1 MiB holds weeks, and two files of it
/// are nothing on any disk.
const MAX_BYTES: u64 = 1 << 20;

/// What is logged when `RUST_LOG` is not set: the app's own steps, and other crates'
/// warnings (tao, wry and zbus are chatty below that).
const DEFAULT_FILTER: &str = "warn,lf_tray=info,lf_tray_core=info";

static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Where the log is written, once [`init`] ran and could open it.
pub fn path() -> Option<&'static Path> {
    PATH.get().and_then(Option::as_deref)
}

/// The log file's default place.
pub fn default_path() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|home| home.join(".local").join("state")))?;
    Some(state.join("lf-tray").join("lf-tray.log"))
}

/// Start logging to the file (and warnings to stderr). Called once, first thing; a file
/// that cannot be opened is said on stderr and the app runs on.
pub fn init() {
    let file = default_path().and_then(|path| match Rotating::open(&path) {
        Ok(file) => Some((path, file)),
        Err(e) => {
            eprintln!("lf-tray: no log file at {}: {e}", path.display());
            None
        }
    });
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_FILTER.into());
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(io::stderr)
        .with_target(false)
        .with_filter(LevelFilter::WARN);
    let (path, file_layer) = match file {
        Some((path, file)) => {
            let file: &'static Rotating = Box::leak(Box::new(file));
            let layer = tracing_subscriber::fmt::layer()
                .with_writer(move || Line(file))
                .with_ansi(false)
                .with_target(false)
                .with_filter(filter);
            (Some(path), Some(layer))
        }
        None => (None, None),
    };
    let _ = PATH.set(path);
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr)
        .try_init();
}

/// The log file, renamed to `.1` when it passes [`MAX_BYTES`].
struct Rotating {
    path: PathBuf,
    open: Mutex<Open>,
}

struct Open {
    file: File,
    len: u64,
}

impl Rotating {
    fn open(path: &Path) -> io::Result<Rotating> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let open = Open::append(path)?;
        Ok(Rotating {
            path: path.to_path_buf(),
            open: Mutex::new(open),
        })
    }
}

impl Open {
    fn append(path: &Path) -> io::Result<Open> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let len = file.metadata()?.len();
        Ok(Open { file, len })
    }
}

/// One formatted event. tracing's formatter hands over each event whole, in one write.
struct Line<'a>(&'a Rotating);

impl Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // A line break inside untrusted text (a title, lf's stderr) must not start a line
        // of its own that reads like another event.
        let body = buf.strip_suffix(b"\n").unwrap_or(buf);
        let mut line: Vec<u8> = body
            .iter()
            .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
            .collect();
        line.push(b'\n');
        let mut open = self.0.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.len + line.len() as u64 > MAX_BYTES && open.len > 0 {
            let mut old = self.0.path.clone().into_os_string();
            old.push(".1");
            // Rotation failing (a read-only dir) keeps writing to the file it has.
            if std::fs::rename(&self.0.path, &old).is_ok() {
                if let Ok(fresh) = Open::append(&self.0.path) {
                    *open = fresh;
                }
            }
        }
        open.file.write_all(&line)?;
        open.len += line.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One log line per thing the engine saw: a transition, or a problem reading lf (an lf call
/// that failed carries lf's own words).
pub(crate) fn event(event: &Event) {
    let session = |verb: &str, s: &SessionRecord| {
        tracing::info!(
            "SESSION {verb} id={} state={} needs_you={}",
            s.id,
            s.state.as_str(),
            s.needs_you()
        )
    };
    match event {
        Event::Snapshot { sessions, .. } => tracing::info!(
            "SNAPSHOT sessions={} waiting={}",
            sessions.len(),
            sessions.iter().filter(|s| s.needs_you()).count()
        ),
        Event::Asked { session: s, .. } => session("asked", s),
        Event::Ready { session: s, .. } => session("ready", s),
        Event::State { session: s, .. } => session("changed", s),
        Event::Resolved { session: s, .. } => session("resolved", s),
        Event::Stopped { session: s, .. } => session("stopped", s),
        Event::Appeared { session: s, .. } => session("appeared", s),
        Event::Warning { path, message, .. } => match path {
            Some(path) => tracing::warn!("{}: {message}", path.display()),
            None => tracing::warn!("{message}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_stay_whole_and_the_file_rotates_past_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/lf-tray/lf-tray.log");
        let log = Rotating::open(&path).unwrap();
        Line(&log)
            .write_all(b"INFO NOTIFY title=a\nFAKE forged line\n")
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "INFO NOTIFY title=a FAKE forged line\n"
        );
        let filler = vec![b'x'; 4096];
        for _ in 0..(MAX_BYTES / 4096 + 1) {
            Line(&log).write_all(&filler).unwrap();
        }
        let rotated = dir.path().join("state/lf-tray/lf-tray.log.1");
        let old = std::fs::metadata(&rotated).unwrap().len();
        let new = std::fs::metadata(&path).unwrap().len();
        assert!(old <= MAX_BYTES && new <= MAX_BYTES, "{old} {new}");
        assert!(new > 0, "the line that passed the cap starts the new file");
        assert!(std::fs::read_to_string(&rotated)
            .unwrap()
            .starts_with("INFO NOTIFY"));
    }
}
