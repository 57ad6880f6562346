#!/usr/bin/env python3
"""Draw Loopflow Tray's icons as PNG (and a PNG-in-ICO for Windows) with nothing but the
standard library, so they can be regenerated anywhere: `python3 icons/draw.py`.

The mark is an open loop with an arrowhead (the agent loop). Tray icons carry the state
in a badge at the bottom right, cut out of the loop so it reads at 22 px:
  tray-idle.png     grey loop, nothing pending
  tray-waiting.png  loop with an amber dot: an agent waits for you
  tray-ready.png    loop with a green check: something is ready for review
App icons: icon.png (256), 128x128.png, 32x32.png and icon.ico.

`python3 icons/draw.py --app-icons DIR SIZE...` draws only the app icon, at each SIZE, as
DIR/<SIZE>x<SIZE>.png: scripts/package.sh uses it for the other hicolor sizes a Linux
package carries, so they are drawn for their size rather than scaled and icons/ keeps only
what the app itself loads.
"""
import math
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = 4  # 4x4 supersampling per pixel: smooth edges without a graphics library


def png(path, size, pixels):
    raw = b"".join(b"\x00" + bytes(pixels[y * size * 4:(y + 1) * size * 4]) for y in range(size))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    data = (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(data)
    return data


def ico(path, png_bytes, size):
    # One PNG-compressed entry; Windows Vista and later read these. 256 is written as 0.
    entry = struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(png_bytes), 6 + 16)
    with open(path, "wb") as f:
        f.write(struct.pack("<HHH", 0, 1, 1) + entry + png_bytes)


