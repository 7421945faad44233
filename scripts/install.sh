#!/usr/bin/env bash
# Installs koas and its reviewer kernels under a prefix.
#
#   scripts/install.sh [PREFIX]        PREFIX defaults to ~/.local
#
# Builds in release (cargo build --release: the koas binary and every
# kernel plugin in kernels/), then lays out
#
#   PREFIX/bin/koas
#   PREFIX/lib/koas/kernels/libkoas_kernel_*.so   (.dylib on macOS)
#   PREFIX/share/koas/prompts/*.tera              (prompt templates)
#
# An installed koas finds its kernels in <exe dir>/../lib/koas/kernels and
# its prompts in <exe dir>/../share/koas/prompts; nothing else is needed.
# Put PREFIX/bin on your PATH. Run it again to upgrade (files are replaced;
# kernels no longer built are removed from PREFIX/lib/koas/kernels).
set -euo pipefail

PREFIX="${1:-$HOME/.local}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac

case "$(uname -s)" in
    Darwin) PREFIX_LIB="lib" SUFFIX="dylib" EXE="" ;;
    MINGW* | MSYS* | CYGWIN*) PREFIX_LIB="" SUFFIX="dll" EXE=".exe" ;;
    *) PREFIX_LIB="lib" SUFFIX="so" EXE="" ;;
esac

# Every kernel package: kernels/<name> is the package koas-kernel-<name
# with - for _>.
packages=(-p koas)
kernels=()
for dir in "$ROOT"/kernels/*/; do
    name="$(basename "$dir")"
    packages+=(-p "koas-kernel-${name//_/-}")
    kernels+=("$name")
done

echo "install: building koas and ${#kernels[@]} kernels in release" >&2
(cd "$ROOT" && cargo build --release "${packages[@]}")

mkdir -p "$PREFIX/bin" "$PREFIX/lib/koas/kernels" "$PREFIX/share/koas/prompts"
# Replace through a temporary name: a running koas keeps its old inode.
install -m 0755 "$TARGET_DIR/release/koas$EXE" "$PREFIX/bin/.koas$EXE.new"
mv -f "$PREFIX/bin/.koas$EXE.new" "$PREFIX/bin/koas$EXE"

rm -f "$PREFIX/lib/koas/kernels/${PREFIX_LIB}koas_kernel_"*".$SUFFIX"
for name in "${kernels[@]}"; do
    lib="${PREFIX_LIB}koas_kernel_${name}.${SUFFIX}"
    install -m 0755 "$TARGET_DIR/release/$lib" "$PREFIX/lib/koas/kernels/$lib"
done
cp "$ROOT"/prompts/*.tera "$PREFIX/share/koas/prompts/"

echo "install: $PREFIX/bin/koas" >&2
echo "install: ${#kernels[@]} kernels in $PREFIX/lib/koas/kernels" >&2
"$PREFIX/bin/koas$EXE" kernels >/dev/null || {
    echo "install: $PREFIX/bin/koas finds no kernel; see the messages above" >&2
    exit 1
}
case ":$PATH:" in
    *":$PREFIX/bin:"*) ;;
    *) echo "install: add $PREFIX/bin to your PATH" >&2 ;;
esac
