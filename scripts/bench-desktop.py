#!/usr/bin/env python3
"""The desktop benchmark's driver: run by scripts/bench-desktop.sh inside a private X
server and session bus, with dunst, the StatusNotifierWatcher and a pcap dbus-monitor
already running. It starts the release app hidden, plays lf through the stand-in and
tests/e2e/lfhome.py, and prints figures beside their goals and budgets. It exits 1 when a
memory figure is over its budget, 2 when it could not measure.

Times come from real surfaces where there is one: the bus (dbus-monitor's receive time of
RegisterStatusNotifierItem and Notify), the X server (the window mapped, its pixels), and
/proc (PSS, CPU, context switches). The app's step log only says when to look.
"""

import ctypes
import ctypes.util
import os
import re
import shutil
import statistics
import signal
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dbus
from gi.repository import Gio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
from lfhome import LfHome  # noqa: E402
from tray import Tray, plain  # noqa: E402

APP = os.environ["APP"]
OUT = Path(os.environ["BENCH_OUT"])
TMP = Path(os.environ["BENCH_TMP"])
PCAP = os.environ["BENCH_PCAP"]
IDLE_SECONDS = float(os.environ.get("BENCH_IDLE_SECONDS", "60"))
LONE_ASKS = int(os.environ.get("BENCH_ASKS", "20"))
STRACE_SECONDS = float(os.environ.get("BENCH_STRACE_SECONDS", "0"))
BURST_ASKS = 8

# The app's burst window is 2 s (5 popups within it fold into one summary). Lone asks are
# spaced past it, with half a second of margin for a slow machine, so none folds.
BURST_WINDOW = 2.0
LONE_SPACING = BURST_WINDOW + 0.5
# After the last Ask of a burst, a summary may still come up to the window plus the app's
# hold (300 ms today) later; 2 s more covers a loaded 2-core machine.
BURST_QUIET = BURST_WINDOW + 2.0
# Startup covers GTK, WebKit and the first `lf session list`; a popup step is one engine
# debounce and one stand-in lf call. Generous on a 2-core machine shared with builds.
START_TIMEOUT = 30.0
STEP_TIMEOUT = 10.0
# "Settled" means the whole tree used under 5 ms of CPU in each of the last 3 seconds
# (below that is housekeeping noise, above it the app is still loading; one quiet second
# can be a pause while it waits for lf), waited for at most 30 s so a busy app still
# gets measured (and says so).
SETTLE_CPU_NS = 5_000_000
SETTLE_STEP = 1.0
SETTLE_QUIET_STEPS = 3
SETTLE_MAX = 30.0
# The app tidies up after its window closed (today it ends WebKit's network process 5 s
# later); the figure after close is taken no sooner than this, twice that with margin.
AFTER_CLOSE = 10.0
# Fast enough to time a map or a paint to ~10 ms; each poll costs the X server one
# GetImage of the window, not the app anything.
POLL = 0.01
# Wake-ups are counted per second: periodic timers of interest fire every few seconds or
# slower, and a burst (one lf run, one GC) counts once.
WAKE_STEP = 1.0
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Memory goals (issue 26) and budgets. The hidden tray is what runs all day; its anonymous
# part is the app's own whatever else maps the same libraries. After a close, WebKit's
# processes are gone but its libraries stay touched. The goals cannot be met while the tray
# process links WebKit (README, Desktop benchmark: 33 MB of the hidden figure is what loading
# WebKit's libraries costs); they are printed beside each figure. The budgets hold the line
# where the release build stands (53.5 hidden, 12.3 anonymous, 85-87 after a close, the
# latter varying 59-90 between runs of one binary) with a margin for that noise: the benchmark
# fails (exit 1) when a figure grows past one.
GOAL_HIDDEN_PSS_MB = 35
GOAL_HIDDEN_ANON_MB = 10
GOAL_CLOSED_PSS_MB = 60
BUDGET_HIDDEN_PSS_MB = 57
BUDGET_HIDDEN_ANON_MB = 13.5
BUDGET_CLOSED_PSS_MB = 95
# The hidden figure is taken no sooner than this after start (and once the tree settled):
# the "15 s after start", past the first lf list and the tray's registration.
HIDDEN_AFTER = 15.0
# BENCH_ONLY=memory: start, hidden figures, the window shown and closed; no idle minutes,
# no popup timings (about 1 minute instead of 4).
ONLY = os.environ.get("BENCH_ONLY", "")
GOAL_IDLE_MS_PER_MIN = 10
GOAL_WAKE_INTERVAL_S = 30
GOAL_TRAY_S = 0.5
GOAL_LONE_P50_MS = 20
GOAL_BURST_NOTIFY = 2


def say(line=""):
    print(line, flush=True)


def figure(name, value, goal=""):
    say(f"  {name:<38} {value:<22} {goal}".rstrip())


def wait_for(cond, what, timeout=STEP_TIMEOUT, poll=0.05):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = cond()
        except Exception:  # the surface may not be there yet
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


def step_log():
    """The app's log lines (`WINDOW shown`, …), where a person finds them. Only this
    function knows the path."""
    path = Path(os.environ["XDG_STATE_HOME"]) / "lf-tray" / "lf-tray.log"
    try:
        return path.read_text(errors="replace").splitlines()
    except OSError:
        return []


