#!/usr/bin/env bash
# Builds the koas wheel: the binary, every kernel plugin and the prompts.
#
#   scripts/build-wheel.sh [PROFILE] [-- MATURIN ARGS...]
#   scripts/build-wheel.sh [PROFILE] --stage-only
#
# PROFILE is a cargo profile (release, the default; dev for a quick test
# build). --stage-only builds and stages the kernels and prompts and stops
# (for a builder that runs maturin itself, as the release workflow does). The kernels are built with cargo and staged under
# target/wheel-data/data/ (lib/koas/kernels, share/koas/prompts), which
# maturin puts in the wheel's .data folder: pip installs it under the
# environment's prefix, beside bin/koas, where koas looks. The wheel goes
# to target/wheels/ (or where MATURIN ARGS say, e.g. --out dist).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PROFILE="${1:-release}"
shift || true
STAGE_ONLY=
case "${1:-}" in
    --) shift ;;
    --stage-only) STAGE_ONLY=1; shift ;;
esac
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
case "$PROFILE" in dev) OUT_DIR=debug ;; *) OUT_DIR="$PROFILE" ;; esac
# A cross build (CARGO_BUILD_TARGET set, as in cross containers) puts its
# libraries under the target triple.
if [ -n "${CARGO_BUILD_TARGET:-}" ]; then
    OUT_DIR="$CARGO_BUILD_TARGET/$OUT_DIR"
fi
case "$(uname -s)" in
    Darwin) PREFIX_LIB="lib" SUFFIX="dylib" ;;
    *) PREFIX_LIB="lib" SUFFIX="so" ;;
esac
packages=()
kernels=()
for dir in "$ROOT"/kernels/*/; do
    name="$(basename "$dir")"
    packages+=(-p "koas-kernel-${name//_/-}")
    kernels+=("$name")
done
echo "build-wheel: building ${#kernels[@]} kernels ($PROFILE)" >&2
(cd "$ROOT" && cargo build --profile "$PROFILE" "${packages[@]}")
data="$ROOT/target/wheel-data/data"
rm -rf "$ROOT/target/wheel-data"
mkdir -p "$data/lib/koas/kernels" "$data/share/koas/prompts" "$data/share/koas/licenses"
for name in "${kernels[@]}"; do
    lib="${PREFIX_LIB}koas_kernel_${name}.${SUFFIX}"
    install -m 0755 "$TARGET_DIR/$OUT_DIR/$lib" "$data/lib/koas/kernels/$lib"
done
cp "$ROOT"/prompts/*.tera "$data/share/koas/prompts/"
# The dictionaries the binary embeds come with their licences.
cp "$ROOT/crates/lang/dict/fr/LICENSE" "$data/share/koas/licenses/french-dictionary-MPL-2.0.txt"
cp "$ROOT/crates/lang/dict/fr/README.md" "$data/share/koas/licenses/french-dictionary-README.md"
cp "$ROOT/crates/lang/dict/en/README.md" "$data/share/koas/licenses/english-word-list-README.md"
if [ -n "$STAGE_ONLY" ]; then
    echo "build-wheel: staged in $ROOT/target/wheel-data" >&2
    exit 0
fi
echo "build-wheel: the koas binary and the wheel (maturin)" >&2
(cd "$ROOT" && maturin build --profile "$PROFILE" "$@")
