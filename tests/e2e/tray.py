"""Reads and clicks a tray item the way a StatusNotifierItem host does: the item is
found through the watcher, its menu is read over com.canonical.dbusmenu (GetLayout)
and a row is chosen with Event(id, "clicked")."""

from dataclasses import dataclass, field

import dbus

WATCHER = ("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher")
SNI = "org.kde.StatusNotifierItem"
MENU = "com.canonical.dbusmenu"
PROPS = "org.freedesktop.DBus.Properties"
# The count badge's red (src-tauri/src/platform/badge.rs), as an ARGB pixel of an item's IconPixmap.
BADGE_ARGB = bytes([0xff, 0xd9, 0x30, 0x25])


@dataclass
class Entry:
    id: int
    label: str
    enabled: bool
    visible: bool
    type: str  # "standard" or "separator"
    children: list = field(default_factory=list)

    def rows(self):
        """Every visible entry below this one, depth first (the order a user reads)."""
        out = []
        for child in self.children:
            if child.visible:
                out.append(child)
                out.extend(child.rows())
        return out


def plain(label):
    """The text a user sees: dbusmenu labels use `_` for mnemonics and `__` for `_`."""
    out, i = [], 0
    while i < len(label):
        if label[i] == "_":
            if i + 1 < len(label) and label[i + 1] == "_":
                out.append("_")
                i += 2
                continue
            i += 1
            continue
        out.append(label[i])
        i += 1
    return "".join(out)


def _entry(node):
    eid, props, children = node
    return Entry(
        id=int(eid),
        label=str(props.get("label", "")),
        enabled=bool(props.get("enabled", True)),
        visible=bool(props.get("visible", True)),
        type=str(props.get("type", "standard")),
        children=[_entry(c) for c in children],
    )


class Tray:
    def __init__(self, bus):
        self.bus = bus

    def items(self):
        watcher = self.bus.get_object(*WATCHER)
        return [str(i) for i in watcher.Get(WATCHER[0], "RegisteredStatusNotifierItems",
                                           dbus_interface=PROPS)]

    def item_of_pid(self, pid):
        """The registered item owned by process pid, as (bus name, object path), or None."""
        dbus_daemon = self.bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
        for item in self.items():
            # "<bus name><path>" (Plasma's and the suites' watcher), "<bus name>@<path>"
            # (GNOME's AppIndicator extension), or a bare bus name.
            name, _, path = item.partition("@") if "@" in item else item.partition("/")
            path = path.lstrip("/")
            try:
                owner_pid = dbus_daemon.GetConnectionUnixProcessID(
                    name, dbus_interface="org.freedesktop.DBus")
            except dbus.DBusException:
                continue  # its owner just left the bus
            if int(owner_pid) == pid:
                # A bare bus name (as an item that owns a StatusNotifierItem-<pid>-<n> name
                # registers it) is at the spec's path.
                return name, "/" + (path or "StatusNotifierItem")
        return None

    def properties(self, item):
        obj = self.bus.get_object(*item)
        return obj.GetAll(SNI, dbus_interface=PROPS)

    def badged(self, item):
        """The item's icon (IconPixmap's ARGB) when it carries the count's badge, else None."""
        for _w, _h, data in self.properties(item).get("IconPixmap") or []:
            raw = bytes(data)
            if any(raw[i:i + 4] == BADGE_ARGB for i in range(0, len(raw), 4)):
                return raw
        return None

    def _menu(self, item):
        obj = self.bus.get_object(*item)
        path = obj.Get(SNI, "Menu", dbus_interface=PROPS)
        return self.bus.get_object(item[0], path)

    def layout(self, item):
        """The item's menu as the host reads it: the root Entry, its rows below."""
        menu = self._menu(item)
        _revision, root = menu.GetLayout(0, -1, dbus.Array([], signature="s"),
                                         dbus_interface=MENU)
        return _entry(root)

    def labels(self, item):
        """The menu's rows as a user reads them, separators left out."""
        return [plain(e.label) for e in self.layout(item).rows() if e.type != "separator"]

    def click_row(self, item, text):
        """Click the first row whose text holds `text`. None while there is no such row,
        or when dbusmenu refused the click because the app rebuilt the menu (renumbering
        its rows) between the read and the click: for wait_for to try again."""
        entry = next((e for e in self.layout(item).rows() if text in plain(e.label)), None)
        if entry is None:
            return None
        try:
            self.click(item, entry.id)
        except dbus.DBusException as e:
            if "does not refer to a menu item" in str(e):
                return None
            raise
        return True

    def click(self, item, entry_id):
        menu = self._menu(item)
        menu.Event(dbus.Int32(entry_id), "clicked", dbus.String("", variant_level=1),
                   dbus.UInt32(0), dbus_interface=MENU)