# Shapes work in a unit square (0..1, y down); each is a predicate on a point.
def circle(cx, cy, r):
    return lambda x, y: (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def arc(cx, cy, r, width, gap_from, gap_to):
    """A ring of `width` with round ends, open between the angles gap_from..gap_to (degrees,
    0 = right, counter-clockwise as seen on screen)."""
    def angle(x, y):
        return math.degrees(math.atan2(cy - y, x - cx)) % 360

    ends = [(cx + r * math.cos(math.radians(a)), cy - r * math.sin(math.radians(a)))
            for a in (gap_from, gap_to)]
    half = width / 2

    def inside(x, y):
        d = math.hypot(x - cx, y - cy)
        if abs(d - r) <= half and not (gap_from <= angle(x, y) <= gap_to):
            return True
        return any((x - ex) ** 2 + (y - ey) ** 2 <= half * half for ex, ey in ends)
    return inside


def triangle(a, b, c):
    def sign(p, q, r):
        return (p[0] - r[0]) * (q[1] - r[1]) - (q[0] - r[0]) * (p[1] - r[1])

    def inside(x, y):
        p = (x, y)
        d1, d2, d3 = sign(p, a, b), sign(p, b, c), sign(p, c, a)
        neg = d1 < 0 or d2 < 0 or d3 < 0
        pos = d1 > 0 or d2 > 0 or d3 > 0
        return not (neg and pos)
    return inside


def capsule(ax, ay, bx, by, r):
    def inside(x, y):
        vx, vy = bx - ax, by - ay
        t = max(0.0, min(1.0, ((x - ax) * vx + (y - ay) * vy) / (vx * vx + vy * vy)))
        px, py = ax + t * vx, ay + t * vy
        return (x - px) ** 2 + (y - py) ** 2 <= r * r
    return inside


def rounded_square(margin, radius):
    lo, hi = margin, 1 - margin

    def inside(x, y):
        if not (lo <= x <= hi and lo <= y <= hi):
            return False
        cx = min(max(x, lo + radius), hi - radius)
        cy = min(max(y, lo + radius), hi - radius)
        return (x - cx) ** 2 + (y - cy) ** 2 <= radius * radius
    return inside


def union(*shapes):
    return lambda x, y: any(s(x, y) for s in shapes)


def render(size, layers):
    """layers: (shape, rgba or a function of y giving rgba, or None to erase)."""
    px = [0.0] * (size * size * 4)
    for shape, colour in layers:
        for j in range(size):
            for i in range(size):
                hits = 0
                for sy in range(SAMPLES):
                    for sx in range(SAMPLES):
                        if shape((i + (sx + 0.5) / SAMPLES) / size, (j + (sy + 0.5) / SAMPLES) / size):
                            hits += 1
                if not hits:
                    continue
                cov = hits / SAMPLES ** 2
                k = (j * size + i) * 4
                if colour is None:
                    for c in range(4):
                        px[k + c] *= 1 - cov
                    continue
                r, g, b, a = colour(j / size) if callable(colour) else colour
                sa = a / 255 * cov
                da = px[k + 3] / 255
                oa = sa + da * (1 - sa)
                for c, v in enumerate((r, g, b)):
                    # Colours are kept premultiplied while compositing.
                    px[k + c] = v * sa + px[k + c] * (1 - sa)
                px[k + 3] = oa * 255
    out = []
    for k in range(0, len(px), 4):
        a = px[k + 3]
        if a <= 0:
            out += [0, 0, 0, 0]
        else:
            out += [min(255, round(px[k + c] * 255 / a)) for c in range(3)] + [round(a)]
    return out


def loop_mark(cx, cy, r, width):
    """The open loop: a ring with a gap at the top right and an arrowhead at the gap's
    lower end, pointing into the gap (clockwise travel)."""
    gap_from, gap_to = 20, 75
    ring = arc(cx, cy, r, width, gap_from, gap_to)
    a = math.radians(gap_from)
    ex, ey = cx + r * math.cos(a), cy - r * math.sin(a)       # end of the ring below the gap
    tx, ty = -math.sin(a), -math.cos(a)                      # travel direction there (clockwise = upward)
    nx, ny = math.cos(a), -math.sin(a)                       # outward normal
    head = width * 1.25
    tip = (ex + tx * head * 1.1, ey + ty * head * 1.1)
    left = (ex + nx * head, ey + ny * head)
    right = (ex - nx * head, ey - ny * head)
    return union(ring, triangle(tip, left, right))


AMBER = (245, 166, 35, 255)
GREEN = (52, 199, 89, 255)
GREY = (150, 157, 167, 255)  # mid grey: readable on dark and light panels
WHITE = (255, 255, 255, 255)


def tray(state, size=64):
    layers = [(loop_mark(0.45, 0.5, 0.32, 0.13), GREY)]
    bx, by, br = 0.77, 0.77, 0.2
    if state != "idle":
        layers.append((circle(bx, by, br + 0.06), None))          # knock the loop out around the badge
        layers.append((circle(bx, by, br), AMBER if state == "waiting" else GREEN))
    if state == "ready":
        w = 0.04
        layers.append((union(capsule(bx - 0.1, by + 0.0, bx - 0.03, by + 0.07, w),
                             capsule(bx - 0.03, by + 0.07, bx + 0.1, by - 0.07, w)), WHITE))
    return render(size, layers)


def app_icon(size):
    def gradient(t):
        top, bottom = (99, 102, 241), (124, 58, 237)
        return tuple(round(a + (b - a) * t) for a, b in zip(top, bottom)) + (255,)
    return render(size, [
        (rounded_square(0.06, 0.2), gradient),
        (loop_mark(0.48, 0.52, 0.25, 0.095), WHITE),
        (circle(0.48, 0.52, 0.055), (255, 255, 255, 235)),
    ])


def main():
    for state in ("idle", "waiting", "ready"):
        png(os.path.join(HERE, f"tray-{state}.png"), 64, tray(state))
    big = png(os.path.join(HERE, "icon.png"), 256, app_icon(256))
    png(os.path.join(HERE, "128x128.png"), 128, app_icon(128))
    png(os.path.join(HERE, "32x32.png"), 32, app_icon(32))
    ico(os.path.join(HERE, "icon.ico"), big, 256)


def app_icons(out_dir, sizes):
    os.makedirs(out_dir, exist_ok=True)
    for size in sizes:
        png(os.path.join(out_dir, f"{size}x{size}.png"), size, app_icon(size))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--app-icons"] and len(sys.argv) > 3:
        app_icons(sys.argv[2], [int(s) for s in sys.argv[3:]])
    elif len(sys.argv) > 1:
        sys.exit("usage: draw.py [--app-icons DIR SIZE...]")
    else:
        main()
