"""What the notification server was asked and said, read from `dbus-monitor --pcap`.

dbus-monitor's text output prints strings unescaped, so a body containing a quote
or a newline (exactly what the injection checks send) cannot be parsed back
reliably. Its pcap output carries the raw messages instead; GLib decodes them.

The monitor must match the Notifications interface, the server's method returns,
which carry the ids Notify hands out, and AddMatch calls, which tell when a client
has started listening for a notification's actions:
    dbus-monitor --session --pcap "interface='org.freedesktop.Notifications'" \
        "type='method_return',sender='org.freedesktop.Notifications'" \
        "type='method_call',interface='org.freedesktop.DBus',member='AddMatch'"
"""

import struct
from dataclasses import dataclass, field

from gi.repository import Gio

IFACE = "org.freedesktop.Notifications"


@dataclass
class Notification:
    """One Notify call, with the id the server answered and what happened to it."""

    sender: str
    serial: int
    app_name: str
    replaces_id: int
    icon: str
    summary: str
    body: str
    actions: list  # [(key, label), …]
    hints: dict
    timeout: int
    seq: int = 0  # position in the bus's message order
    id: int | None = None
    closed_by_app: bool = False  # CloseNotification was called for its id
    closed_reason: int | None = None  # NotificationClosed signal
    invoked: list = field(default_factory=list)  # ActionInvoked keys
    invoked_by: list = field(default_factory=list)  # (key, sender) of each ActionInvoked

    def action_keys(self):
        return [key for key, _ in self.actions]

    def describe(self):
        return f"#{self.id} {self.summary!r} / {self.body!r} actions={self.action_keys()}"


def control(bus, summary, timeout):
    """A popup of another app, sent by the harness to show what the server does by itself
    with one (`timeout`: its expire_timeout); its id."""
    import dbus
    server = bus.get_object(IFACE, "/org/freedesktop/Notifications")
    return int(server.Notify("e2e control", dbus.UInt32(0), "", summary, "from the harness",
                             dbus.Array([], signature="s"), dbus.Dictionary({}, signature="sv"),
                             dbus.Int32(timeout), dbus_interface=IFACE))


class NotificationLog:
    """Incrementally reads a growing pcap file written by dbus-monitor."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.endian = None
        self.notifications = []  # in call order
        self.closes = []  # ids passed to CloseNotification, in order
        self._pending = {}  # (sender, serial) -> Notification awaiting its id
        self._by_id = {}
        self._seq = 0
        self._matches = []  # (seq, sender, rule) of every AddMatch call

    def refresh(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return self
        pos = 0
        if self.endian is None:
            if len(data) < 24:
                return self
            magic = data[:4]
            self.endian = "<" if magic == b"\xd4\xc3\xb2\xa1" else ">"
            pos = 24
        while len(data) - pos >= 16:
            _, _, incl, _ = struct.unpack(self.endian + "IIII", data[pos : pos + 16])
            if len(data) - pos - 16 < incl:
                break  # a record still being written
            self._message(data[pos + 16 : pos + 16 + incl])
            pos += 16 + incl
        self.offset += pos
        return self

    def _message(self, blob):
        msg = Gio.DBusMessage.new_from_blob(blob, Gio.DBusCapabilityFlags.NONE)
        kind = msg.get_message_type()
        body = msg.get_body()
        args = body.unpack() if body is not None else ()
        member = msg.get_member()
        self._seq += 1
        if (kind == Gio.DBusMessageType.METHOD_CALL and member == "AddMatch"
                and msg.get_interface() == "org.freedesktop.DBus" and args):
            self._matches.append((self._seq, msg.get_sender(), args[0]))
        elif kind == Gio.DBusMessageType.METHOD_CALL and msg.get_interface() == IFACE:
            if member == "Notify" and len(args) == 8:
                app, replaces, icon, summary, text, actions, hints, timeout = args
                pairs = list(zip(actions[0::2], actions[1::2]))
                n = Notification(
                    msg.get_sender(), msg.get_serial(), app, replaces, icon, summary,
                    text, pairs, hints, timeout, seq=self._seq,
                )
                self.notifications.append(n)
                self._pending[(n.sender, n.serial)] = n
            elif member == "CloseNotification" and args:
                self.closes.append(args[0])
                for n in self._all(args[0]):
                    n.closed_by_app = True
        elif kind == Gio.DBusMessageType.METHOD_RETURN:
            n = self._pending.pop((msg.get_destination(), msg.get_reply_serial()), None)
            if n is not None and args:
                n.id = args[0]
                self._by_id.setdefault(n.id, []).append(n)
        elif kind == Gio.DBusMessageType.SIGNAL and msg.get_interface() == IFACE:
            if member == "NotificationClosed" and len(args) == 2:
                for n in self._all(args[0]):
                    n.closed_reason = args[1]
            elif member == "ActionInvoked" and len(args) == 2:
                for n in self._all(args[0]):
                    n.invoked.append(args[1])
                    n.invoked_by.append((args[1], msg.get_sender()))

    def listening(self, n):
        """Whether the client that sent n has asked the bus for ActionInvoked since then.
        A click before that is lost (the client drops a signal nobody waits for); a person
        never clicks that fast, a test does."""
        self.refresh()
        # The app's one connection subscribes once, before its first popup, to every signal
        # of the interface (so a click's ActivationToken arrives before its ActionInvoked).
        return any(sender == n.sender and ("ActionInvoked" in rule or (
            "interface='org.freedesktop.Notifications'" in rule and "member=" not in rule))
            for _, sender, rule in self._matches)

    def _all(self, nid):
        return self._by_id.get(nid, [])

    def find(self, pred):
        """Notifications (with their ids known) that satisfy pred, oldest first."""
        self.refresh()
        return [n for n in self.notifications if n.id is not None and pred(n)]

    def summaries(self):
        return [n.summary for n in self.notifications]
