// Test only (tests/e2e/focus-wayland.sh, GNOME Shell 45 and later, ES modules): what the
// suite sees and does in the shell, independently of the tray's own extension. It logs the
// focused window's pid (`E2E_ACTIVE <pid>`) at start and on every change, to the shell's
// stderr; and exports on /org/loopflow/E2e: Focus (a person clicking another window),
// Click (a person clicking a banner's body) and Count (the banners whose title or body
// holds a text). GNOME 46 renamed a notification's bannerBodyText to body.
//
// Keep in step with ../43/extension.js: only the imports and the wrapper differ.

import Gio from 'gi://Gio';
import Meta from 'gi://Meta';
import * as Main from 'resource:///org/gnome/shell/ui/main.js';
import {Extension} from 'resource:///org/gnome/shell/extensions/extension.js';

const INTERFACE = `<node>
  <interface name="org.loopflow.E2e">
    <method name="Focus">
      <arg type="u" direction="in" name="pid"/>
      <arg type="b" direction="out" name="found"/>
    </method>
    <method name="Click">
      <arg type="s" direction="in" name="text"/>
      <arg type="u" direction="out" name="clicked"/>
    </method>
    <method name="Count">
      <arg type="s" direction="in" name="text"/>
      <arg type="u" direction="out" name="count"/>
    </method>
  </interface>
</node>`;

function focusedPid() {
    const window = global.display.focus_window;
    return window ? window.get_pid() : 0;
}

function banners(text) {
    const found = [];
    for (const source of Main.messageTray.getSources()) {
        for (const n of source.notifications) {
            if ((n.title || '').includes(text) || (n.bannerBodyText || n.body || '').includes(text))
                found.push(n);
        }
    }
    return found;
}

export default class E2e extends Extension {
    Focus(pid) {
        const window = global.get_window_actors()
            .map(actor => actor.get_meta_window())
            .find(w => w.get_pid() === pid && w.get_window_type() === Meta.WindowType.NORMAL);
        if (!window)
            return false;
        Main.activateWindow(window, global.get_current_time());
        return true;
    }

    Click(text) {
        const found = banners(text);
        if (found.length === 0)
            return 0;
        found[found.length - 1].activate();
        return found.length;
    }

    Count(text) {
        return banners(text).length;
    }

    enable() {
        this._exported = Gio.DBusExportedObject.wrapJSObject(INTERFACE, this);
        this._exported.export(Gio.DBus.session, '/org/loopflow/E2e');
        this._focus = global.display.connect('notify::focus-window',
            () => printerr(`E2E_ACTIVE ${focusedPid()}`));
        printerr(`E2E_ACTIVE ${focusedPid()}`);
    }

    disable() {
        global.display.disconnect(this._focus);
        this._exported.unexport();
    }
}
