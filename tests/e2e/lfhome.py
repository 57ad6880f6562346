"""Plays lf in a temporary home: writes Ask records the way lf does
(loopflow-model §2.2): `human-sessions/` is 0700, each record is pretty JSON written
to `<id>.<uuid>.tmp` (0600, create-new), fsynced, then renamed to `<id>.json`, so a
watcher only ever sees whole files.

Flow review steps live in lf's SQLite database, which the tray never reads; lf-sim
(tests/src/store.rs) keeps each as a JSON FlowSpec in a `flow_positions` row of a real
WAL-mode database at the database path, and so does this file.
"""

import json
import os
import sqlite3
import uuid
from pathlib import Path


def _atomic_write(directory: Path, stem: str, value, tmp_name=None, final_name=None) -> Path:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    tmp = directory / (tmp_name or f"{stem}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, json.dumps(value, indent=2).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    final = directory / (final_name or f"{stem}.json")
    os.rename(tmp, final)
    return final


class LfHome:
    def __init__(self, root):
        self.root = Path(root)

    @property
    def asks_dir(self) -> Path:
        return self.root / "human-sessions"

    def ask_path(self, ask_id) -> Path:
        return self.asks_dir / f"{ask_id}.json"

    def ask(self, work, prefix, label):
        """A fresh Ask in a directory of its own under `work`, titled `prefix label` and a
        piece of its id (so each check's popups are told apart): (id, title, cwd)."""
        sid = f"ask_{label}_{uuid.uuid4().hex[:12]}"
        cwd = work / label
        cwd.mkdir(parents=True, exist_ok=True)
        title = f"{prefix} {label} {sid[-6:]}"
        self.write_ask(sid, title=title, prompt=f"{title}\nWhat now?", cwd=cwd, detail=label)
        return sid, title, cwd

    def write_ask(self, ask_id, *, title, prompt, cwd, detail="Human ask",
                  ready_summary=None, status="waiting"):
        """A generation-A Ask record, as `lf ask` writes it before a session is attached."""
        parent = "run_" + uuid.uuid4().hex
        record = {
            "id": ask_id,
            "parent_run_id": parent,
            "parent_run_dir": str(self.root / "runs" / parent[4:6] / parent),
            "work": None,
            "work_selector": None,
            "title": title,
            "detail": detail,
            "prompt": prompt,
            "cwd": str(cwd),
            "model": "claude:opus",
            "session_run_id": None,
            "ready_summary": ready_summary,
            "status": status,
        }
        _atomic_write(self.asks_dir, ask_id, record)
        return record

    def read_ask(self, ask_id):
        return json.loads(self.ask_path(ask_id).read_text())

    def mark_ready(self, ask_id, summary):
        """What `lf session ready "<summary>"` does to the record."""
        record = self.read_ask(ask_id)
        record["ready_summary"] = summary
        _atomic_write(self.asks_dir, ask_id, record)

    def complete(self, ask_id):
        """What `lf session complete` writes; the blocked `lf ask` then deletes the file."""
        record = self.read_ask(ask_id)
        record["status"] = {"completed": {"summary": record.get("ready_summary") or ""}}
        _atomic_write(self.asks_dir, ask_id, record)

    def remove_ask(self, ask_id):
        self.ask_path(ask_id).unlink()

    # --- Flow sessions, in lf-sim's stand-in database ---

    @property
    def db_path(self) -> Path:
        return self.root / "loopflow.db"

    def write_flows(self, flows):
        """Replace the Flow review steps lf-sim lists. Each is a dict of FlowSpec fields:
        id, title, detail (the step), cwd, state, ready_summary, work (a selector)."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        # SQLite gives -wal and -shm the database file's mode: create it private first.
        os.close(os.open(self.db_path, os.O_WRONLY | os.O_CREAT, 0o600))
        db = sqlite3.connect(self.db_path, timeout=15, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # The tables lf-sim makes (IF NOT EXISTS: lf-sim adds the rest when it opens).
            db.executescript("""
                CREATE TABLE IF NOT EXISTS store_revisions (
                    domain TEXT PRIMARY KEY, revision INTEGER NOT NULL);
                INSERT OR IGNORE INTO store_revisions (domain, revision) VALUES ('flows', 0);
                CREATE TABLE IF NOT EXISTS flow_positions (
                    position INTEGER PRIMARY KEY, spec TEXT NOT NULL);
            """)
            # One transaction, like lf-sim's writers (the stand-in lf rewrites the list
            # on approve/iterate).
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM flow_positions")
            db.executemany(
                "INSERT INTO flow_positions (position, spec) VALUES (?, ?)",
                [(i, json.dumps(flow)) for i, flow in enumerate(flows)])
            db.execute("UPDATE store_revisions SET revision = revision + 1 WHERE domain = 'flows'")
            db.execute("COMMIT")
        finally:
            db.close()

    def write_ready_flow(self, *, title, step, cwd, ready_summary, flow="design"):
        """One generation-A Flow review step (id `<task>:<flow>:<node>:<iteration>`),
        marked ready by its agent. Returns its id."""
        task = "task_" + uuid.uuid4().hex
        flow_id = f"{task}:{flow}:{step}:0"
        self.write_flows([{
            "id": flow_id, "title": title, "detail": step, "cwd": str(cwd),
            "state": "waiting", "ready_summary": ready_summary, "work": f"task:{task}",
        }])
        return flow_id
