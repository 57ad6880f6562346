// Loopflow Tray's focus extension, GNOME Shell 45 and later (ES modules).
//
// GNOME lets no app bring another app's window to the front on Wayland; the shell can.
// This exports, on the shell's own connection to the person's session bus, at
// /org/loopflow/Tray/Focus: Activate (the normal window of a pid, or of a pid and its
// title) and Windows (the pids of the normal windows and of the focused one, for the
// tray's "is the person looking at this terminal" question). Pids and a title in, pids
// out: no window's title or contents ever leave the shell.
//
// Keep in step with ../43/extension.js: only the imports and the wrapper differ.
// Run on GNOME Shell 48.7 by tests/e2e/debian13.sh (Debian 13, in a chroot).

import Gio from 'gi://Gio';
import Meta from 'gi://Meta';
import * as Main from 'resource:///org/gnome/shell/ui/main.js';
import {Extension} from 'resource:///org/gnome/shell/extensions/extension.js';

const PATH = '/org/loopflow/Tray/Focus';
const INTERFACE = `<node>
  <interface name="org.loopflow.Tray.Focus1">
    <method name="Activate">
      <arg type="u" direction="in" name="pid"/>
      <arg type="s" direction="in" name="title"/>
      <arg type="u" direction="out" name="candidates"/>
      <arg type="b" direction="out" name="focused"/>
    </method>
    <method name="Windows">
      <arg type="au" direction="out" name="pids"/>
      <arg type="u" direction="out" name="focused"/>
    </method>
  </interface>
</node>`;

function normalWindows() {
    return global.get_window_actors()
        .map(actor => actor.get_meta_window())
        .filter(w => w && w.get_window_type() === Meta.WindowType.NORMAL);
}

class Focus {
    // Several windows of one process (gnome-terminal-server has them all): the one whose
    // title is `title`, if exactly one is; else the one the person used last.
    Activate(pid, title) {
        let mine = normalWindows().filter(w => w.get_pid() === pid);
        const titled = title ? mine.filter(w => w.get_title() === title) : [];
        const candidates = mine.length;
        if (titled.length === 1)
            mine = titled;
        if (mine.length === 0)
            return [candidates, false];
        const window = mine.reduce((a, b) => (b.get_user_time() > a.get_user_time() ? b : a));
        Main.activateWindow(window, global.get_current_time());
        return [candidates, global.display.focus_window === window];
    }

    Windows() {
        const focused = global.display.focus_window;
        return [normalWindows().map(w => w.get_pid()), focused ? focused.get_pid() : 0];
    }
}

export default class LoopflowTrayFocus extends Extension {
    enable() {
        this._focus = new Focus();
        this._exported = Gio.DBusExportedObject.wrapJSObject(INTERFACE, this._focus);
        this._exported.export(Gio.DBus.session, PATH);
    }

    disable() {
        this._exported.unexport();
        this._exported = null;
        this._focus = null;
    }
}
