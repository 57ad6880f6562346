"""What a desktop draws, read as a screen reader reads it: over AT-SPI, from the
accessible application that draws it (GTK servers always; GNOME Shell with
`toolkit-accessibility` on; Qt ones with QT_LINUX_ACCESSIBILITY_ALWAYS_ON)."""

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

# A node's extents when it is not on the screen (GNOME's banner buttons until the pointer
# is on the banner).
OFF_SCREEN = -(2 ** 31)


def application(name):
    """The accessible application `name`, read anew (a cached tree would still show the
    last popup's words), or None."""
    desktop = Atspi.get_desktop(0)
    desktop.clear_cache()
    for i in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(i)
        if app is not None and app.get_name() == name:
            app.clear_cache()
            return app
    return None


# The roles read here, by their number: the names the library gives them changed (AT-SPI
# 2.56, Debian 13, calls a push button "button"; 2.46, Debian 12, "push button").
ROLES = {Atspi.Role.LABEL: "label", Atspi.Role.PUSH_BUTTON: "push button"}


def walk(node, depth=0):
    """Every node at and below `node`, as (node, role, name), depth first; 20 levels at
    the most (the servers' popups are a handful deep, GNOME Shell's a dozen). The role is
    "label", "push button" or another of AT-SPI's names."""
    if node is None or depth > 20:
        return
    role = node.get_role()
    yield node, ROLES.get(role) or node.get_role_name(), node.get_name() or ""
    for k in range(node.get_child_count()):
        yield from walk(node.get_child_at_index(k), depth + 1)


def centre(node):
    """Where `node` is drawn on the screen, or None when it is not."""
    ext = node.get_extents(Atspi.CoordType.SCREEN)
    if ext.width <= 0 or ext.height <= 0 or ext.x == OFF_SCREEN:
        return None
    return ext.x + ext.width // 2, ext.y + ext.height // 2


def popups(app_name):
    """Each top-level window of the accessible application `app_name`, as
    (texts, [(button name, centre)], {text: centre}) of what is on the screen."""
    app = application(app_name)
    found = []
    for j in range(app.get_child_count() if app else 0):
        texts, buttons, where = [], [], {}
        for node, role, text in walk(app.get_child_at_index(j)):
            if role not in ("label", "push button"):
                continue
            at = centre(node)
            if at is None:
                continue
            if role == "label":
                texts.append(text)
                where[text] = at
            elif text:
                # A close button drawn as an icon has no name.
                buttons.append((text, at))
        if texts:
            found.append((texts, buttons, where))
    return found


def buttons_beside(app_name, text):
    """The push buttons of the smallest part of `app_name`'s tree that holds a label with
    `text` and buttons too (a popup's own action area), as [(name, centre or None)]."""
    app = application(app_name)
    label = next((node for node, role, name in walk(app) if role == "label" and text in name),
                 None) if app else None
    node = label
    while node is not None:
        buttons = [(name, centre(n)) for n, role, name in walk(node) if role == "push button" and name]
        if buttons:
            return buttons
        node = node.get_parent()
    return []
