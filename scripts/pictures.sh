#!/usr/bin/env bash
# The README's and docs' pictures, made again from a run of the suites, so that a picture
# never shows what the app no longer does: the end-to-end checks that take them run under
# Xvfb with dunst and WebDriver (tests/e2e/run.sh, only those checks), and their screenshots
# are trimmed and stripped into docs/pictures/, with docs/pictures/README.md saying which run
# made them. The checks assert what the pictures show; a failed run changes no picture.
#
#   scripts/pictures.sh
#
# Environment (optional): CARGO_TARGET_DIR; PICTURES_OUT, where the run's screenshots and
# logs go (default ci-out/pictures).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"

# The same tools, venv and build as scripts/test.sh's end-to-end run.
CACHE=${LF_TRAY_CACHE:-$HOME/.cache/lf-tray}
mkdir -p "$CACHE"
export PATH="$CACHE/bin:$PATH"
command -v tauri-driver >/dev/null || cargo install --locked --quiet tauri-driver@^2 --root "$CACHE"
E2E_VENV=$CACHE/venv
[ -x "$E2E_VENV/bin/python" ] && "$E2E_VENV/bin/python" -c "import dbus, gi" 2>/dev/null ||
  { rm -rf "$E2E_VENV"; /usr/bin/python3 -m venv --system-site-packages "$E2E_VENV"; }
"$E2E_VENV/bin/python" -c "import selenium" 2>/dev/null || "$E2E_VENV/bin/pip" install -q selenium
cargo build --locked -p lf-tray -p lf-sim --bins

# The checks that take the pictures, and those they stand on (the bus and the first app).
checks='^(bus_services_are_up|app_starts_with_a_tray_item|answer_the_question_from_the_popup_always_allow_a_plan_and_off_at_start|window_card_answers_two_questions_with_a_multi_select_and_typed_words)$'
out=${PICTURES_OUT:-ci-out/pictures}
rm -rf "$out" && mkdir -p "$out"
run_log=$out/run.txt
TAURI_DRIVER=$(command -v tauri-driver) PY=$E2E_VENV/bin/python E2E_VENV=$E2E_VENV E2E_OUT=$out \
  E2E_ONLY=$checks bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" | tee "$run_log"
summary=$(tail -n 1 "$run_log")
# Every check passed, none skipped (the window's need tauri-driver).
case $summary in
  "e2e: "*" passed, 0 failed") ;;
  *) echo "pictures: the run did not pass every check ($summary): no picture changed" >&2; exit 1 ;;
esac

# The window on 10 000 sessions, as it opens: its own suite (the same one scripts/test.sh
# runs), whose home is too large to share with the checks above.
scale_log=$out/window-scale.txt
TAURI_DRIVER=$(command -v tauri-driver) PY=$E2E_VENV/bin/python E2E_VENV=$E2E_VENV \
  E2E_SUITE=window_scale.py E2E_BUS_CONFIG=$PWD/tests/e2e/session-bus.conf E2E_OUT=$out/window-scale \
  bash tests/e2e/run.sh "${CARGO_TARGET_DIR:-target}/debug/lf-tray" | tee "$scale_log"
scale_summary=$(tail -n 1 "$scale_log")
case $scale_summary in
  "e2e: "*" passed, 0 failed") ;;
  *) echo "pictures: the window's run did not pass ($scale_summary): no picture changed" >&2; exit 1 ;;
esac

# Trimmed to what they show (the popup off Xvfb's black screen; the window alone), without
# ImageMagick's time stamps, so that an unchanged picture is unchanged bytes.
pictures=docs/pictures
mkdir -p "$pictures"
shrink() { convert "$1" -trim +repage -strip -define png:compression-level=9 "$2"; }
shrink "$out/question-popup.png" "$pictures/question-popup.png"
# The card alone, with a margin, inside the window's picture: the row around it names the
# run's temporary directories, which are no part of what the card shows.
card=$(python3 - "$out/question-card.json" "$(identify -format '%w %h' "$out/question-card.png")" <<'PY'
import json, sys
left, top, width, height = json.load(open(sys.argv[1]))
image_w, image_h = map(int, sys.argv[2].split())
margin = 8
x0, y0 = max(0, int(left) - margin), max(0, int(top) - margin)
x1, y1 = min(image_w, int(left + width) + margin), min(image_h, int(top + height) + margin)
print(f"{x1 - x0}x{y1 - y0}+{x0}+{y0}")
PY
)
convert "$out/question-card.png" -crop "$card" +repage -strip -define png:compression-level=9 \
  "$pictures/question-card.png"

# The window above its footer (which names the run's temporary directory).
above=$(python3 -c 'import json, sys; w, top = json.load(open(sys.argv[1])); print(f"{int(w)}x{int(top)}+0+0")' \
  "$out/window-scale/window-10000-open.json")
convert "$out/window-scale/window-10000-open.png" -crop "$above" +repage -strip \
  -define png:compression-level=9 "$pictures/window-10000.png"

commit=$(git rev-parse --short HEAD)
# Pages do not change a picture; anything else uncommitted might.
git diff --quiet HEAD -- . ':!*.md' ':!docs/pictures' || commit="$commit with uncommitted changes"
cat >"$pictures/README.md" <<EOF
# The pictures

Made by \`scripts/pictures.sh\` on $(date -u +%Y-%m-%d) from commit $commit: a run of
\`tests/e2e/e2e.py\` under Xvfb (1280×800), a private session bus, dunst $(dunst --version | grep -o '[0-9][0-9.]*' | head -n 1) and
tauri-driver with WebKitWebDriver; the run's summary: \`$summary\`; and a run of
\`tests/e2e/window_scale.py\` (the same): \`$scale_summary\`.

| picture | the check that took it, and asserts what it shows |
|---|---|
| [question-popup.png](question-popup.png) | \`answer_the_question_from_the_popup_always_allow_a_plan_and_off_at_start\`: Claude's \`AskUserQuestion\` through the hook, its popup as dunst draws it (the options as words; dunst keeps the buttons in its menu) |
| [question-card.png](question-card.png) | \`window_card_answers_two_questions_with_a_multi_select_and_typed_words\`: the window's question card with every question answered, before Send |
| [window-10000.png](window-10000.png) | \`window_scale.py\`'s \`the_window_stays_usable_at_ten_thousand_sessions\`: the window opened on 10 000 sessions, 100 waiting: the heading's count, the first waiting rows (the footer cut off) |

Run \`scripts/pictures.sh\` again after a change to what they show, and look at each picture
before committing it.
EOF
ls -l "$pictures"
