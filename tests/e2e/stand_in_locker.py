#!/usr/bin/python3
"""A screen locker's bus interface for a private session bus, as KDE's (kscreenlocker,
through ksmserver) and Xfce's (xfce4-screensaver) lockers offer it:
`org.freedesktop.ScreenSaver` at `/org/freedesktop/ScreenSaver`, with `GetActive()` → b,
`SetActive(b)` → b (KDE's way to lock from a script) and the `ActiveChanged(b)` signal.
No screen is locked: the checks lock and unlock with `SetActive`, as a script on KDE does.
"""

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

NAME = "org.freedesktop.ScreenSaver"
PATH = "/org/freedesktop/ScreenSaver"


class Locker(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, PATH)
        self.active = False

    @dbus.service.method(NAME, in_signature="", out_signature="b")
    def GetActive(self):
        return self.active

    @dbus.service.method(NAME, in_signature="b", out_signature="b")
    def SetActive(self, active):
        if bool(active) != self.active:
            self.active = bool(active)
            self.ActiveChanged(self.active)
            print(f"stand_in_locker: active={self.active}", flush=True)
        return True

    @dbus.service.signal(NAME, signature="b")
    def ActiveChanged(self, active):
        pass


def main():
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    locker = Locker(bus)
    name = dbus.service.BusName(NAME, bus, do_not_queue=True)
    print("stand_in_locker: ready", flush=True)
    GLib.MainLoop().run()
    del locker, name


if __name__ == "__main__":
    main()
