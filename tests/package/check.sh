#!/usr/bin/env bash
# The Linux packages as a user gets them: scripts/package.sh builds the .deb and the .rpm;
# the .deb is installed with apt-get, its files and metadata are checked, its desktop entry
# is launched, the desktop end-to-end run drives the installed /usr/bin/lf-tray, and the
# package is removed again (also when something fails) leaving nothing of it in /usr. The
# .rpm is inspected with rpm (no rpm-based system to install it on here).
#
#   tests/package/check.sh
#
# Environment: LF_STAND_IN (lf-sim's stand-in `lf`, required), TAURI_DRIVER and PY as for
# tests/e2e/run.sh, E2E_OUT (default ci-out/package). Needs root or sudo for apt-get.
# Ends with `package: N passed, M failed`; exits non-zero if any check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x "${LF_STAND_IN:-}" ] || { echo "check.sh: LF_STAND_IN must name lf-sim's stand-in lf" >&2; exit 2; }
out=${E2E_OUT:-ci-out/package}
mkdir -p "$out"
out=$(cd "$out" && pwd)

PKG=lf-tray
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
# Other agents' or the system's apt runs hold the dpkg lock for a while; wait, don't fail.
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq)
# Marks an install made by this script, so an lf-tray the user installed is never replaced
# and removed by a test run, while one left by an interrupted run is.
CACHE=${LF_TRAY_CACHE:-$HOME/.cache/lf-tray}
marker=$CACHE/package-test-installed
mkdir -p "$CACHE"

passed=0 failed=0
ok() { echo "ok   package: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL package: $1"; failed=$((failed + 1)); }
summary() { echo "package: $passed passed, $failed failed"; }
installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$PKG" 2>/dev/null | grep -q '^ii'; }
elapsed() { printf '%d.%01d s' $(($1 / 10)) $(($1 % 10)); }
now() { echo $(($(date +%s%N) / 100000000)); }   # tenths of a second
t0=$(now)

if installed && [ ! -e "$marker" ]; then
  echo "check.sh: $PKG is installed on this machine and not by a test run; remove it first" >&2
  echo "(apt-get remove $PKG) or leave this check to CI." >&2
  fail "$PKG already installed by someone else"
  summary
  exit 1
fi

remove() {
  if installed; then "${apt[@]}" remove "$PKG" >"$out/apt-remove.log" 2>&1; fi
  rm -f "$marker"
}
trap 'remove; summary' EXIT
trap 'fail "interrupted"; exit 130' INT TERM

# --- build ---------------------------------------------------------------------------
t=$(now)
if ! packages=$(bash scripts/package.sh 2>"$out/package.log"); then
  tail -n 30 "$out/package.log" >&2
  fail "scripts/package.sh failed (see $out/package.log)"
  exit 1
fi
echo "scripts/package.sh ($(elapsed $(($(now) - t)))):"
sed 's/^/  /' <<<"$packages"
deb=$(grep '\.deb$' <<<"$packages" || true)
rpm=$(grep '\.rpm$' <<<"$packages" || true)
if [ "$(wc -l <<<"$packages")" -eq 2 ] && [ -f "$deb" ] && [ -f "$rpm" ]; then
  ok "package.sh printed the path of one .deb and one .rpm, each on its own line"
else
  fail "package.sh printed '$packages', not a .deb and an .rpm path"
  exit 1
fi

# --- the .deb, before installing -----------------------------------------------------
dpkg-deb -c "$deb" >"$out/deb-contents.txt"
# The files, as absolute paths (dpkg-deb lists them relative, with or without ./).
deb_files=$(awk '$1 !~ /^d/ {print $6}' "$out/deb-contents.txt" | sed 's|^\./|/|; s|^\([^/]\)|/\1|' | sort)
sizes=(16x16 22x22 24x24 32x32 48x48 64x64 128x128 256x256)
want=(/usr/bin/lf-tray /usr/share/applications/lf-tray.desktop
  # The same app under its identifier, hidden, for the shortcuts portal (GNOME 48 takes no
  # app id without a dot; packaging/dev.loopflow.tray.desktop).
  /usr/share/applications/dev.loopflow.tray.desktop
  # GNOME Shell's focus extension in both formats (`lf-tray setup gnome-focus` installs the
  # copy inside the binary; these are for a look, or a distribution's own packaging).
  /usr/share/lf-tray/gnome-focus/43/extension.js /usr/share/lf-tray/gnome-focus/45/extension.js)
