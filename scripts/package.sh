#!/usr/bin/env bash
# Build Loopflow Tray's Linux packages, a .deb and an .rpm, with Tauri's own bundler
# (`tauri build`, npm's prebuilt CLI), from the product build (default features, no
# `demo`), and print each package's path on its own line. Everything else goes to stderr.
#
# No AppImage: Tauri's AppImage bundler downloads linuxdeploy and its plugins at build time,
# which machines without general internet access cannot do (README, "Package").
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. scripts/deps.sh
install_packages "${BUILD_PACKAGES[@]}" "${PACKAGE_PACKAGES[@]}"

CACHE=${LF_TRAY_CACHE:-$HOME/.cache/lf-tray}
mkdir -p "$CACHE"
export PATH="$CACHE/bin:$PATH"
# The Tauri CLI 2.x, prebuilt: npm's @tauri-apps/cli brings the platform's binary (its
# optional dependency @tauri-apps/cli-linux-x64-gnu), in about 2 s, where compiling
# tauri-cli from crates.io took about 10 minutes on a 2-core machine. Into the cache like
# tauri-driver; `^2` keeps a 3.x out, and the version it says is checked all the same.
tauri_cli=$CACHE/tauri-cli
tauri=$tauri_cli/node_modules/.bin/tauri
if ! "$tauri" --version 2>/dev/null | grep -q '^tauri-cli 2\.'; then
  # The machine's own Node.js where there is one (a second npm from Debian would fight it).
  command -v npm >/dev/null || install_packages nodejs npm
  echo "Installing the Tauri CLI 2.x (npm's @tauri-apps/cli) into $tauri_cli" >&2
  npm install --prefix "$tauri_cli" --no-audit --no-fund --loglevel=error '@tauri-apps/cli@^2' >&2
  if ! "$tauri" --version 2>/dev/null | grep -q '^tauri-cli 2\.'; then
    echo "package.sh: $tauri is not a Tauri CLI 2.x (it says: $("$tauri" --version 2>&1))" >&2
    exit 1
  fi
fi

# The release target goes wherever cargo puts it (CARGO_TARGET_DIR included); the bundles
# land under it.
target=$(cargo metadata --locked --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bundle_dir=$target/release/bundle
work=$target/lf-tray-package
mkdir -p "$work/icons"

# Sizes of the hicolor theme that icons/ lacks (it has 32, 128 and 256, the ones
# tauri.conf.json lists): drawn once for their size and kept until draw.py changes.
extra_sizes=(16 22 24 48 64)
for size in "${extra_sizes[@]}"; do
  icon=$work/icons/${size}x${size}.png
  if [ ! -s "$icon" ] || [ icons/draw.py -nt "$icon" ]; then
    python3 icons/draw.py --app-icons "$work/icons" "${extra_sizes[@]}"
    break
  fi
done

# tauri-cli reads tauri.conf.json from the crate it builds (src-tauri) and takes its paths
# relative to that directory, while this project keeps the one config at the top level,
# where src-tauri/build.rs reads it for the binary. So the CLI gets a copy, written here
# and removed on exit, with paths made absolute. It never reaches the binary: build.rs and
# generate_context! name ../tauri.conf.json, and the CLI passes a config to cargo only for
# --config, which is not used.
cli_conf=src-tauri/tauri.conf.json
if git ls-files --error-unmatch "$cli_conf" >/dev/null 2>&1; then
  echo "package.sh: $cli_conf is tracked; this script would overwrite it (see the comment above)" >&2
  exit 1
fi
trap 'rm -f "$root/$cli_conf"' EXIT
python3 - "$root" "$work/icons" "${extra_sizes[@]}" >"$cli_conf" <<'PY'
import json, os, sys

root, icon_dir, sizes = sys.argv[1], sys.argv[2], sys.argv[3:]


def merge(doc, patch):
    # JSON merge patch (RFC 7396), as tauri applies tauri.<platform>.conf.json.
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            merge(doc[key], value)
        elif value is None:
            doc.pop(key, None)
        else:
            doc[key] = value


with open(os.path.join(root, "tauri.conf.json")) as f:
    conf = json.load(f)
platform = os.path.join(root, "tauri.linux.conf.json")
if os.path.exists(platform):
    with open(platform) as f:
        merge(conf, json.load(f))


def here(path):
    return os.path.join(root, path)


conf["build"]["frontendDist"] = here(conf["build"]["frontendDist"])
bundle = conf["bundle"]
bundle["icon"] = [here(p) for p in bundle["icon"]] + [
    os.path.join(icon_dir, f"{s}x{s}.png") for s in sizes]
for kind in ("deb", "rpm"):
    linux = bundle.get("linux", {}).get(kind, {})
    for key in ("desktopTemplate", "changelog", "preInstallScript", "postInstallScript",
                "preRemoveScript", "postRemoveScript"):
        if key in linux:
            linux[key] = here(linux[key])
    if "files" in linux:
        linux["files"] = {dest: here(src) for dest, src in linux["files"].items()}
# The bundler names the package (apt-get remove lf-tray), its file and the desktop entry
# (lf-tray.desktop, which the popups' desktop-entry hint names) after productName. The
# name people see, "Loopflow Tray", is the entry's Name= (packaging/lf-tray.desktop) and
# stays the binary's productName.
conf["productName"] = conf["mainBinaryName"]
json.dump(conf, sys.stdout, indent=2)
PY

# Stale packages of another version would otherwise be printed too.
rm -f "$bundle_dir"/deb/*.deb "$bundle_dir"/rpm/*.rpm
# --ci: no prompts; cargo's own arguments follow `--`.
(cd src-tauri && "$tauri" build --ci --bundles deb,rpm -- --locked) >&2

shopt -s nullglob
packages=("$bundle_dir"/deb/*.deb "$bundle_dir"/rpm/*.rpm)
if [ ${#packages[@]} -ne 2 ]; then
  echo "package.sh: expected one .deb and one .rpm under $bundle_dir, found: ${packages[*]:-none}" >&2
  exit 1
fi
printf '%s\n' "${packages[@]}"
