#!/usr/bin/python3
"""logind's session lock for a private *system* bus, written from org.freedesktop.login1(5):
the manager `/org/freedesktop/login1` (`org.freedesktop.login1.Manager`) with
`GetSessionByPID(u) → o` and `GetSession(s) → o`, and one session object with the
`org.freedesktop.login1.Session` properties `Id`, `Active` and `LockedHint` (read through
`org.freedesktop.DBus.Properties`, a change announced by `PropertiesChanged`) and its
`SetLockedHint(b)` method, which a desktop's locker calls when it locks and unlocks.

One session, "e2e": every process of this user on the private bus is in it (`GetSessionByPID`
answers it for them; for any other PID logind's `NoSessionForPID` error). No screen is
locked: the checks call `SetLockedHint` as a locker does. Each call is printed, for the log.
"""

import os
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

NAME = "org.freedesktop.login1"
MANAGER = "org.freedesktop.login1.Manager"
SESSION = "org.freedesktop.login1.Session"
PROPERTIES = "org.freedesktop.DBus.Properties"
SESSION_ID = "e2e"
SESSION_PATH = f"/org/freedesktop/login1/session/{SESSION_ID}"


class Error(dbus.DBusException):
    def __init__(self, name, message):
        super().__init__(message)
        self._dbus_error_name = name


class Manager(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/org/freedesktop/login1")

    @dbus.service.method(MANAGER, in_signature="u", out_signature="o")
    def GetSessionByPID(self, pid):
        print(f"stand_in_logind: GetSessionByPID({pid})", flush=True)
        try:
            uid = os.stat(f"/proc/{int(pid)}").st_uid
        except OSError:
            uid = None
        if uid != os.getuid():
            raise Error("org.freedesktop.login1.NoSessionForPID",
                        f"PID {pid} does not belong to any known session")
        return dbus.ObjectPath(SESSION_PATH)

    @dbus.service.method(MANAGER, in_signature="s", out_signature="o")
    def GetSession(self, session_id):
        print(f"stand_in_logind: GetSession({session_id!r})", flush=True)
        if session_id != SESSION_ID:
            raise Error("org.freedesktop.login1.NoSuchSession", f"No session '{session_id}' known")
        return dbus.ObjectPath(SESSION_PATH)


class Session(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, SESSION_PATH)
        self.locked = False

    def properties(self):
        return {"Id": dbus.String(SESSION_ID), "Active": dbus.Boolean(True),
                "LockedHint": dbus.Boolean(self.locked)}

    @dbus.service.method(PROPERTIES, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        props = self.properties() if interface == SESSION else {}
        if name not in props:
            raise Error("org.freedesktop.DBus.Error.UnknownProperty", f"no property {name}")
        return props[name]

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.properties() if interface == SESSION else {}

    @dbus.service.signal(PROPERTIES, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    @dbus.service.method(SESSION, in_signature="b", out_signature="")
    def SetLockedHint(self, locked):
        print(f"stand_in_logind: SetLockedHint({bool(locked)})", flush=True)
        if bool(locked) != self.locked:
            self.locked = bool(locked)
            self.PropertiesChanged(SESSION, {"LockedHint": dbus.Boolean(self.locked)},
                                   dbus.Array([], signature="s"))


def main():
    DBusGMainLoop(set_as_default=True)
    address = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
    if not address:
        sys.exit("stand_in_logind: DBUS_SYSTEM_BUS_ADDRESS names no private system bus")
    bus = dbus.bus.BusConnection(address)
    objects = [Manager(bus), Session(bus)]
    name = dbus.service.BusName(NAME, bus, do_not_queue=True)
    print("stand_in_logind: ready", flush=True)
    GLib.MainLoop().run()
    del objects, name


if __name__ == "__main__":
    main()