for s in "${sizes[@]}"; do want+=("/usr/share/icons/hicolor/$s/apps/lf-tray.png"); done
want_files=$(printf '%s\n' "${want[@]}" | sort)
missing=$(comm -13 <(echo "$deb_files") <(echo "$want_files") | tr '\n' ' ')
# Anything else is a surprise worth a look (the bundler's defaults can change).
extra=$(comm -23 <(echo "$deb_files") <(echo "$want_files") | tr '\n' ' ')
if [ -z "$missing" ] && [ -z "$extra" ]; then
  ok "the .deb holds /usr/bin/lf-tray, lf-tray.desktop, dev.loopflow.tray.desktop, ${#sizes[@]} hicolor icons and the GNOME focus extension, nothing else"
else
  fail "the .deb lacks ${missing:-nothing}; unexpected: ${extra:-nothing}"
fi
control=$(dpkg-deb -f "$deb" Package Depends)
echo "$control" >"$out/deb-control.txt"
depends=$(sed -n 's/^Depends: //p' <<<"$control")
has_all() { # LIST ITEM...: every ITEM is one of the comma-separated LIST's entries
  local list=$1 item
  shift
  for item in "$@"; do grep -Eq "(^|, )$item(,|$| )" <<<"$list" || return 1; done
}
if grep -qx "Package: $PKG" <<<"$control" &&
  has_all "$depends" libwebkit2gtk-4.1-0 libgtk-3-0 libayatana-appindicator3-1; then
  ok "the .deb is package $PKG and depends on WebKitGTK 4.1, GTK 3, Ayatana AppIndicator ($depends)"
else
  fail "control fields: $control"
fi

# --- install -------------------------------------------------------------------------
t=$(now)
: >"$marker"
if "${apt[@]}" install --no-install-recommends "$(realpath "$deb")" >"$out/apt-install.log" 2>&1 && installed; then
  ok "apt-get install ./$(basename "$deb") ($(elapsed $(($(now) - t))))"
else
  tail -n 20 "$out/apt-install.log" >&2
  fail "apt-get install of $deb failed (see $out/apt-install.log)"
  exit 1
fi
dpkg -L "$PKG" >"$out/dpkg-L.txt"
if [ "$(command -v lf-tray)" = /usr/bin/lf-tray ] && [ -x /usr/bin/lf-tray ]; then
  ok "lf-tray on PATH is /usr/bin/lf-tray"
else
  fail "lf-tray on PATH is '$(command -v lf-tray || true)', not /usr/bin/lf-tray"
fi
# The product build (default features): no simulated Loopflow inside.
if demo=$(/usr/bin/lf-tray demo 2>&1); then
  fail "/usr/bin/lf-tray demo ran: this is a demo build"
elif grep -q "built without the demo" <<<"$demo"; then
  ok "/usr/bin/lf-tray is the product build (lf-tray demo: '$demo')"
else
  fail "/usr/bin/lf-tray demo failed otherwise: $demo"
fi
status=$(dpkg -s "$PKG" | sed -n 's/^Depends: //p')
if [ "$status" = "$depends" ]; then
  ok "dpkg -s $PKG: Depends: $status"
else
  fail "dpkg -s $PKG Depends '$status' differs from the .deb's '$depends'"
fi

entry=/usr/share/applications/lf-tray.desktop
if validation=$(desktop-file-validate "$entry" 2>&1) && [ -z "$validation" ]; then
  ok "desktop-file-validate $entry: no errors, warnings or hints"
else
  fail "desktop-file-validate $entry: ${validation:-exit status non-zero}"
fi
# The identifier's entry: valid too, and out of the menus (one "Loopflow Tray" there).
id_entry=/usr/share/applications/dev.loopflow.tray.desktop
if validation=$(desktop-file-validate "$id_entry" 2>&1) && [ -z "$validation" ] &&
  grep -qx 'NoDisplay=true' "$id_entry" && grep -qx 'Exec=lf-tray' "$id_entry"; then
  ok "desktop-file-validate $id_entry: valid, NoDisplay, runs lf-tray"
else
  fail "$id_entry: ${validation:-not NoDisplay=true with Exec=lf-tray}"
fi
cp "$entry" "$out/lf-tray.desktop"
key() { sed -n "s/^$1=//p" "$entry"; }
if [ "$(key Exec)" = lf-tray ] && [ "$(key Icon)" = lf-tray ] && [ "$(key Categories)" = "Development;" ] &&
  [ "$(key StartupNotify)" = true ] && [ "$(key Name)" = "Loopflow Tray" ] && [ "$(key Type)" = Application ]; then
  ok "the entry: Name=Loopflow Tray, Exec=lf-tray, Icon=lf-tray, Categories=Development;, StartupNotify=true"
