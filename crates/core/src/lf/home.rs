//! Where lf keeps its records. lf has three home resolvers; a tray app needs two of
//! them: the Ask directory follows `$LF_HOME` only, while Run records (and the database)
//! follow `$LF_CONTROL_HOME` first. With no overrides both are `~/.lf`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Variables lf sets inside a Run. A tray started from an agent's terminal inherits
/// them, and lf would then attach the work the tray triggers to that Run; Loopflow.app
/// strips them from every process it starts for the same reason.
pub const RUN_CONTEXT_VARS: [&str; 6] = [
    "LF_RUN_ID",
    "LF_RUN_DIR",
    "LF_PARENT_RUN_ID",
    "LF_HUMAN_SESSION",
    "LF_HUMAN_SESSION_RUN",
    "LF_HUMAN_SESSION_RUN_BIND",
];

/// Variables that say which lf and which store: a session opened for the person must see
/// the same ones as the tray, wherever its process is started from.
pub const STORE_VARS: [&str; 5] = [
    "LF_HOME",
    "LF_CONTROL_HOME",
    "LF_DB_PATH",
    "LF_CONTROL_DB_PATH",
    "LF_BIN",
];

/// The directories the engine reads. It never writes under any of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// `$LF_HOME`, else `~/.lf`: holds `human-sessions/`.
    pub lf_home: PathBuf,
    /// `$LF_CONTROL_HOME`, else `$LF_HOME`, else `~/.lf`: holds `runs/`.
    pub control_home: PathBuf,
    /// lf's SQLite store. Flow positions live there; the engine only watches its directory
    /// to know when to ask `lf` again.
    pub db_path: PathBuf,
}

impl Home {
    /// Resolve the homes exactly as lf does from this process's environment.
    pub fn from_env() -> Home {
        Home::resolve(|name| std::env::var_os(name))
    }

    /// Both homes at one directory (`--home DIR`).
    pub fn at(dir: impl Into<PathBuf>) -> Home {
        let dir = dir.into();
        Home {
            db_path: dir.join("loopflow.db"),
            lf_home: dir.clone(),
            control_home: dir,
        }
    }

    /// Resolution with the environment passed in, so it can be tested without touching
    /// the process environment.
    pub fn resolve(var: impl Fn(&str) -> Option<OsString>) -> Home {
        // lf treats an empty variable as unset.
        let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let default = || {
            set("HOME")
                .unwrap_or_else(|| PathBuf::from("/"))
                .join(".lf")
        };
        let lf_home = set("LF_HOME").unwrap_or_else(default);
        let control_home = set("LF_CONTROL_HOME").unwrap_or_else(|| lf_home.clone());
        let db_path = set("LF_CONTROL_DB_PATH")
            .or_else(|| set("LF_DB_PATH"))
            .map(|p| {
                if p.is_absolute() {
                    p
                } else {
                    control_home.join(p)
                }
            })
            .unwrap_or_else(|| control_home.join("loopflow.db"));
        Home {
            lf_home,
            control_home,
            db_path,
        }
    }

    /// `<lf_home>/human-sessions`: one JSON file per Ask.
    pub fn asks_dir(&self) -> PathBuf {
        self.lf_home.join("human-sessions")
    }

    /// `<control_home>/runs`: `runs/<pp>/run_<hex>/` per Run.
    pub fn runs_dir(&self) -> PathBuf {
        self.control_home.join("runs")
    }

    /// The directory that holds the database and its `-wal` / `-journal` companions.
    pub fn db_dir(&self) -> &Path {
        self.db_path.parent().unwrap_or(Path::new("/"))
    }

    /// `runs/<run_id[4..6]>/<run_id>`, or `None` for an id lf could not have made (too
    /// short, or a path separator or dot-name that would escape `runs/`).
    pub fn run_dir(&self, run_id: &str) -> Option<PathBuf> {
        let shard = run_id.get(4..6)?;
        let safe = |s: &str| !s.is_empty() && !s.starts_with('.') && !s.contains(['/', '\\']);
        (safe(run_id) && safe(shard)).then(|| self.runs_dir().join(shard).join(run_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn home(vars: &[(&str, &str)]) -> Home {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.into()))
            .collect();
        Home::resolve(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_to_dot_lf_for_both() {
        let h = home(&[("HOME", "/home/me")]);
        assert_eq!(h.asks_dir(), Path::new("/home/me/.lf/human-sessions"));
        assert_eq!(h.runs_dir(), Path::new("/home/me/.lf/runs"));
        assert_eq!(h.db_path, Path::new("/home/me/.lf/loopflow.db"));
    }

    #[test]
    fn control_home_moves_runs_but_not_asks() {
        let h = home(&[("HOME", "/h"), ("LF_HOME", "/a"), ("LF_CONTROL_HOME", "/c")]);
        assert_eq!(h.asks_dir(), Path::new("/a/human-sessions"));
        assert_eq!(h.runs_dir(), Path::new("/c/runs"));
        assert_eq!(h.db_path, Path::new("/c/loopflow.db"));
    }

    #[test]
    fn empty_variables_count_as_unset_and_db_overrides_apply() {
        let h = home(&[("HOME", "/h"), ("LF_HOME", ""), ("LF_DB_PATH", "db/x.db")]);
        assert_eq!(h.lf_home, Path::new("/h/.lf"));
        assert_eq!(h.db_path, Path::new("/h/.lf/db/x.db"));
        let h = home(&[
            ("HOME", "/h"),
            ("LF_CONTROL_DB_PATH", "/d/c.db"),
            ("LF_DB_PATH", "/d/x.db"),
        ]);
        assert_eq!(h.db_path, Path::new("/d/c.db"));
        assert_eq!(h.db_dir(), Path::new("/d"));
    }

    #[test]
    fn run_dirs_are_sharded_and_cannot_escape() {
        let h = Home::at("/x");
        assert_eq!(
            h.run_dir("run_0f3a9c").unwrap(),
            Path::new("/x/runs/0f/run_0f3a9c")
        );
        assert_eq!(h.run_dir("run"), None);
        assert_eq!(h.run_dir("run_../../etc"), None);
        assert_eq!(h.run_dir("run_0f/../../a"), None);
    }
}
