#!/usr/bin/env bash
# Today's desktops beside Debian 12's: Go to terminal on KWin 6.3 and GNOME Shell 48
# (Debian 13, trixie), each through focus-wayland.sh, and GNOME 48's and Plasma 6.3's
# popups with a question's and a plan's buttons clicked (gnome.sh, plasma.sh; Plasma's
# tray too), run inside a minbase chroot with the app built here (it runs there
# unchanged: ../shared desktop-testing.md §13).
#
#   tests/e2e/debian13.sh APP_BINARY
#
# The chroot is kept under ${LF_TRAY_CACHE:-$HOME/.cache/lf-tray}/debian13 and built again
# when absent or stale (DEBIAN13_PACKAGES in scripts/deps.sh or the recipe here changed, or
# older than DEBIAN13_MAX_AGE_DAYS, default 30: security updates). Needs root (chroot,
# mount). The checkout and the app's directory are bound read-only at their own paths,
# the outputs directory read-write; every mount is undone however the script ends.
#
# Environment (all optional):
#   E2E_OUT   where the suites' outputs go (default: ci-out/debian13; a directory per suite)
#   E2E_ONLY, E2E_KEEP  passed to focus-wayland.sh (a regex of checks to run; keep its files)
#
# Ends with focus-wayland.sh's two result lines (e2e-focus-kwin / -gnome: N passed, M
# failed), gnome.sh's (e2e-gnome) and plasma.sh's (e2e-plasma) and exits non-zero if any
# failed or the chroot could not be made.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/scripts/deps.sh"
name=e2e-debian13
give_up() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }

[ $# -eq 1 ] || { echo "usage: $0 APP_BINARY" >&2; exit 2; }
app=$(realpath -e "$1" 2>/dev/null) || give_up "no app binary at $1"
[ "$(id -u)" -eq 0 ] || give_up "needs root (debootstrap, chroot, mount)"
install_packages "${DEBIAN13_HOST_PACKAGES[@]}" || give_up "could not install ${DEBIAN13_HOST_PACKAGES[*]}"
cache=${LF_TRAY_CACHE:-$HOME/.cache/lf-tray}
root=$cache/debian13
out=${E2E_OUT:-ci-out/debian13}
mkdir -p "$out" "$cache" && out=$(cd "$out" && pwd)

# What the chroot was made from: a change to either makes it again.
recipe="minbase trixie; ${DEBIAN13_PACKAGES[*]}"
want=$(printf '%s\n' "$recipe" | sha256sum | cut -c1-16)

# Mounts, undone newest first however the script ends; a lazy unmount for one still busy
# (a process the suite left would otherwise keep the checkout bound into the cache).
mounts=()
undo_mounts() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" ||
      echo "$name: could not unmount ${mounts[i]}" >&2
  done
  mounts=()
}
trap undo_mounts EXIT
trap 'exit 130' INT TERM
mount_at() { # mount_at DIR MOUNT-ARGS...: mount at DIR and remember it
  local dir=$1
  shift
  mkdir -p "$dir" && mount "$@" "$dir" && mounts+=("$dir")
}
bind_ro() { # bind_ro PATH IN-ROOT: PATH at the same path inside, read-only
  mount_at "$2$1" --bind "$1" && mount -o remount,bind,ro "$2$1"
}
# The kernel's parts every program inside expects; /run and /dev/shm its own.
mount_system() {
  local r=$1
  mount_at "$r/proc" -t proc proc &&
    mount_at "$r/sys" -t sysfs sysfs &&
    mount_at "$r/dev" --bind /dev &&
    mount_at "$r/dev/pts" --bind /dev/pts &&
    mount_at "$r/dev/shm" -t tmpfs tmpfs &&
    mount_at "$r/run" -t tmpfs tmpfs
}
# A directory is removed only with nothing mounted under it (a bound checkout would go
# with it), and never across file systems.
remove_tree() {
  if grep -q " $1[/ ]" /proc/mounts; then
    give_up "something is still mounted under $1; not removing it"
  fi
  rm -rf --one-file-system "$1"
}

stale=
if [ ! -f "$root/.lf-tray-recipe" ]; then
  stale="absent"
elif [ "$(cat "$root/.lf-tray-recipe")" != "$want" ]; then
  stale="its package list changed"
elif [ -n "$(find "$root/.lf-tray-recipe" -mtime +"${DEBIAN13_MAX_AGE_DAYS:-30}")" ]; then
  stale="older than ${DEBIAN13_MAX_AGE_DAYS:-30} days"
fi
if [ -n "$stale" ]; then
  t=$SECONDS
  echo "$name: making the Debian 13 chroot in $root ($stale)"
  mirror=$(sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  mirror=${mirror:-http://deb.debian.org/debian}
  new=$root.new
  remove_tree "$new"
  debootstrap --variant=minbase trixie "$new" "$mirror" >"$out/debootstrap.log" 2>&1 ||
    give_up "debootstrap failed (see $out/debootstrap.log)"
  cp /etc/resolv.conf "$new/etc/resolv.conf"
  mount_system "$new" || give_up "could not mount the system's parts in $new"
  chroot "$new" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" && apt-get clean' \
    sh "${DEBIAN13_PACKAGES[@]}" >"$out/apt.log" 2>&1 || give_up "apt-get in the chroot failed (see $out/apt.log)"
  undo_mounts
  echo "$want" >"$new/.lf-tray-recipe"
  remove_tree "$root"
  mv "$new" "$root"
  echo "$name: made in $((SECONDS - t)) s ($(du -sh --one-file-system "$root" | cut -f1))"
fi

cp /etc/resolv.conf "$root/etc/resolv.conf"
mount_system "$root" || give_up "could not mount the system's parts in $root"
bind_ro "$repo" "$root" || give_up "could not bind $repo"
app_dir=$(dirname "$app")
case "$app_dir/" in "$repo"/*) ;; *) bind_ro "$app_dir" "$root" || give_up "could not bind $app_dir" ;; esac
mount_at "$root$out" --bind "$out" || give_up "could not bind $out"

failed=0
for desktop in kwin gnome; do
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    E2E_OUT="$out/$desktop" ${E2E_ONLY:+E2E_ONLY="$E2E_ONLY"} ${E2E_KEEP:+E2E_KEEP=1} \
    bash "$repo/tests/e2e/focus-wayland.sh" "$desktop" "$app" || failed=1
done
# GNOME 48's and Plasma 6's popups: a question's options and a plan's answers as buttons,
# clicked; Plasma's system tray (kded6's watcher) with its menu's row clicked.
for suite in gnome plasma; do
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    E2E_OUT="$out/$suite-popups" PY=/usr/bin/python3 ${E2E_KEEP:+E2E_KEEP=1} \
    bash "$repo/tests/e2e/$suite.sh" "$app" || failed=1
done
exit "$failed"