def logged(words):
    return sum(1 for line in step_log() if words in line)


# --- /proc ----------------------------------------------------------------------------


def _stat(path):
    """(comm, fields after comm) of a /proc stat file; comm may hold spaces and parens."""
    text = Path(path).read_text()
    open_, close = text.index("("), text.rindex(")")
    return text[open_ + 1:close], text[close + 2:].split()


def descendants(root):
    """root and every process below it. WebKit starts its web and network processes as
    children of the app (through GSubprocess), so the parent links reach them."""
    children = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            _, fields = _stat(f"/proc/{entry.name}/stat")
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def comm(pid):
    """The program's name: argv[0]'s base name, as comm is cut at 15 characters
    (WebKitWebProces)."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        return os.path.basename(argv0.decode(errors="replace")) or "?"
    except OSError:
        return "?"


def rollup_kb(pid):
    """(Pss, Private_Dirty) of one process in kB."""
    pss = dirty = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key == "Pss":
                pss = int(rest.split()[0])
            elif key == "Private_Dirty":
                dirty = int(rest.split()[0])
    except OSError:
        pass
    return pss, dirty


def rollup_anon_kb(pid):
    """Pss_Anon of one process in kB: heaps, stacks, and the pages of a library the loader
    wrote (relocations), which are the process's own whatever else runs."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key == "Pss_Anon":
                return int(rest.split()[0])
    except OSError:
        pass
    return 0


# Libraries named by what brings them in, so the breakdown reads as causes: the web engine
# and what only it links (speech, media, Unicode tables, HTTP), and the toolkit the tray
# itself needs.
FAMILIES = [
    ("WebKit", ("libwebkit2gtk",)),
    ("JavaScriptCore", ("libjavascriptcoregtk",)),
    ("flite (WebKit's speech)", ("libflite",)),
    ("GStreamer (WebKit's media)", ("libgst", "liborc")),
    ("ICU (WebKit's Unicode)", ("libicu",)),
    ("libsoup (WebKit's HTTP)", ("libsoup",)),
    ("GTK/GDK", ("libgtk-3", "libgdk-3", "libgdk_pixbuf")),
    ("GLib/GIO/GObject", ("libglib-2", "libgio-2", "libgobject-2", "libgmodule-2")),
    ("libc/libm/ld.so", ("libc.so", "libm.so", "ld-linux")),
    ("libstdc++", ("libstdc++",)),
]


def _needed(path):
    out = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\).*\[(.+?)\]", out)


def _closure(names, where):
    seen, todo = set(), list(names)
    while todo:
        path = where.get(todo.pop())
        if path and path not in seen:
            seen.add(path)
            todo.extend(_needed(path))
    return seen


def webkit_only(pid, binary):
    """The libraries the app maps only because it links WebKit: those its other direct
    dependencies (GTK, GLib, …) do not bring in. What a tray process without the web
    engine would not load."""
    where = {}
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        head = line.split(None, 5)
        if len(head) > 5 and head[5].startswith("/") and ".so" in head[5]:
            path = head[5].strip()
            where.setdefault(os.path.basename(path), path)
            # NEEDED names the soname (libfoo.so.1), the mapping the file behind it.
            for name in re.findall(r"SONAME\).*\[(.+?)\]", subprocess.run(
                    ["readelf", "-dW", path], capture_output=True, text=True).stdout):
                where.setdefault(name, path)
    direct = _needed(binary)
    web = [n for n in direct if n.startswith(("libwebkit2gtk", "libjavascriptcoregtk", "libsoup"))]
    return _closure(direct, where) - _closure([n for n in direct if n not in web], where)


def family(path, binary):
    if path == binary:
        return "the binary"
    if not path.startswith("/"):
        return "anonymous " + (path or "mappings")
    base = os.path.basename(path)
    for name, prefixes in FAMILIES:
        if base.startswith(prefixes):
            return name
    return "other files"


def by_mapping_kb(pid, binary, only=frozenset()):
    """{family: [file PSS kB, anonymous kB]} from /proc/PID/smaps, and the same for the
    paths in `only` as one more row. A private file mapping's pages the process wrote
    (relocated data of a library) count as anonymous, as the kernel's Pss_Anon does."""
    out, path, pss = {}, "", 0
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        head = line.split(None, 5)
        if head and "-" in head[0] and not head[0].endswith(":"):
            path = head[5].strip() if len(head) > 5 else ""
            if path.endswith(" (deleted)"):
                path = path[: -len(" (deleted)")]
        elif head and head[0] == "Pss:":
            pss = int(head[1])
        elif head and head[0] == "Anonymous:":
            anon = min(int(head[1]), pss)
            row = out.setdefault(family(path, binary), [0, 0])
            row[0] += pss - anon
            row[1] += anon
            if path in only:
                row = out.setdefault(ONLY_WEBKIT, [0, 0])
                row[0] += pss - anon
                row[1] += anon
    return out


ONLY_WEBKIT = "(all libraries only WebKit links)"


