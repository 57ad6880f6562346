"""What the desktop suites share (e2e.py, memory.py, wayland.py, terminals.py): waiting
on a real surface with a timeout, the check runner with its `ok`/`FAIL`/`SKIP` lines and
summary, the paths run.sh and the others export, the app's log and the stand-in lf's call
records, and the processes behind a terminal window.
"""

import json
import os
import re
import signal
import subprocess
import time
import traceback
from pathlib import Path

# A passing step takes well under 1 s on the 2-core machine; these bound what a broken
# part costs on a CI machine shared with a build. Startup covers GTK, WebKit and the
# app's first `lf session list`; a step covers the engine's debounce and one stand-in
# lf call; a terminal covers a cold start of the slowest one measured (konsole, ~3 s).
START_TIMEOUT = 20.0
STEP_TIMEOUT = 8.0
TERMINAL_TIMEOUT = 20.0
POLL = 0.05
# How long nothing must happen for "it did not happen" to mean something: the app shows a
# lone popup within milliseconds of its record (p99 5 ms measured) and holds a burst
# 300 ms, and it acts on a click within milliseconds, so a popup or a second terminal that
# was coming would have come well inside it.
QUIET_SPELL = 1.5

APP_NAME = "Loopflow Tray"
# lf's Run context (loopflow-model §2.9): the harness starts the app inside one, and
# no session it opens may inherit it.
SCRUBBED = ("LF_RUN_ID", "LF_RUN_DIR", "LF_PARENT_RUN_ID", "LF_HUMAN_SESSION")


class CheckFailed(Exception):
    pass


class Skipped(Exception):
    pass


def expect(cond, message):
    if not cond:
        raise CheckFailed(message)


def wait_for(condition, what, timeout=STEP_TIMEOUT):
    """Poll condition() until it returns something truthy; fail with what it last saw.
    what may be a function, for a message that shows the state at the timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = condition()
            if value:
                return value
            last = value
        except CheckFailed:
            raise
        except Exception as e:  # the surface may not exist yet
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            what = what() if callable(what) else what
            raise CheckFailed(f"timed out after {timeout:.0f} s waiting for {what}; last saw: {last!r}")
        time.sleep(POLL)


def portal_calls(calls, is_app, first):
    """The app's calls to the desktop portal, in order, from a dbus-monitor capture (`calls`,
    a Lines of its output): those of the one connection of the app (`is_app(sender)`) that
    called CreateSession. dbus-monitor writes its lines a moment after the calls, so this
    waits until that connection's capture holds as many calls as `first` names (the caller
    then holds their order to `first`). Every connection of the app, for a failure's text."""
    def read():
        by_connection = {}
        for line in calls.all():
            if line.startswith("method call") and "sender=" in line:
                sender = line.split("sender=", 1)[1].split()[0]
                if is_app(sender):
                    by_connection.setdefault(sender, []).append(line.split("member=", 1)[1].split()[0])
        portal = [members for members in by_connection.values() if "CreateSession" in members]
        return (portal[0], by_connection) if len(portal) == 1 and len(portal[0]) >= len(first) else None
    members, by_connection = wait_for(read, f"the capture to hold the app's first {len(first)} calls to the portal")
    print(f"     the app's calls to the portal: {by_connection}", flush=True)
    return members


def heard_while_nothing_waits(keys, shown, timeout):
    """A key of the desktop's shortcuts, typed while nothing waits: the app hears it and does
    nothing (its log: `KEYS <shown>: nothing done: ...`). The desktop's X grab lands some time
    after its daemon lists the key (under CI's load a first key typed at once went to the
    focused window: seen once on Plasma 5.27), so the key is typed again every 2 s until the
    app hears one, within timeout; a key while nothing waits is harmless, and a suite types
    the keys that answer only once this one was heard. Returns how many were typed."""
    deadline = time.monotonic() + timeout
    typed = 0
    while True:
        mark = len(app_log().messages())
        subprocess.run(["xdotool", "key", keys], check=True, timeout=10)
        typed += 1
        try:
            wait_for(lambda: [m for m in app_log().messages()[mark:]
                              if m.startswith(f"KEYS {shown}: nothing done")], "", 2.0)
            break
        except CheckFailed:
            if time.monotonic() > deadline:
                raise CheckFailed(f"the app never heard {shown} while nothing waited "
                                  f"({typed} typed in {timeout:.0f} s)")
    print(f"     {shown} heard while nothing waited (typed {typed}×)", flush=True)
    return typed


