#!/usr/bin/env bash
# Installs Arize Phoenix, the LLM tracing server that crates/signet-otel's integration tests export
# OpenTelemetry spans to and read back through its HTTP API (crates/signet-otel/tests/common).
#
# It goes into a venv under ${SIGNET_CACHE:-$HOME/.cache/signet}/phoenix, in a directory named
# after the pinned version, so a second run only checks that the install is there (well under a
# second) and bumping the pin installs the new version beside the old one. A run that was
# interrupted leaves no stamp and is redone. Needs python3 (3.11 to 3.14, as arize-phoenix requires,
# with venv and pip).
#
# Cold install, measured on a 2-CPU machine with an empty pip cache: 48 s (pip resolving and
# downloading ~150 packages from PyPI), 853 MB on disk. A warm run takes ~10 ms. The server then
# starts in ~8 s (fresh SQLite database) and holds ~450 MB of memory.
#
# At the end it writes ${SIGNET_CACHE:-$HOME/.cache/signet}/phoenix/phoenix.env, which the tests
# read (override with SIGNET_PHOENIX_ENV=/path/to/phoenix.env):
#   SIGNET_PHOENIX_BIN=<venv>/bin/phoenix   (started as `phoenix serve`)
set -euo pipefail

PHOENIX_VERSION="20.26.1"

ROOT="${SIGNET_CACHE:-$HOME/.cache/signet}/phoenix"
DIR="$ROOT/phoenix-${PHOENIX_VERSION}"
mkdir -p "$ROOT"

say() { echo "phoenix: $*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || { say "error: '$1' is not installed ($2)"; exit 1; }; }
need python3 "Python 3.11 to 3.14 with venv and pip"

# One install at a time (tests or CI jobs may start together).
exec 9>"$ROOT/install.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

started=$(date +%s)

if [[ -f "$DIR/.installed" ]] && [[ -x "$DIR/venv/bin/phoenix" ]]; then
  say "arize-phoenix ${PHOENIX_VERSION}: cached in $DIR"
else
  say "arize-phoenix ${PHOENIX_VERSION}: installing into $DIR (about a minute the first time)"
  python3 -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 15)))' || {
    say "error: arize-phoenix ${PHOENIX_VERSION} needs Python 3.11 to 3.14, python3 is $(python3 -V 2>&1)"
    exit 1
  }
  rm -rf "$DIR"
  python3 -m venv "$DIR/venv"
  "$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "arize-phoenix==${PHOENIX_VERSION}"
  "$DIR/venv/bin/python" -c \
    "import phoenix, importlib.metadata as m; print('arize-phoenix', m.version('arize-phoenix'))" >&2
  touch "$DIR/.installed"
fi

cat >"$ROOT/phoenix.env.tmp" <<ENV
SIGNET_PHOENIX_BIN=$DIR/venv/bin/phoenix
ENV
mv "$ROOT/phoenix.env.tmp" "$ROOT/phoenix.env"
say "ready in $(( $(date +%s) - started ))s; listed in $ROOT/phoenix.env"
