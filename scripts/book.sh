#!/usr/bin/env bash
# Builds the user guide (docs/, with docs/SUMMARY.md as its table of contents) as an mdBook into
# target/book, then checks every internal link of the built HTML offline (scripts/check_links.py:
# each relative href/src names a file, each #anchor an id of that page; external links are not
# fetched).
#
# mdbook is pinned and installed once with cargo into
# ${SIGNET_CACHE:-$HOME/.cache/signet}/mdbook-<version> (only the `search` feature: no `serve`
# or `watch`); later runs find it there and skip the install. Needs cargo and python3.
#
#   bash scripts/book.sh                          # build and check
#   open target/book/index.html                   # read it
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION="0.5.4"
ROOT="${SIGNET_CACHE:-$HOME/.cache/signet}/mdbook-${MDBOOK_VERSION}"
MDBOOK="$ROOT/bin/mdbook"

say() { echo "book: $*" >&2; }
command -v cargo >/dev/null 2>&1 || { say "error: cargo is not installed"; exit 1; }
command -v python3 >/dev/null 2>&1 || { say "error: python3 is not installed"; exit 1; }

if [ -x "$MDBOOK" ] && "$MDBOOK" --version 2>/dev/null | grep -qF "v${MDBOOK_VERSION}"; then
  say "mdbook ${MDBOOK_VERSION} found in $ROOT"
else
  say "installing mdbook ${MDBOOK_VERSION} into $ROOT (cargo install --locked: about 80 s on 2 cores, once)"
  started=$(date +%s)
  mkdir -p "$ROOT"
  # One install at a time (CI jobs or two shells may start together).
  exec 9>"$ROOT/install.lock"
  if command -v flock >/dev/null 2>&1; then flock 9; fi
  if ! { [ -x "$MDBOOK" ] && "$MDBOOK" --version 2>/dev/null | grep -qF "v${MDBOOK_VERSION}"; }; then
    cargo install mdbook --version "${MDBOOK_VERSION}" --locked \
      --no-default-features --features search --root "$ROOT"
  fi
  say "mdbook ${MDBOOK_VERSION} installed in $(( $(date +%s) - started )) s"
fi

say "building the book (book.toml: docs/ -> target/book)"
rm -rf target/book
"$MDBOOK" build
[ -f target/book/index.html ] || { say "error: mdbook wrote no target/book/index.html"; exit 1; }

say "checking the built book's internal links (offline)"
python3 scripts/check_links.py target/book
say "done: target/book/index.html"