def never(condition, what, spell=QUIET_SPELL):
    """Watch condition() for spell seconds: fail as soon as it is truthy (what happened
    is `what`, or what it returns), pass once the spell is over without it."""
    deadline = time.monotonic() + spell
    while True:
        value = condition()
        if value:
            what = what(value) if callable(what) else what
            raise CheckFailed(f"{what} (seen within {spell:.1f} s)")
        if time.monotonic() > deadline:
            return
        time.sleep(POLL)


# tracing's line: `2026-12-01T08:30:00.123456Z  INFO READY`.
LOG_LINE = re.compile(r"^\S+\s+(?:TRACE|DEBUG|INFO|WARN|ERROR)\s+(.*)$")


class Lines:
    """A file that grows one line per event (the app log, the terminal log, lf-sim's argv)."""

    def __init__(self, path):
        self.path = Path(path)

    def all(self):
        try:
            return self.path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def messages(self):
        """The app log's messages, without the time and level tracing puts first."""
        return [m.group(1) if (m := LOG_LINE.match(line)) else line for line in self.all()]

    def json(self):
        out = []
        for line in self.all():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line still being written
        return out


def app_log():
    """The app's log ($XDG_STATE_HOME/lf-tray/lf-tray.log: a line per transition, popup,
    action and terminal launched), for diagnostics only; only this function knows where
    it is."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Lines(Path(state) / "lf-tray" / "lf-tray.log")


def recent_steps(n=4):
    return app_log().all()[-n:]


def first_snapshot_logged(pid):
    """Whether the app with this pid logged its first snapshot: its first lf list is over.
    What lf writes before that may land while that list runs, and reads as its own lf's
    write; a menu without "Reading sessions…" can be the item's empty one from before it."""
    lines = app_log().all()
    starts = [i for i, line in enumerate(lines) if "START lf-tray" in line and f"pid={pid}" in line]
    return bool(starts) and any(" SNAPSHOT " in line for line in lines[starts[-1]:])


# --- the stand-in lf's records -------------------------------------------------------------


def open_calls(sim_argv, session_id, after=0):
    """`lf session open [--] <id>` calls recorded by the stand-in lf after the first
    `after` records."""
    out = []
    for call in sim_argv.json()[after:]:
        argv = call.get("argv", [])
        if argv[:2] == ["session", "open"] and [a for a in argv[2:] if a != "--"] == [session_id]:
            out.append(call)
    return out


def unmarked(argv):
    """The session's argv inside the tray's terminal mark (`/bin/sh -c SCRIPT sh ID
    argv…`, which sets LF_TERMINAL_ID and LF_TERMINAL_TTY inside the terminal), and the
    terminal id; an argv without the mark comes back as it is, with None."""
    argv = list(argv)
    if argv[:2] == ["/bin/sh", "-c"] and len(argv) > 5 and argv[3] == "sh":
        return argv[5:], argv[4]
    return argv, None


class Checks(list):
    """A driver's checks, in the order they are defined; `check = CHECKS.add` is the
    decorator that lists one."""

    def add(self, fn):
        self.append(fn)
        return fn


def run_suite(ctx, checks, finish=None):
    """A driver's main: its checks on `ctx`, the counts in ctx.out/result, and its app ended
    after them (or `finish(ctx)`, for a driver that leaves more behind)."""
    return run_checks(checks, ctx, ctx.out / "result", finish or (lambda ctx: end_app(ctx.app)))


# A popup's buttons, as drawn: Breeze (Plasma) and LXQt's style fill a button lighter than
# the popup around it. The bottom strip of a popup holds its buttons (about 30 px high).
BUTTON_STRIP = 44
# A button is at least this wide (the narrowest word, with the styles' margins, is ~45 px);
# a lighter run shorter than that is a glyph's gap or an edge's antialiasing.
BUTTON_MIN_WIDTH = 24


