//! lf's `store_revisions` table: one counter per domain of lf's store, bumped by triggers
//! inside the writer's own transaction (lf's migration `0.13.10.001_release.sql`;
//! loopflow-model.md §9.5: "`store_revisions` is the authority on what changed"). It is
//! what tells the tray whether a write moved the sessions or only recorded an lf process
//! (the tray's own lists among them), which the write itself cannot say.
//!
//! Read on a read-only connection that holds no transaction and writes nothing; lf's
//! schema is otherwise never read (its tables move every generation; its JSON is the
//! contract).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// What lf's readers query (its `monitor work` frames carry the same pairs).
const QUERY: &str = "SELECT domain, revision FROM store_revisions";

/// The domains whose moves change no session the list shows: an lf process recorded or
/// ended (`processes`; `execs` on D builds, before lf's `0.13.10` renamed it) and token
/// usage (`usage`). lf's own D reader decides the same way: its Sessions part ignores
/// both. Every other domain, one this app does not know included, may change the list.
const UNLISTED: &[&str] = &["processes", "execs", "usage"];

/// A reader never waits for lf's writers in WAL mode; it waits only while a writer
/// recovers or restarts the WAL, which takes milliseconds. A quarter second is far above
/// that and still well below the second in which a change must be told; past it the
/// reading fails and the tray lists as if the sessions moved.
const BUSY: Duration = Duration::from_millis(250);

/// One reading of `store_revisions`: each domain's revision.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Revisions(BTreeMap<String, i64>);

impl Revisions {
    /// A reading made of these pairs (lf's own readers' frames carry them too).
    pub fn of<'a>(pairs: impl IntoIterator<Item = (&'a str, i64)>) -> Revisions {
        Revisions(pairs.into_iter().map(|(d, r)| (d.to_string(), r)).collect())
    }

    /// Whether a domain that may change `lf session list` moved between `since` and this
    /// reading: any but [`UNLISTED`], appearing or vanishing included.
    pub fn moved_for_sessions(&self, since: &Revisions) -> bool {
        fn listed(revisions: &Revisions) -> impl Iterator<Item = (&String, &i64)> {
            let listed = |(domain, _): &(&String, &i64)| !UNLISTED.contains(&domain.as_str());
            revisions.0.iter().filter(listed)
        }
        !listed(self).eq(listed(since))
    }

    /// Read lf's revisions from its database at `db`.
    ///
    /// A WAL reader needs the `-wal` and `-shm` files, and SQLite creates both when they
    /// are missing (a read-only connection too), leaving them behind: lf's home would be
    /// written. So where they are missing (no lf has the database open; the last one to
    /// close checkpointed everything into the database file and removed them) the file
    /// is read as it stands (`immutable`: no locks, no `-wal`, no `-shm`). Where they
    /// exist the connection is SQLite's ordinary read-only WAL reader; see the README for
    /// what that does to `-shm`.
    pub fn read(db: &Path) -> Result<Revisions, String> {
        let beside = |suffix: &str| {
            let mut path = db.as_os_str().to_owned();
            path.push(suffix);
            Path::new(&path).exists()
        };
        if !db.exists() {
            return Err(format!("{} does not exist", db.display()));
        }
        let wal_open = beside("-wal") && beside("-shm");
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = if wal_open {
            Connection::open_with_flags(db, flags)
        } else {
            let uri = format!("file:{}?immutable=1", uri_path(db));
            Connection::open_with_flags(uri, flags)
        }
        .map_err(|e| format!("open {}: {e}", db.display()))?;
        let read = || -> rusqlite::Result<Revisions> {
            conn.busy_timeout(BUSY)?;
            conn.pragma_update(None, "query_only", true)?;
            // One statement in autocommit: its read transaction ends with it.
            let mut stmt = conn.prepare(QUERY)?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            rows.collect::<rusqlite::Result<BTreeMap<_, _>>>()
                .map(Revisions)
        };
        read().map_err(|e| format!("read {QUERY} in {}: {e}", db.display()))
    }
}

/// `path` for a `file:` URI: every byte but the plain ones escaped, so that none of the
/// characters a URI gives a meaning to (`?`, `#`, `%`) is read as such.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for &byte in path.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lf_store(dir: &Path) -> Connection {
        let conn = Connection::open(dir.join("loopflow.db")).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE store_revisions (domain TEXT PRIMARY KEY NOT NULL, revision INTEGER NOT NULL) WITHOUT ROWID;
             INSERT INTO store_revisions VALUES ('planning', 1), ('sessions', 2), ('flows', 3), ('processes', 4), ('usage', 5);",
        )
        .unwrap();
        conn
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn only_a_domain_the_list_may_show_counts_as_moved() {
        let before = Revisions::of([("sessions", 2), ("processes", 4), ("usage", 5)]);
        let own = Revisions::of([("sessions", 2), ("processes", 6), ("usage", 9)]);
        assert!(!own.moved_for_sessions(&before), "an lf process and usage");
        let d = Revisions::of([("sessions", 2), ("execs", 7), ("usage", 5)]);
        assert!(!d.moved_for_sessions(&Revisions::of([("sessions", 2), ("execs", 1)])));
        for moved in [
            Revisions::of([("sessions", 3), ("processes", 4), ("usage", 5)]),
            Revisions::of([
                ("sessions", 2),
                ("flows", 1),
                ("processes", 4),
                ("usage", 5),
            ]),
            // A domain this app does not know may change what lf lists.
            Revisions::of([("sessions", 2), ("processes", 4), ("usage", 5), ("asks", 1)]),
        ] {
            assert!(moved.moved_for_sessions(&before), "{moved:?}");
        }
        assert!(before.moved_for_sessions(&Revisions::default()));
    }

    #[test]
    fn a_reading_writes_nothing_to_lfs_home() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("loopflow.db");
        // While lf has the database open its WAL files exist and are read as SQLite does.
        let lf = lf_store(dir.path());
        lf.execute(
            "UPDATE store_revisions SET revision = 9 WHERE domain = 'sessions'",
            [],
        )
        .unwrap();
        let open = Revisions::read(&db).unwrap();
        assert_eq!(open.0["sessions"], 9);
        let wal = std::fs::metadata(dir.path().join("loopflow.db-wal")).unwrap();
        assert!(wal.len() > 0, "the commit is in the WAL still");
        // Once lf closed it (and removed them) the reading creates neither.
        drop(lf);
        assert_eq!(files(dir.path()), ["loopflow.db"]);
        let closed = Revisions::read(&db).unwrap();
        assert_eq!(closed, open);
        assert_eq!(files(dir.path()), ["loopflow.db"]);
        assert!(Revisions::read(&dir.path().join("none.db")).is_err());
        assert_eq!(files(dir.path()), ["loopflow.db"], "nor a missing database");
    }

    #[test]
    fn an_lf_without_the_table_gives_no_reading() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("odd ?#%.db");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE sessions (id TEXT);")
            .unwrap();
        let err = Revisions::read(&db).unwrap_err();
        assert!(err.contains("no such table: store_revisions"), "{err}");
        drop(conn);
        let err = Revisions::read(&db).unwrap_err();
        assert!(err.contains("no such table: store_revisions"), "{err}");
    }
}