else
  fail "the entry's keys: $(grep -E '^(Name|Exec|Icon|Categories|StartupNotify|Type)=' "$entry" | tr '\n' ' ')"
fi
bad=()
for s in "${sizes[@]}"; do
  icon=/usr/share/icons/hicolor/$s/apps/lf-tray.png
  [ "$(identify -format '%wx%h' "$icon" 2>/dev/null)" = "$s" ] || bad+=("$icon")
done
if [ ${#bad[@]} -eq 0 ]; then
  ok "hicolor icons ${sizes[*]} installed, each a PNG of its size"
else
  fail "icons missing or of the wrong size: ${bad[*]}"
fi

# --- the installed app, driven -------------------------------------------------------
t=$(now)
if bash tests/package/launch.sh "$entry" "$out"; then
  ok "desktop entry launch ($(elapsed $(($(now) - t))))"
else
  fail "desktop entry launch (see $out/launch-*.log)"
fi
t=$(now)
if E2E_OUT=$out/e2e bash tests/e2e/run.sh /usr/bin/lf-tray; then
  ok "tests/e2e/run.sh /usr/bin/lf-tray ($(elapsed $(($(now) - t))))"
else
  fail "tests/e2e/run.sh /usr/bin/lf-tray (see $out/e2e)"
fi

# --- remove --------------------------------------------------------------------------
t=$(now)
files=$(dpkg -L "$PKG" | while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done)
if "${apt[@]}" remove "$PKG" >"$out/apt-remove.log" 2>&1 && ! installed; then
  rm -f "$marker"
  left=$(for f in $files; do if [ -e "$f" ]; then echo "$f"; fi; done
    find /usr -xdev -path /usr/local -prune -o \( -name 'lf-tray*' -o -name 'dev.loopflow.tray*' \) -print)
  state=$(dpkg-query -W -f='${db:Status-Abbrev}' "$PKG" 2>/dev/null || true)
  if [ -z "$left" ] && [ "${state:0:1}" != r ] && [ "${state:1:1}" != c ]; then
    ok "apt-get remove -y $PKG left nothing of it in /usr, no config files ($(elapsed $(($(now) - t))))"
  else
    fail "after apt-get remove: left ${left:-nothing}; dpkg state '$state'"
  fi
else
  fail "apt-get remove $PKG failed (see $out/apt-remove.log)"
fi

# --- the .rpm ------------------------------------------------------------------------
rpm -qlp "$rpm" >"$out/rpm-ql.txt" 2>"$out/rpm.err" || true
if [ "$(sort "$out/rpm-ql.txt")" = "$want_files" ]; then
  ok "rpm -qlp: /usr/bin/lf-tray, lf-tray.desktop, dev.loopflow.tray.desktop, the ${#sizes[@]} icons and the GNOME focus extension, nothing else"
else
  fail "rpm -qlp lists: $(tr '\n' ' ' <"$out/rpm-ql.txt")"
fi
name=$(rpm -qp --queryformat '%{NAME}' "$rpm" 2>>"$out/rpm.err" || true)
requires=$(rpm -qpR "$rpm" 2>>"$out/rpm.err" | paste -sd, | sed 's/,/, /g' || true)
if [ "$name" = "$PKG" ] && has_all "$requires" 'libwebkit2gtk-4\.1\.so\.0\(\)\(64bit\)' \
  'libgtk-3\.so\.0\(\)\(64bit\)' 'libayatana-appindicator3\.so\.1\(\)\(64bit\)'; then
  ok "the .rpm is package $PKG and requires $requires"
else
  fail "the .rpm: name '$name', requires '$requires'"
fi
# The same desktop entry in the .rpm, valid too.
rpm2archive - <"$rpm" 2>>"$out/rpm.err" | tar -xzO ./usr/share/applications/lf-tray.desktop \
  >"$out/rpm-lf-tray.desktop" 2>>"$out/rpm.err" || true
if [ -s "$out/rpm-lf-tray.desktop" ] && cmp -s "$out/rpm-lf-tray.desktop" "$out/lf-tray.desktop"; then
  ok "the .rpm's lf-tray.desktop is the .deb's"
else
  fail "the .rpm's lf-tray.desktop differs from the .deb's or is missing (see $out/rpm.err)"
fi

echo "packages block: $(elapsed $(($(now) - t0)))"
[ "$failed" -eq 0 ]