def lighter_buttons(popup, labelled=False):
    """The buttons drawn in the popup window's box (x, y, w, h), left to right, as the
    centres of the runs lighter than the popup's own background on the scanline of its
    bottom strip that crosses the most of them; read off the screen. `labelled`: buttons
    whose labels are wide enough to split a scanline through them into several runs, so
    the scanline that crosses the fewest (one through the buttons' padding, above or
    below their words) is taken instead."""
    x, y, w, h = popup
    top = y + h - BUTTON_STRIP
    raw = subprocess.run(["import", "-window", "root", "-crop", f"{w}x{BUTTON_STRIP}+{x}+{top}", "-depth", "8",
                          "rgb:-"], capture_output=True, check=True, timeout=20).stdout
    light = lambda i: sum(raw[i * 3:i * 3 + 3])  # noqa: E731
    # The popup's background: its left margin, where nothing is drawn.
    background = light((BUTTON_STRIP // 2) * w + 2)
    best = []
    for row in range(BUTTON_STRIP):
        runs, start = [], None
        for col in range(w + 1):
            lighter = col < w and light(row * w + col) > background + 12
            if lighter and start is None:
                start = col
            elif not lighter and start is not None:
                if col - start >= BUTTON_MIN_WIDTH:
                    runs.append((x + (start + col) // 2, top + row))
                start = None
        if labelled:
            if runs and (not best or len(runs) < len(best)):
                best = runs
        elif len(runs) > len(best):
            best = runs
    return best


def one_terminal(terminals, since, sid, cwd, by="the click", timeout=STEP_TIMEOUT):
    """What `by` opened after the stand-in terminal's first `since` launches (its
    `Lines` log): exactly one terminal, running lf's session verb for sid in cwd; a second
    one within the quiet spell fails. Returns that launch."""
    def launches():
        return [launch for launch in terminals.json()[since:] if sid in launch["argv"]]
    launch = wait_for(launches, f"{by} to open the session in a terminal", timeout)[0]
    expect(launch["argv"][-1] == sid and "session" in launch["argv"] and launch["cwd"] == str(cwd),
           f"the terminal runs {launch['argv']!r} in {launch['cwd']!r}")
    never(lambda: len(launches()) > 1, lambda _: f"{by} opened {len(launches())} terminals")
    return launch


def expect_session_call(call, session_id, cwd, lf_home):
    """What a person must get in the terminal: lf itself asked to open that session, on
    a terminal (stdin is a tty), in the session's directory, outside the tray's Run."""
    argv = call["argv"]
    rest = argv[2:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    expect(argv[:2] == ["session", "open"] and rest == [session_id],
           f"lf ran as {argv!r}; expected `session open [--] {session_id}`")
    expect(call.get("tty"), f"lf's stdin is not a terminal (tty {call.get('tty')!r}): the "
           "session would not be interactive")
    expect(call["cwd"] == str(cwd), f"lf ran in {call['cwd']!r}; expected the session's cwd {str(cwd)!r}")
    env = call.get("env", {})
    leaked = [name for name in SCRUBBED if name in env]
    expect(not leaked, f"the tray's Run context reached lf: {leaked} = {[env[n] for n in leaked]}")
    expect(env.get("LF_HOME") == str(lf_home),
           f"LF_HOME in lf's environment is {env.get('LF_HOME')!r}; expected {str(lf_home)!r}")
    # The terminal's mark, as lf reads it for `terminal_ids`: an id, and the very tty
    # lf's stdin is on (set from inside the terminal).
    expect(len(env.get("LF_TERMINAL_ID", "")) == 36,
           f"LF_TERMINAL_ID in lf's environment is {env.get('LF_TERMINAL_ID')!r}; expected a uuid")
    expect(env.get("LF_TERMINAL_TTY") == call.get("tty"),
           f"LF_TERMINAL_TTY is {env.get('LF_TERMINAL_TTY')!r}; lf's stdin is on {call.get('tty')!r}")


# --- processes ----------------------------------------------------------------------------
#
# pid_max is 32768 on the CI machine and parallel builds go through pids fast, so a pid
# alone may name another process a few seconds later: a process is its pid and its start
# time, and nothing is signalled unless both still match.


def proc_stat(pid):
    """(comm, state, ppid, start time in ticks) of a process, or None. comm is
    parenthesised in stat and may itself hold spaces and parentheses."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2:].split()
    return comm, fields[0], int(fields[1]), int(fields[19])


class Proc:
    def __init__(self, pid, start, comm):
        self.pid, self.start, self.comm = pid, start, comm

    @classmethod
    def of(cls, pid):
        info = proc_stat(pid)
        return cls(pid, info[3], info[0]) if info else None

    def alive(self):
        """Still this process and not a zombie (a zombie child of ours is reaped here)."""
        info = proc_stat(self.pid)
        if not info or info[3] != self.start:
            return False
        if info[1] == "Z":
            try:
                os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pass
            return False
        return True

    def signal(self, sig):
        if self.alive():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def __repr__(self):
        return f"{self.comm}[{self.pid}]"


def ancestors(pid):
    """[Proc, …] from pid's parent up to (not including) pid 1."""
    out = []
    info = proc_stat(pid)
    while info and info[2] > 1 and len(out) < 64:
        parent = Proc.of(info[2])
        if parent is None:
            break
        out.append(parent)
        info = proc_stat(parent.pid)
    return out


def environ(proc):
    """The environment a process was started with (/proc/PID/environ)."""
    raw = Path(f"/proc/{proc.pid}/environ").read_bytes()
    expect(proc.alive(), f"{proc} ended while its environment was read")
    out = {}
    for item in raw.split(b"\0"):
        if b"=" in item:
            name, _, value = item.partition(b"=")
            out[name.decode(errors="replace")] = value.decode(errors="replace")
    return out


def session_lf(call):
    """The stand-in lf process behind a recorded `session open` call. It waits for Enter,
    so it must still be there; a pid that is gone, or is something else now, tells
    nothing about the terminal."""
    proc = Proc.of(call["pid"])
    expect(proc and proc.comm == "lf",
           f"lf (pid {call['pid']}) is gone already: the session ended at once instead of waiting "
           f"in the terminal (the pid is now {proc!r})")
    return proc


def terminal_of(lf, holder):
    """The processes named holder (a comm) that the lf process runs under."""
    chain = ancestors(lf.pid)
    found = [p for p in chain if p.comm == holder]
    expect(found and lf.alive(), f"{lf} does not run inside {holder!r}; its ancestors: {chain}")
    return found


def end(procs, grace=3.0):
    """TERM, then KILL what is still there after grace seconds (konsole and
    gnome-terminal-server take about a second to close their windows when the machine
    is loaded)."""
    for proc in procs:
        proc.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        while proc.alive() and time.monotonic() < deadline:
            time.sleep(POLL)
        proc.signal(signal.SIGKILL)


def own_children():
    """This process's children: as the subreaper of the run, orphaned terminals too."""
    me = os.getpid()
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            info = proc_stat(int(entry.name))
            if info and info[2] == me:
                out.append(Proc(int(entry.name), info[3], info[0]))
    return out


def become_subreaper():
    """Terminals the app opens run in sessions of their own and outlive it; orphaned,
    they come to this process, so the finish can end exactly those, by pid."""
    import ctypes

    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


# --- the screen ---------------------------------------------------------------------------


def grab(box):
    """The screen's pixels in box (x, y, width, height), as rows of raw RGB bytes."""
    x, y, w, h = box
    raw = subprocess.run(["import", "-window", "root", "-crop", f"{w}x{h}+{x}+{y}", "-depth", "8", "rgb:-"],
                         capture_output=True, check=True, timeout=20).stdout
    return [raw[r * w * 3:(r + 1) * w * 3] for r in range(h)]


def changed_box(before, after):
    """Where two grabs of the same box differ, as (x0, y0, x1, y1) inside it, or None."""
    rows = [y for y, (a, b) in enumerate(zip(before, after)) if a != b]
    if not rows:
        return None
    xs = []
    for y in rows:
        a, b = before[y], after[y]
        xs.append(next(i for i in range(len(a)) if a[i] != b[i]) // 3)
        xs.append(next(i for i in range(len(a) - 1, -1, -1) if a[i] != b[i]) // 3)
    return min(xs), rows[0], max(xs), rows[-1]


# --- running ------------------------------------------------------------------------------


def end_app(app):
    """End an app a suite started (SIGTERM, then SIGKILL after 5 s), if it still runs."""
    if app is not None and app.poll() is None:
        app.terminate()
        try:
            app.wait(5)
        except subprocess.TimeoutExpired:
            app.kill()


def run_checks(checks, ctx, result_file, finish=None):
    """Run each check in order (only those matching the regex `E2E_ONLY`, when set, for
    working on a few), print `ok name (t s)`, `SKIP name: why` or `FAIL name: why`, and
    write `passed failed skipped` to result_file for the shell script's summary line."""
    if os.environ.get("E2E_ONLY"):
        keep = re.compile(os.environ["E2E_ONLY"])
        checks = [c for c in checks if keep.search(c.__name__)]
    passed = failed = skipped = 0
    try:
        for fn in checks:
            name = fn.__name__
            started = time.monotonic()
            try:
                fn(ctx)
            except Skipped as e:
                skipped += 1
                print(f"SKIP {name}: {e}", flush=True)
                continue
            except CheckFailed as e:
                failed += 1
                print(f"FAIL {name}: {e}", flush=True)
                continue
            except Exception:
                failed += 1
                print(f"FAIL {name}: unexpected error\n{traceback.format_exc()}", flush=True)
                continue
            passed += 1
            print(f"ok   {name} ({time.monotonic() - started:.1f} s)", flush=True)
    finally:
        if finish is not None:
            try:
                finish(ctx)
            except Exception:
                failed += 1
                print(f"FAIL cleanup: unexpected error\n{traceback.format_exc()}", flush=True)
        Path(result_file).write_text(f"{passed} {failed} {skipped}\n")
    return 1 if failed else 0