class Memory:
    """One look at the tree's memory, in kB: PSS, its anonymous part, private dirty, PSS
    by program and by mapping family."""

    def __init__(self, app_pid):
        binary = os.path.realpath(f"/proc/{app_pid}/exe")
        try:
            only = webkit_only(app_pid, binary)
        except (OSError, FileNotFoundError):
            only = frozenset()
        self.programs, self.families = {}, {}
        self.pss = self.anon = self.dirty = 0
        tree = descendants(app_pid)
        self.others = sharer_pids(set(tree))
        # What the budgets hold: PSS as if no other lf-tray or WebKit program ran (CI's
        # suites run several), which is the PSS when none does.
        self.alone = pss_without_kb(tree, self.others) if self.others else None
        self.threads = {}
        for pid in tree:
            name = "lf-tray" if pid == app_pid else comm(pid)
            pss, private = rollup_kb(pid)
            self.programs[name] = self.programs.get(name, 0) + pss
            self.pss += pss
            self.dirty += private
            self.anon += rollup_anon_kb(pid)
            for tname, _, _ in threads(pid).values():
                self.threads[tname] = self.threads.get(tname, 0) + 1
            for fam, (file_kb, anon_kb) in by_mapping_kb(pid, binary, only).items():
                row = self.families.setdefault(fam, [0, 0])
                row[0] += file_kb
                row[1] += anon_kb

    def mb(self, kb):
        return kb / 1024

    def held_pss(self):
        """The PSS the budgets hold, in kB."""
        return self.pss if self.alone is None else self.alone

    def programs_line(self):
        return ", ".join(f"{name} {kb / 1024:.1f}" for name, kb in
                         sorted(self.programs.items(), key=lambda kv: -kv[1]))

    def families_lines(self, top=9):
        """The largest families, file-backed and anonymous PSS apiece."""
        rows = sorted(((k, v) for k, v in self.families.items() if k != ONLY_WEBKIT),
                      key=lambda kv: -sum(kv[1]))
        shown, rest = rows[:top], rows[top:]
        lines = [f"{name:<30} {(f + a) / 1024:5.1f}  (file {f / 1024:4.1f}, anon {a / 1024:4.1f})"
                 for name, (f, a) in shown]
        if rest:
            f = sum(r[1][0] for r in rest)
            a = sum(r[1][1] for r in rest)
            lines.append(f"{'the rest':<30} {(f + a) / 1024:5.1f}  (file {f / 1024:4.1f}, "
                         f"anon {a / 1024:4.1f})")
        if ONLY_WEBKIT in self.families:
            f, a = self.families[ONLY_WEBKIT]
            lines.append(f"{ONLY_WEBKIT} {(f + a) / 1024:.1f}  (file {f / 1024:.1f}, "
                         f"anon {a / 1024:.1f})")
        return lines


def sharer_pids(tree):
    """Other processes of the libraries the app maps most (GTK, WebKit): PSS divides a
    shared page among all of them, so with these running the app's PSS is lower than
    alone (the same binary read 56, 41 and 36 MB hidden beside 0, 1 and 2 of them)."""
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) not in tree:
            name = comm(int(entry.name))
            if name.startswith(("WebKit", "lf-tray")):
                out.append(int(entry.name))
    return out


PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
PFN_MASK = (1 << 55) - 1


