"""A pointer for a headless wlroots compositor, spoken in the Wayland wire protocol.

sway's headless backend has no input devices (WLR_LIBINPUT_NO_DEVICES=1), so nothing
can click a popup; `makoctl invoke` runs an action without a click, and mako only asks
the compositor for an xdg-activation token (and sends `ActivationToken`) for a real
button press on its surface. wlroots' zwlr_virtual_pointer_v1 adds a pointer device to
the seat; this module creates one and clicks with it. Debian 12 packages no client for
the protocol (wlrctl is not in it), and the few requests needed are simple enough to
write by hand: a message is (object id, size << 16 | opcode) then its arguments, each
4-byte aligned.
"""

import os
import socket
import struct
import time

BTN_LEFT = 0x110  # linux/input-event-codes.h


def _string(text):
    data = text.encode() + b"\0"
    return struct.pack("=I", len(data)) + data + b"\0" * (-len(data) % 4)


class Wayland:
    def __init__(self, display=None):
        runtime = os.environ["XDG_RUNTIME_DIR"]
        name = display or os.environ.get("WAYLAND_DISPLAY", "wayland-0")
        path = name if name.startswith("/") else os.path.join(runtime, name)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.next_id = 2  # 1 is wl_display
        self.globals = {}  # interface -> (name, version)
        self.buffer = b""
        self.registry = self._new_id()
        self.send(1, 1, struct.pack("=I", self.registry))  # wl_display.get_registry
        self.roundtrip()

    def _new_id(self):
        oid = self.next_id
        self.next_id += 1
        return oid

    def send(self, obj, opcode, payload=b""):
        self.sock.sendall(struct.pack("=II", obj, (8 + len(payload)) << 16 | opcode) + payload)

    def roundtrip(self, timeout=5.0):
        """wl_display.sync, reading events until its callback is done."""
        callback = self._new_id()
        self.send(1, 0, struct.pack("=I", callback))
        self.sock.settimeout(timeout)
        while True:
            while len(self.buffer) >= 8:
                obj, word = struct.unpack("=II", self.buffer[:8])
                size, opcode = word >> 16, word & 0xFFFF
                if len(self.buffer) < size:
                    break
                body, self.buffer = self.buffer[8:size], self.buffer[size:]
                if obj == 1 and opcode == 0:  # wl_display.error
                    _, code, length = struct.unpack("=III", body[:12])
                    message = body[12:12 + length - 1].decode(errors="replace")
                    raise RuntimeError(f"Wayland protocol error {code}: {message}")
                if obj == self.registry and opcode == 0:  # wl_registry.global
                    name, length = struct.unpack("=II", body[:8])
                    interface = body[8:8 + length - 1].decode()
                    offset = 8 + length + (-length % 4)
                    (version,) = struct.unpack("=I", body[offset:offset + 4])
                    self.globals[interface] = (name, version)
                if obj == callback and opcode == 0:  # wl_callback.done
                    return
            data = self.sock.recv(65536)
            if not data:
                raise RuntimeError("the compositor closed the connection")
            self.buffer += data

    def bind(self, interface, version):
        if interface not in self.globals:
            raise RuntimeError(f"the compositor offers no {interface} (it has {sorted(self.globals)})")
        name, offered = self.globals[interface]
        oid = self._new_id()
        payload = struct.pack("=I", name) + _string(interface) + struct.pack("=II", min(version, offered), oid)
        self.send(self.registry, 0, payload)  # wl_registry.bind
        return oid

    def close(self):
        self.sock.close()


class VirtualPointer:
    """One pointer device on the compositor's default seat, alive while this object is."""

    def __init__(self, width, height, display=None):
        self.width, self.height = width, height
        self.wl = Wayland(display)
        manager = self.wl.bind("zwlr_virtual_pointer_manager_v1", 1)
        self.pointer = self.wl._new_id()
        # create_virtual_pointer(seat: null = the default seat, id)
        self.wl.send(manager, 0, struct.pack("=II", 0, self.pointer))
        self.wl.roundtrip()

    def _now(self):
        return int(time.monotonic() * 1000) & 0xFFFFFFFF

    def move(self, x, y):
        """motion_absolute in layout pixels (extent = the output's size), then frame."""
        self.wl.send(self.pointer, 1, struct.pack("=IIIII", self._now(), x, y, self.width, self.height))
        self.wl.send(self.pointer, 4, struct.pack("=I", self._now()))
        self.wl.roundtrip()

    def click(self, x, y, button=BTN_LEFT):
        # Arriving from elsewhere makes sure the surface under (x, y) gets an enter.
        self.move(max(0, x - 1), max(0, y - 1))
        self.move(x, y)
        for state in (1, 0):  # pressed, released
            self.wl.send(self.pointer, 2, struct.pack("=III", self._now(), button, state))
            self.wl.send(self.pointer, 4, struct.pack("=I", self._now()))
            self.wl.roundtrip()

    def close(self):
        self.wl.send(self.pointer, 8)  # destroy
        try:
            self.wl.roundtrip()
        finally:
            self.wl.close()


class FakeInput:
    """KWin's fake input (org_kde_kwin_fake_input): pointer motion that KWin takes as the
    seat's own input, as it does from a remote-desktop server. KWin offers the protocol
    only to clients whose desktop file names it, or to every client when the compositor
    runs with KWIN_WAYLAND_NO_PERMISSION_CHECKS=1 (a test's own compositor)."""

    def __init__(self, display=None):
        self.wl = Wayland(display)
        self.device = self.wl.bind("org_kde_kwin_fake_input", 1)
        # authenticate(application, reason): KWin takes it without asking anyone.
        self.wl.send(self.device, 0, _string("lf-tray e2e") + _string("a person's pointer"))
        self.wl.roundtrip()

    def nudge(self, dx=1):
        """pointer_motion(delta_x, delta_y) in wl_fixed (24.8)."""
        self.wl.send(self.device, 1, struct.pack("=ii", dx * 256, 0))
        self.wl.roundtrip()

    def close(self):
        self.wl.close()
