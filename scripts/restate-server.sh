#!/usr/bin/env bash
# Installs the Restate server that crates/signet-restate's tests and examples/restate_agent.rs
# start: the npm package @restatedev/restate-server (a linux-x64 binary inside), pinned, under
# ${SIGNET_CACHE:-$HOME/.cache/signet}/restate/server-<version>. A second run only checks that
# the install is there. Needs node and npm.
set -euo pipefail

VERSION="1.7.12"
ROOT="${SIGNET_CACHE:-$HOME/.cache/signet}/restate"
DIR="$ROOT/server-$VERSION"
BIN="$DIR/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"

say() { echo "restate-server: $*" >&2; }
command -v npm >/dev/null 2>&1 || { say "error: npm is not installed (it comes with Node.js)"; exit 1; }
mkdir -p "$ROOT"
exec 9>"$ROOT/install.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

if [[ -f "$DIR/.installed" && -x "$BIN" ]]; then
  say "$VERSION: cached in $DIR"
else
  say "$VERSION: installing into $DIR"
  rm -rf "$DIR"
  mkdir -p "$DIR"
  (cd "$DIR" && npm install --silent --no-audit --no-fund "@restatedev/restate-server@$VERSION" >/dev/null)
  "$BIN" --version >/dev/null
  touch "$DIR/.installed"
fi
say "$("$BIN" --version)"
