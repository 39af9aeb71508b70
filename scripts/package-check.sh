#!/usr/bin/env bash
# Every published crate as a user of crates.io would get it, checked on its own.
#
# 1. `cargo package --no-verify` packages the crates as `cargo publish` would:
#    manifest metadata, dependency versions, and the files each `.crate` holds.
# 2. Each packaged crate, unpacked, is type-checked alone (`cargo check -p <crate>`) against the
#    other packaged crates instead of the workspace's sources: only its own dependencies and
#    features are built, so a feature another member turns on in the workspace cannot hide a
#    missing one, and a file left out of the package (an `include_str!` of it) fails here.
#
# This is what `cargo publish --dry-run` verifies by building each crate, in check mode instead
# of a full build: on 2 cores, 279 s from an empty target directory where `.ci/run` spent 445 s
# in those verify builds.
#
#   bash scripts/package-check.sh        # target/package-check/ holds the unpacked crates
set -euo pipefail
cd "$(dirname "$0")/.."

# The published crates (every member without `publish = false`) and their versions, read from the
# manifests, so that a new crate is checked without touching this script.
crates=() versions=()
while read -r name version; do
  crates+=("$name") versions+=("$version")
done < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["publish"] is None:
        print(p["name"], p["version"])')
target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
out="$target/package-check"
rm -rf "$target/package" "$out"
mkdir -p "$out"

cargo package --no-verify --allow-dirty $(printf -- "-p %s " "${crates[@]}")

members="" patches=""
for i in "${!crates[@]}"; do
  package="${crates[$i]}-${versions[$i]}"
  tar -xzf "$target/package/$package.crate" -C "$out"
  members+="\"$package\", "
  patches+="${crates[$i]} = { path = \"$package\" }"$'\n'
done

# A workspace of the unpacked crates; [patch] points each `signet* = "<version>"` dependency at
# its unpacked sibling (they are not on crates.io). The workspace's lock file keeps the versions.
cat > "$out/Cargo.toml" <<EOF
[workspace]
resolver = "3"
members = [${members%, }]

[patch.crates-io]
$patches
EOF
cp Cargo.lock "$out/Cargo.lock"

for crate in "${crates[@]}"; do
  echo "package-check: cargo check -p $crate (as packaged)" >&2
  # The workspace's target directory: dependencies checked there with the same features are reused.
  (cd "$out" && CARGO_TARGET_DIR="$target" cargo check -p "$crate" --quiet)
done
echo "package-check: ${#crates[@]} crates package and check on their own" >&2
