//! The count of sessions that need the person, drawn on the tray icon itself. A
//! StatusNotifierItem has no standard place for a number beside its icon: libappindicator's
//! `XAyatanaLabel` reached GNOME's AppIndicator extension only, Plasma never drew one, and
//! the item the app now speaks (ksni) has none. A badge in the icon is read on every host.

/// Glyphs 3 wide and 5 high, a row a byte (the low 3 bits, left to right): digits, then `+`.
const GLYPHS: [[u8; 5]; 11] = [
    [0b111, 0b101, 0b101, 0b101, 0b111],
    [0b010, 0b110, 0b010, 0b010, 0b111],
    [0b111, 0b001, 0b111, 0b100, 0b111],
    [0b111, 0b001, 0b111, 0b001, 0b111],
    [0b101, 0b101, 0b111, 0b001, 0b001],
    [0b111, 0b100, 0b111, 0b001, 0b111],
    [0b111, 0b100, 0b111, 0b101, 0b111],
    [0b111, 0b001, 0b001, 0b001, 0b001],
    [0b111, 0b101, 0b111, 0b101, 0b111],
    [0b111, 0b101, 0b111, 0b001, 0b111],
    [0b000, 0b010, 0b111, 0b010, 0b000],
];
const PLUS: usize = 10;
/// A red that reads as "needs you" on light and dark panels alike, with a white ring that
/// keeps it apart from the icon under it.
const FILL: [u8; 4] = [0xd9, 0x30, 0x25, 0xff];
const RING: [u8; 4] = [0xff, 0xff, 0xff, 0xff];
const INK: [u8; 4] = [0xff, 0xff, 0xff, 0xff];

/// What the badge says: the count up to 9, then `9+` (a tray icon is 16–24 px on screen;
/// two digits are the most that stay readable).
fn glyphs(count: usize) -> Vec<usize> {
    if count > 9 {
        vec![9, PLUS]
    } else {
        vec![count]
    }
}

/// Draw the badge for `count` on a square RGBA image, in its lower right half; nothing for
/// no count.
pub fn draw(rgba: &mut [u8], width: u32, height: u32, count: usize) {
    if count == 0 || width == 0 || height == 0 || rgba.len() < (width * height * 4) as usize {
        return;
    }
    let (w, h) = (width as i64, height as i64);
    let side = w.min(h);
    let radius = side / 4;
    let (cx, cy) = (w - radius - 1, h - radius - 1);
    let mut put = |x: i64, y: i64, color: [u8; 4]| {
        if (0..w).contains(&x) && (0..h).contains(&y) {
            let i = ((y * w + x) * 4) as usize;
            rgba[i..i + 4].copy_from_slice(&color);
        }
    };
    let ring = (side / 32).max(1);
    for y in cy - radius..=cy + radius {
        for x in cx - radius..=cx + radius {
            let d2 = (x - cx).pow(2) + (y - cy).pow(2);
            if d2 <= radius.pow(2) {
                let inner = (radius - ring).pow(2);
                put(x, y, if d2 > inner { RING } else { FILL });
            }
        }
    }
    let text = glyphs(count);
    // Glyphs 3 wide with one column between them, scaled to fill most of the circle.
    let columns = text.len() as i64 * 4 - 1;
    let scale = ((radius * 2 * 3 / 4) / columns)
        .min(radius * 2 * 3 / 4 / 5)
        .max(1);
    let (left, top) = (cx - columns * scale / 2, cy - 5 * scale / 2);
    for (n, glyph) in text.iter().enumerate() {
        for (row, bits) in GLYPHS[*glyph].iter().enumerate() {
            for col in 0..3 {
                if bits & (0b100 >> col) == 0 {
                    continue;
                }
                let x0 = left + (n as i64 * 4 + col) * scale;
                let y0 = top + row as i64 * scale;
                for dy in 0..scale {
                    for dx in 0..scale {
                        put(x0 + dx, y0 + dy, INK);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIDE: u32 = 64;

    fn drawn(count: usize) -> Vec<u8> {
        let mut rgba = vec![0u8; (SIDE * SIDE * 4) as usize];
        draw(&mut rgba, SIDE, SIDE, count);
        rgba
    }

    fn pixel(rgba: &[u8], x: u32, y: u32) -> [u8; 4] {
        let i = ((y * SIDE + x) * 4) as usize;
        rgba[i..i + 4].try_into().unwrap()
    }

    #[test]
    fn a_count_is_a_red_badge_in_the_lower_right_with_white_figures() {
        let none = drawn(0);
        assert!(none.iter().all(|b| *b == 0), "no count, no badge");
        let one = drawn(1);
        assert_eq!(
            pixel(&one, 0, 0),
            [0; 4],
            "the icon's upper left is untouched"
        );
        assert_eq!(pixel(&one, 40, 40), FILL, "the badge's fill");
        assert!(one.chunks(4).any(|p| p == INK.as_slice()), "its figure");
        // Each count draws differently; ten and more are all "9+".
        let counts: Vec<Vec<u8>> = (1..=10).map(drawn).collect();
        for (i, a) in counts.iter().enumerate() {
            for b in &counts[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(drawn(10), drawn(57));
    }

    #[test]
    fn a_short_buffer_or_an_empty_image_is_left_alone() {
        let mut short = vec![0u8; 16];
        draw(&mut short, SIDE, SIDE, 3);
        assert!(short.iter().all(|b| *b == 0));
        draw(&mut [], 0, 0, 3);
    }
}
