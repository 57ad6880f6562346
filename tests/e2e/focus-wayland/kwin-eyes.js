// Test only (tests/e2e/focus-wayland.sh, KWin 5.27): the active window's pid, written to
// KWin's stderr at load and on every change (`js: E2E_ACTIVE <pid>`), as KWin itself
// sees it. Loaded once, before the checks; it stays for the run.
function said(client) {
    print("E2E_ACTIVE " + (client ? client.pid : 0));
}
workspace.clientActivated.connect(said);
said(workspace.activeClient);
