// Test only (tests/e2e/focus-wayland.sh): the active window's pid, written to KWin's
// stderr at load and on every change (`js: E2E_ACTIVE <pid>`), as KWin itself sees it.
// Loaded once, before the checks; it stays for the run. The @…@ names are the running
// KWin's (focus_wayland.py: 5.27's activeClient/clientActivated, 6's
// activeWindow/windowActivated).
function said(window) {
    print("E2E_ACTIVE " + (window ? window.pid : 0));
}
workspace.@ACTIVATED@.connect(said);
said(workspace.@ACTIVE@);
