#!/usr/bin/python3
"""A minimal org.kde.StatusNotifierWatcher for a private session bus.

Debian 12 has no snixembed, and libayatana-appindicator only exports a tray item
over D-Bus when a watcher owns this name; without one the tray stays invisible to
the tests. It also claims a host is registered, because appindicator falls back to
the XEmbed tray (which nothing reads here) when none is; with `--hosts` it claims
none and says only what hosts registered (RegisterStatusNotifierHost), as a bar
without a tray module that owns the watcher does.

Items are recorded as "<bus name><object path>", the form other watchers use, and
forgotten when their connection leaves the bus.
"""

import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

NAME = "org.kde.StatusNotifierWatcher"
PATH = "/StatusNotifierWatcher"
IFACE = "org.kde.StatusNotifierWatcher"
PROPS = "org.freedesktop.DBus.Properties"


class Watcher(dbus.service.Object):
    def __init__(self, bus, claim_host=True):
        super().__init__(bus, PATH)
        self.bus = bus
        self.claim_host = claim_host
        self.items = []  # "<bus name><path>", in registration order
        self.hosts = set()
        bus.add_signal_receiver(
            self._owner_changed,
            signal_name="NameOwnerChanged",
            dbus_interface="org.freedesktop.DBus",
            bus_name="org.freedesktop.DBus",
            path="/org/freedesktop/DBus",
        )

    @dbus.service.method(IFACE, in_signature="s", out_signature="", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        # appindicator passes its object path; other implementations pass a bus name
        # and expect the well-known item path.
        if service.startswith("/"):
            item = sender + service
        else:
            item = service + "/StatusNotifierItem"
        if item not in self.items:
            self.items.append(item)
            self.StatusNotifierItemRegistered(item)
            self._changed("RegisteredStatusNotifierItems")
        print(f"sni_watcher: item registered {item}", flush=True)

    @dbus.service.method(IFACE, in_signature="s", out_signature="", sender_keyword="sender")
    def RegisterStatusNotifierHost(self, service, sender=None):
        self.hosts.add(sender)
        print(f"sni_watcher: host registered {sender}", flush=True)
        self.StatusNotifierHostRegistered()
        self._changed("IsStatusNotifierHostRegistered")

    @dbus.service.signal(IFACE, signature="s")
    def StatusNotifierItemRegistered(self, service):
        pass

    @dbus.service.signal(IFACE, signature="s")
    def StatusNotifierItemUnregistered(self, service):
        pass

    @dbus.service.signal(IFACE, signature="")
    def StatusNotifierHostRegistered(self):
        pass

    @dbus.service.signal(IFACE, signature="")
    def StatusNotifierHostUnregistered(self):
        pass

    def _props(self):
        return {
            "RegisteredStatusNotifierItems": dbus.Array(self.items, signature="s"),
            "IsStatusNotifierHostRegistered": dbus.Boolean(self.claim_host or bool(self.hosts)),
            "ProtocolVersion": dbus.Int32(0),
        }

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        props = self._props()
        if interface != IFACE or prop not in props:
            raise dbus.exceptions.DBusException(
                f"no property {interface}.{prop}",
                name="org.freedesktop.DBus.Error.UnknownProperty",
            )
        return props[prop]

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self._props() if interface == IFACE else {}

    @dbus.service.method(PROPS, in_signature="ssv", out_signature="")
    def Set(self, interface, prop, value):
        raise dbus.exceptions.DBusException(
            "properties are read-only", name="org.freedesktop.DBus.Error.PropertyReadOnly"
        )

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def _changed(self, prop):
        self.PropertiesChanged(IFACE, {prop: self._props()[prop]}, [])

    def _owner_changed(self, name, old, new):
        if new or not old:
            return
        gone = [i for i in self.items if i == name or i.startswith(name + "/")]
        for item in gone:
            self.items.remove(item)
            self.StatusNotifierItemUnregistered(item)
            print(f"sni_watcher: item unregistered {item}", flush=True)
        if gone:
            self._changed("RegisteredStatusNotifierItems")
        if name in self.hosts:
            self.hosts.discard(name)
            print(f"sni_watcher: host unregistered {name}", flush=True)
            self.StatusNotifierHostUnregistered()
            self._changed("IsStatusNotifierHostRegistered")


def main():
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    watcher = Watcher(bus, claim_host="--hosts" not in sys.argv[1:])
    # Keep a reference: the name is released when the BusName object is collected.
    name = dbus.service.BusName(NAME, bus, do_not_queue=True)
    print(f"sni_watcher: owns {name.get_name()}", flush=True)
    loop = GLib.MainLoop()
    try:
        loop.run()
    except KeyboardInterrupt:
        pass
    del watcher
    return 0


if __name__ == "__main__":
    sys.exit(main())