def resident_pfns(pid):
    """{page frame: how often this process maps it} for its resident pages, or None when
    the kernel hides frame numbers (they need root)."""
    frames = {}
    try:
        ranges = []
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            ranges.append((start, end))
        with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for start, end in ranges:
                pagemap.seek(start // 4096 * 8)
                data = pagemap.read((end - start) // 4096 * 8)
                for (entry,) in struct.iter_unpack("<Q", data):
                    if entry >> 63:
                        pfn = entry & PFN_MASK
                        if not pfn:
                            return None
                        frames[pfn] = frames.get(pfn, 0) + 1
    except OSError:
        return None
    return frames


def pss_without_kb(tree, others):
    """The tree's PSS as if the `others` processes were not running: each resident page
    divided among its mappings less theirs (/proc/kpagecount), the kernel's own PSS sum
    when `others` is empty. None without root."""
    mine, theirs = {}, {}
    for pid in tree:
        frames = resident_pfns(pid)
        if frames is None:
            return None
        for pfn, n in frames.items():
            mine[pfn] = mine.get(pfn, 0) + n
    for pid in others:
        for pfn, n in (resident_pfns(pid) or {}).items():
            if pfn in mine:
                theirs[pfn] = theirs.get(pfn, 0) + n
    total = 0.0
    try:
        with open("/proc/kpagecount", "rb") as counts:
            for pfn, n in mine.items():
                counts.seek(pfn * 8)
                (mapped,) = struct.unpack("<Q", counts.read(8))
                total += PAGE_KB * n / max(n, mapped - theirs.get(pfn, 0))
    except OSError:
        return None
    return total


def threads(pid):
    """{tid: (thread name, CPU ns, context switches)} of one live process."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        try:
            name = Path(f"{base}/comm").read_text().strip()
            cpu_ns = int(Path(f"{base}/schedstat").read_text().split()[0])
            switches = 0
            for line in Path(f"{base}/status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    switches += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out[int(tid)] = (name, cpu_ns, switches)
    return out


def process_ticks(pid):
    """(own utime+stime, reaped children's cutime+cstime) in clock ticks. Unlike the
    thread figures, these keep the CPU of threads and children that have ended."""
    try:
        _, f = _stat(f"/proc/{pid}/stat")
    except OSError:
        return 0, 0
    return int(f[11]) + int(f[12]), int(f[13]) + int(f[14])


class Sample:
    """One look at the whole tree: every thread's CPU and switches, and each process's
    tick counters."""

    def __init__(self, app_pid):
        self.at = time.monotonic()
        self.procs = {}
        for pid in descendants(app_pid):
            self.procs[pid] = (comm(pid), process_ticks(pid), threads(pid))

    def cpu_ns(self):
        return sum(cpu for _, _, ts in self.procs.values() for _, cpu, _ in ts.values())


def settle(app_pid):
    """Wait until the tree is quiet; returns the seconds waited."""
    started = time.monotonic()
    before, quiet = Sample(app_pid).cpu_ns(), 0
    while quiet < SETTLE_QUIET_STEPS and time.monotonic() - started < SETTLE_MAX:
        time.sleep(SETTLE_STEP)
        now = Sample(app_pid).cpu_ns()
        quiet = quiet + 1 if now - before < SETTLE_CPU_NS else 0
        before = now
    return time.monotonic() - started


# Seconds in which a thread ran no more than this far apart are one wake-up: tokio re-arms a
# far deadline in steps about 1.2 s apart, so its once-a-minute timer runs in 2–3 adjacent
# seconds.
BURST_GAP = 2


def period(seconds, window):
    """The time between a thread's wake-ups, from the seconds in which it ran: the window
    over the number of bursts, or, for a thread that kept waking through a longer burst
    (a timer of 2 s or less), the spacing within it (1 s is the sampling's limit)."""
    bursts = [[seconds[0]]]
    for s in seconds[1:]:
        if s - bursts[-1][-1] <= BURST_GAP:
            bursts[-1].append(s)
        else:
            bursts.append([s])
    spacing = [(b[-1] - b[0]) / (len(b) - 1) * WAKE_STEP
               for b in bursts if len(b) > BURST_GAP + 1]
    return min(spacing) if spacing else window / len(bursts)


def every(per):
    return f"≤{per:.0f} s" if per <= WAKE_STEP else f"{per:.1f} s"


def timer_expiries(trace):
    """{tid: [(time, syscall)]} of the waits that ended by their timeout in an
    `strace -f -tt` log: each is a timer that fired (poll/epoll with nothing ready,
    a futex or sleep that ran out), not an event that woke the thread."""
    pending, out = {}, {}
    for line in trace.splitlines():
        m = re.match(r"(\d+)\s+(\d+):(\d+):([\d.]+) (.*)", line)
        if not m:
            continue
        tid, rest = int(m[1]), m[5]
        at = int(m[2]) * 3600 + int(m[3]) * 60 + float(m[4])
        if rest.endswith("<unfinished ...>"):
            pending[tid] = rest.split("(", 1)[0]
            continue
        resumed = re.match(r"<\.\.\. (\w+) resumed>", rest)
        call = resumed[1] if resumed else rest.split("(", 1)[0]
        if resumed:
            pending.pop(tid, None)
        timed_out = (("ETIMEDOUT" in rest)
                     or (call in ("poll", "ppoll", "select", "pselect6") and "(Timeout)" in rest)
                     or (call in ("epoll_wait", "epoll_pwait") and re.search(r"= 0$", rest))
                     or (call in ("nanosleep", "clock_nanosleep") and re.search(r"= 0$", rest)))
        if timed_out:
            out.setdefault(tid, []).append((at, call))
    return out


# --- the bus ------------------------------------------------------------------------------


class BusLog:
    """The messages dbus-monitor --pcap captured, each with its wall-clock receive time."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.endian = None
        self.messages = []  # (time, Gio.DBusMessage)

    def refresh(self):
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        pos = 0
        if self.endian is None:
            if len(data) < 24:
                return self
            self.endian = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
            pos = 24
        while len(data) - pos >= 16:
            sec, usec, incl, _ = struct.unpack(self.endian + "IIII", data[pos:pos + 16])
            if len(data) - pos - 16 < incl:
                break  # a record still being written
            blob = data[pos + 16:pos + 16 + incl]
            msg = Gio.DBusMessage.new_from_blob(blob, Gio.DBusCapabilityFlags.NONE)
            self.messages.append((sec + usec / 1e6, msg))
            pos += 16 + incl
        self.offset += pos
        return self

    def calls(self, member, since=0.0):
        """(time, sender, args) of each call of member received at or after since."""
        out = []
        for at, msg in self.refresh().messages:
            if at >= since and msg.get_member() == member:
                body = msg.get_body()
                out.append((at, msg.get_sender(), body.unpack() if body is not None else ()))
        return out

    def notifies(self, since=0.0):
        """(time, summary, body) of each Notify call."""
        return [(at, args[3], args[4]) for at, _, args in self.calls("Notify", since)
                if len(args) == 8]


# --- X ----------------------------------------------------------------------------------


class XImage(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("xoffset", ctypes.c_int),
                ("format", ctypes.c_int), ("data", ctypes.c_void_p),
                ("byte_order", ctypes.c_int), ("bitmap_unit", ctypes.c_int),
                ("bitmap_bit_order", ctypes.c_int), ("bitmap_pad", ctypes.c_int),
                ("depth", ctypes.c_int), ("bytes_per_line", ctypes.c_int),
                ("bits_per_pixel", ctypes.c_int)]  # the rest is not read


class XWindowAttributes(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("border_width", ctypes.c_int),
                ("depth", ctypes.c_int), ("visual", ctypes.c_void_p),
                ("root", ctypes.c_ulong), ("class", ctypes.c_int),
                ("bit_gravity", ctypes.c_int), ("win_gravity", ctypes.c_int),
                ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong),
                ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int),
                ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int),
                ("map_state", ctypes.c_int), ("all_event_masks", ctypes.c_long),
                ("your_event_mask", ctypes.c_long), ("do_not_propagate_mask", ctypes.c_long),
                ("override_redirect", ctypes.c_int), ("screen", ctypes.c_void_p)]


class XClientMessageEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong),
                ("send_event", ctypes.c_int), ("display", ctypes.c_void_p),
                ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong),
                ("format", ctypes.c_int), ("data", ctypes.c_long * 5),
                # XEvent is a union padded to 24 longs.
                ("pad", ctypes.c_long * 17)]


ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class X:
    """The few Xlib calls the benchmark needs, through ctypes (no python-xlib needed)."""

    CLIENT_MESSAGE = 33
    IS_VIEWABLE = 2
    Z_PIXMAP = 2

    def __init__(self):
        lib = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        lib.XOpenDisplay.restype = ctypes.c_void_p
        lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
        lib.XInternAtom.restype = ctypes.c_ulong
        lib.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        lib.XGetImage.restype = ctypes.POINTER(XImage)
        lib.XGetImage.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]
        lib.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong,
                                             ctypes.POINTER(XWindowAttributes)]
        lib.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long,
                                   ctypes.c_void_p]
        lib.XFlush.argtypes = [ctypes.c_void_p]
        lib.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.XFree.argtypes = [ctypes.c_void_p]
        # A window that goes away between two calls must not end the benchmark (Xlib's
        # default handler exits the process).
        self._on_error = ERROR_HANDLER(lambda _d, _e: 0)
        lib.XSetErrorHandler(self._on_error)
        self.lib = lib
        self.dpy = lib.XOpenDisplay(None)
        if not self.dpy:
            raise RuntimeError("cannot open the X display")

    def attributes(self, window):
        attrs = XWindowAttributes()
        if not self.lib.XGetWindowAttributes(self.dpy, window, ctypes.byref(attrs)):
            return None
        return attrs

    def painted(self, window):
        """Whether the window shows more than one flat colour (a page with text does; an
        unpainted GTK window or an empty web view is a single fill)."""
        attrs = self.attributes(window)
        if attrs is None or attrs.map_state != self.IS_VIEWABLE:
            return False
        image = self.lib.XGetImage(self.dpy, window, 0, 0, attrs.width, attrs.height,
                                   ctypes.c_ulong(-1).value, self.Z_PIXMAP)
        if not image:
            return False
        try:
            img = image.contents
            data = ctypes.string_at(img.data, img.bytes_per_line * img.height)
            px = img.bits_per_pixel // 8
            return data != data[:px] * (len(data) // px)
        finally:
            self.lib.XFree(ctypes.c_void_p(image.contents.data))
            self.lib.XFree(image)

    def close(self, window):
        """What a window manager's close button sends: WM_PROTOCOLS / WM_DELETE_WINDOW."""
        ev = XClientMessageEvent()
        ev.type = self.CLIENT_MESSAGE
        ev.window = window
        ev.message_type = self.lib.XInternAtom(self.dpy, b"WM_PROTOCOLS", 0)
        ev.format = 32
        ev.data[0] = self.lib.XInternAtom(self.dpy, b"WM_DELETE_WINDOW", 0)
        ev.data[1] = 0  # CurrentTime
        self.lib.XSendEvent(self.dpy, window, 0, 0, ctypes.byref(ev))
        self.lib.XSync(self.dpy, 0)


def visible_windows(pid):
    out = subprocess.run(["xdotool", "search", "--onlyvisible", "--pid", str(pid)],
                         capture_output=True, text=True)
    return [int(w) for w in out.stdout.split()]


# --- the run ----------------------------------------------------------------------------


class Bench:
    def __init__(self):
        self.home = LfHome(os.environ["LF_HOME"])
        self.bus = dbus.SessionBus()
        self.tray = Tray(self.bus)
        self.log = BusLog(PCAP)
        self.x = X()
        self.app = None
        self.sim_calls = Path(os.environ["LF_SIM_DIR"]) / "argv.jsonl"
        self.over = []
        self.cwd = TMP / "work"
        self.cwd.mkdir(parents=True, exist_ok=True)

    def lf_calls(self):
        try:
            return len(self.sim_calls.read_text().splitlines())
        except OSError:
            return 0

    def ask(self, title, prompt=None):
        """Write one Ask as lf does (temporary name, fsync, rename); returns its id and the
        wall-clock time just before the rename put it in place."""
        sid = "ask_bench_" + uuid.uuid4().hex[:12]
        # The clock is read inside lfhome's write, just before its rename: read after the
        # write returns, it came late whenever the app, woken by the rename, took the CPU
        # first (on 2 cores it did, and Notify seemed to precede the rename).
        stamps, rename = [], os.rename

        def stamped(src, dst):
            stamps.append(time.time())
            rename(src, dst)

        os.rename = stamped
        try:
            self.home.write_ask(sid, title=title, prompt=prompt or f"{title}?", cwd=self.cwd,
                                detail="bench")
        finally:
            os.rename = rename
        return sid, stamps[-1]

    def start(self):
        log = open(OUT / "app.log", "ab")
        started = time.time()
        self.app = subprocess.Popen([APP, "--hidden"], env=os.environ.copy(), stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        return started

    def stop(self):
        if self.app and self.app.poll() is None:
            os.killpg(self.app.pid, signal.SIGTERM)
            try:
                self.app.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.app.pid, signal.SIGKILL)
                self.app.wait()

    def run(self):
        say(f"desktop benchmark: {APP}")
        say(f"  lf generation A (stand-in lf), idle {IDLE_SECONDS:.0f} s, {LONE_ASKS} lone asks, "
            f"burst of {BURST_ASKS}; PSS in MB")
        # A few sessions already wait, so the window has rows to paint; the first snapshot
        # reports what is there without popups.
        for i in range(3):
            self.ask(f"Seeded question {i}", f"Seeded question {i}: which way?")
        try:
            self.startup()
            if ONLY != "memory":
                self.idle("idle, hidden since start")
                self.lone()
                self.burst()
            if self.window() and ONLY != "memory":
                self.idle("idle, after the window was shown and closed")
        finally:
            self.stop()
        self.verdict()

    def verdict(self):
        say("budgets")
        for line in self.over:
            say(f"  OVER BUDGET: {line}")
        if not self.over:
            say("  every memory figure within its budget")

    def startup(self):
        started = self.start()
        registered = wait_for(lambda: self.log.calls("RegisterStatusNotifierItem", started),
                              "RegisterStatusNotifierItem", START_TIMEOUT)
        at, sender, _ = registered[0]
        owner = self.bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus") \
            .GetConnectionUnixProcessID(sender, dbus_interface="org.freedesktop.DBus")
        whose = "" if int(owner) == self.app.pid else f" (by pid {owner}, not the app!)"
        say("start (hidden)")
        figure("start → tray icon registered", f"{(at - started) * 1000:.0f} ms{whose}",
               f"goal ≤ {GOAL_TRAY_S * 1000:.0f} ms")
        item = wait_for(lambda: self.tray.item_of_pid(self.app.pid), "the app's tray item",
                        START_TIMEOUT)
        wait_for(lambda: "Reading sessions…" not in
                 [plain(e.label) for e in self.tray.layout(item).rows()],
                 "the first snapshot in the tray menu", START_TIMEOUT)
        figure("start → first snapshot in the tray menu", f"{(time.time() - started) * 1000:.0f} ms")
        settled = settle(self.app.pid)
        time.sleep(max(0.0, started + HIDDEN_AFTER - time.time()))
        mem = self.pss("PSS hidden", f"{time.time() - started:.0f} s after start, settled in "
                       f"{settled:.0f} s", budget=BUDGET_HIDDEN_PSS_MB, goal=GOAL_HIDDEN_PSS_MB)
        self.held("anonymous PSS hidden", mem.mb(mem.anon), BUDGET_HIDDEN_ANON_MB,
                  GOAL_HIDDEN_ANON_MB)

    def held(self, name, mb, budget, goal):
        figure(name, f"{mb:.1f} MB", f"goal ≤ {goal} MB, budget ≤ {budget} MB"
               + ("  OVER" if mb > budget else ""))
        if mb > budget:
            self.over.append(f"{name} {mb:.1f} MB > {budget} MB")

    def pss(self, name, when, budget=None, goal=None):
        mem = Memory(self.app.pid)
        held = mem.mb(mem.held_pss())
        # Every mapping of every process, for the megabyte the summary does not name.
        for pid in descendants(self.app.pid):
            try:
                shutil.copyfile(f"/proc/{pid}/smaps",
                                OUT / f"smaps-{name.replace(' ', '-')}-{comm(pid)}-{pid}.txt")
            except OSError:
                pass
        if budget is None:
            figure(name, f"{held:.1f} MB")
        else:
            self.held(name, held, budget, goal)
        if mem.alone is not None:
            say(f"    (PSS as measured {mem.mb(mem.pss):.1f} MB: {len(mem.others)} other "
                f"lf-tray/WebKit process(es) on this machine share its libraries; the figure "
                f"above counts the pages as if they did not run)")
        # Private dirty and anonymous pages (heaps, written data) are the app's own whatever
        # else runs; PSS and even USS change with the other processes mapping the same
        # libraries.
        say(f"    {mem.programs_line()}; anonymous {mem.mb(mem.anon):.1f}; private dirty "
            f"{mem.mb(mem.dirty):.1f}; {when}")
        say(f"    {sum(mem.threads.values())} threads: " + ", ".join(
            f"{name}" + (f" ×{n}" if n > 1 else "") for name, n in sorted(mem.threads.items())))
        for line in mem.families_lines():
            say(f"      {line}")
        if mem.others and mem.alone is None:
            say(f"    ({len(mem.others)} other lf-tray/WebKit process(es) on this machine share "
                f"libraries with it: PSS is lower than it would be alone; run as root for "
                f"the figure without them)")
        return mem

    def idle(self, title):
        say(f"{title} ({IDLE_SECONDS:.0f} s, nothing happening)")
        notifies = len(self.log.notifies())
        calls = self.lf_calls()
        before = Sample(self.app.pid)
        # Each thread's switch counter is read once a second: a thread that ran in a second
        # woke in it, however many switches that took (one lf run costs several).
        woke, last, second = {}, {}, 0
        for pid, (_, _, ts) in before.procs.items():
            for tid, (_, _, sw) in ts.items():
                last[tid] = sw
        deadline = before.at + IDLE_SECONDS
        while time.monotonic() < deadline:
            time.sleep(min(WAKE_STEP, max(0.0, deadline - time.monotonic())))
            second += 1
            for pid in descendants(self.app.pid):
                for tid, (_, _, sw) in threads(pid).items():
                    if sw != last.get(tid, 0):
                        woke.setdefault(tid, []).append(second)
                    last[tid] = sw
        after = Sample(self.app.pid)
        minutes = (after.at - before.at) / 60
        rows, gone = [], 0
        own_ns, own_ticks, child_ticks = {}, {}, 0
        for pid, (pname, (ticks, cticks), ts) in after.procs.items():
            _, (bticks, bcticks), bts = before.procs.get(pid, (pname, (0, 0), {}))
            label = "lf-tray" if pid == self.app.pid else pname
            own_ticks[label] = own_ticks.get(label, 0) + ticks - bticks
            if pid == self.app.pid:
                child_ticks = cticks - bcticks
            gone += len(set(bts) - set(ts))
            for tid, (tname, cpu, sw) in ts.items():
                _, bcpu, bsw = bts.get(tid, (tname, 0, 0))
                own_ns[label] = own_ns.get(label, 0) + cpu - bcpu
                if woke.get(tid):
                    rows.append((period(woke[tid], IDLE_SECONDS), len(woke[tid]), sw - bsw,
                                 (cpu - bcpu) / 1e6, label, tname, tid, tid not in bts))
        gone += sum(len(ts) for pid, (_, _, ts) in before.procs.items() if pid not in after.procs)
        lf_runs = self.lf_calls() - calls
        # Thread clocks are to the nanosecond; process ticks (10 ms) also hold threads that
        # ended and lf runs already reaped.
        total_ms = sum(own_ns.values()) / 1e6 + child_ticks * 1000 / CLK_TCK
        figure("idle CPU, whole tree", f"{total_ms / minutes:.1f} ms/min",
               f"goal ≤ {GOAL_IDLE_MS_PER_MIN} ms/min")
        for label in sorted(own_ns, key=lambda k: -own_ns[k]):
            say(f"    {label:<26} {own_ns[label] / 1e6 / minutes:7.1f} ms/min")
        say(f"    {'lf runs (reaped children)':<26} {child_ticks * 1000 / CLK_TCK / minutes:7.1f} ms/min"
            f"   ({lf_runs} lf call(s); counted in {1000 / CLK_TCK:.0f} ms ticks)")
        ticks = {k: v * 1000 / CLK_TCK for k, v in own_ticks.items() if v}
        say(f"    cross-check, process tick counters ({1000 / CLK_TCK:.0f} ms resolution, keep ended "
            f"threads): {ticks or 'all 0'} ms in {IDLE_SECONDS:.0f} s")
        if len(self.log.notifies()) != notifies:
            say("    (a popup came up during the idle time: the figures are not idle ones)")
        rows.sort(key=lambda r: (r[0], -r[1]))
        fastest = rows[0][0] if rows else None
        figure("wake-ups: fastest thread",
               "none" if fastest is None else f"every {every(fastest)}",
               f"goal: none more often than every {GOAL_WAKE_INTERVAL_S} s")
        say(f"    {'process':<22} {'thread':<18} {'tid':>7} {'every':>7} {'seconds':>7} "
            f"{'switches':>8} {'CPU ms':>7}")
        for per, n, sw, cpu_ms, label, tname, tid, new in rows:
            say(f"    {label:<22} {tname:<18} {tid:>7} {every(per):>7} {n:>7} {sw:>8} "
                f"{cpu_ms:>7.2f}" + ("  (new)" if new else ""))
        if gone:
            say(f"    {gone} thread(s) ended during the idle time (their CPU is in the process ticks)")
        say(f"    seconds = in how many of the {IDLE_SECONDS:.0f} s the thread ran (switch counters "
            f"read every {WAKE_STEP:.0f} s); every = the time between its wake-ups, one burst "
            f"counting once")
        self.timers()

    def timers(self):
        """Which of those wake-ups are timers, from strace, after the idle figures (tracing
        slows every system call)."""
        if not STRACE_SECONDS:
            return
        if not shutil.which("strace"):
            say("    (BENCH_STRACE_SECONDS: strace is not installed)")
            return
        names = {}
        pids = descendants(self.app.pid)
        for pid in pids:
            label = "lf-tray" if pid == self.app.pid else comm(pid)
            for tid, (tname, _, _) in threads(pid).items():
                names[tid] = (label, tname)
        log = OUT / "idle-strace.txt"
        attach = [arg for pid in pids for arg in ("-p", str(pid))]
        tracer = subprocess.Popen(
            ["strace", "-f", "-tt", "-qq", "-o", str(log), "-e",
             "trace=poll,ppoll,select,pselect6,epoll_wait,epoll_pwait,futex,nanosleep,"
             "clock_nanosleep,restart_syscall", *attach],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(STRACE_SECONDS)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(STEP_TIMEOUT)
        expiries = timer_expiries(log.read_text(errors="replace"))
        say(f"  timers that fired in {STRACE_SECONDS:.0f} s under strace "
            f"(waits that ran out; {log.name} has the trace)")
        rows = []
        for tid, hits in expiries.items():
            gaps = [b[0] - a[0] for a, b in zip(hits, hits[1:])]
            period = f"{statistics.median(gaps):.1f} s" if gaps else "once"
            label, tname = names.get(tid, ("?", "(new thread)"))
            calls = sorted({c for _, c in hits})
            rows.append((len(hits), label, tname, tid, period, "/".join(calls)))
        for n, label, tname, tid, period, calls in sorted(rows, reverse=True):
            say(f"    {label:<22} {tname:<18} {tid:>7} {n:>5}x  every {period:<8} {calls}")
        if not rows:
            say("    none")

    def lone(self):
        say(f"lone popups ({LONE_ASKS} asks, {LONE_SPACING:.1f} s apart)")
        latencies, missed = [], 0
        last = 0.0
        for i in range(LONE_ASKS):
            time.sleep(max(0.0, last + LONE_SPACING - time.monotonic()))
            last = time.monotonic()
            title = f"Lone question {i} {uuid.uuid4().hex[:6]}"
            sid, written = self.ask(title)
            try:
                at = wait_for(lambda: [a for a, _, body in self.log.notifies(written - 1)
                                       if body.split("\n", 1)[0] == title],
                              f"Notify for {title}", poll=0.005)[0]
                latencies.append((at - written) * 1000)
            except TimeoutError:
                missed += 1
            self.home.remove_ask(sid)
        if latencies:
            latencies.sort()
            p50 = latencies[len(latencies) // 2]
            p99 = latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))]
            figure("rename → Notify on the bus", f"p50 {p50:.0f} ms, p99 {p99:.0f} ms",
                   f"goal p50 ≤ {GOAL_LONE_P50_MS} ms")
            say(f"    min {latencies[0]:.0f} ms, max {latencies[-1]:.0f} ms over {len(latencies)}")
        if missed:
            say(f"    {missed} ask(s) got no Notify within {STEP_TIMEOUT:.0f} s")

    def burst(self):
        say(f"burst ({BURST_ASKS} asks at once)")
        time.sleep(LONE_SPACING)
        started = time.time()
        sids = [self.ask(f"Burst question {i}")[0] for i in range(BURST_ASKS)]
        wrote = time.time() - started
        # Count until nothing new came for BURST_QUIET.
        seen, quiet_since = 0, time.monotonic()
        while time.monotonic() - quiet_since < BURST_QUIET:
            n = len(self.log.notifies(started))
            if n != seen:
                seen, quiet_since = n, time.monotonic()
            time.sleep(0.05)
        summaries = [s for _, s, _ in self.log.notifies(started)]
        figure(f"Notify calls for {BURST_ASKS} asks", str(len(summaries)),
               f"goal ≤ {GOAL_BURST_NOTIFY}")
        say(f"    written in {wrote * 1000:.0f} ms; summaries: {summaries}")
        for sid in sids:
            self.home.remove_ask(sid)
        time.sleep(1)
        subprocess.run(["dunstctl", "close-all"], check=False)

    def window(self):
        say("window")
        pid = self.app.pid
        if visible_windows(pid):
            say("    the window is already visible; not timed")
            return False
        shown_before = logged("WINDOW shown")
        started = time.monotonic()
        second = subprocess.Popen([APP], env=os.environ.copy(), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        window = wait_for(lambda: visible_windows(pid), "the window to be mapped", START_TIMEOUT,
                          poll=POLL)[0]
        mapped = time.monotonic()
        wait_for(lambda: self.x.painted(window), "the window to show more than a fill",
                 START_TIMEOUT, poll=POLL)
        painted = time.monotonic()
        second.wait(STEP_TIMEOUT)
        figure("second start → window mapped", f"{(mapped - started) * 1000:.0f} ms")
        figure("second start → first paint", f"{(painted - started) * 1000:.0f} ms",
               "(first X image of more than one colour)")
        if logged("WINDOW shown") == shown_before:
            say("    (the app's log shows no WINDOW shown)")
        self.pss("PSS shown", f"after {settle(pid):.0f} s to settle")
        self.x.close(window)
        wait_for(lambda: not visible_windows(pid), "the window to close", STEP_TIMEOUT)
        closed = time.monotonic()
        settle(pid)
        time.sleep(max(0.0, closed + AFTER_CLOSE - time.monotonic()))
        self.pss("PSS after close", f"{time.monotonic() - closed:.0f} s after WM_DELETE_WINDOW",
                 budget=BUDGET_CLOSED_PSS_MB, goal=GOAL_CLOSED_PSS_MB)
        return True


def main():
    # The app runs in a session of its own, out of reach of the harness's cleanup: a
    # SIGTERM must unwind through Bench.run's `finally`, which stops it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bench = Bench()
    try:
        bench.run()
    except TimeoutError as e:
        say(f"bench-desktop: {e}")
        return 2
    return 1 if bench.over else 0


if __name__ == "__main__":
    sys.exit(main())
