#!/usr/bin/env bash
# Installs Python DSPy (pinned) in a venv, for the side-by-side benchmarks in benches/compare/.
#
# The venv goes to ${SIGNET_CACHE:-$HOME/.cache/signet}/dspy-<version>. A second run only checks
# that the install is there and importable (well under a second); an interrupted run leaves no
# stamp and is redone from scratch. Needs python3 (3.10+, with venv and pip).
#
# Prints the venv's python on stdout (everything else goes to stderr), so callers can do
#   PY=$(benches/compare/install-dspy.sh)
set -euo pipefail

DSPY_VERSION="3.4.1"
ROOT="${SIGNET_CACHE:-$HOME/.cache/signet}"
DIR="$ROOT/dspy-${DSPY_VERSION}"
PY="$DIR/venv/bin/python"

say() { echo "install-dspy: $*" >&2; }
command -v python3 >/dev/null 2>&1 || { say "error: python3 (3.10+, with venv and pip) is not installed"; exit 1; }

mkdir -p "$ROOT"
# One install at a time (two benchmark runs may start together).
exec 9>"$ROOT/dspy-install.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

if [[ -f "$DIR/.installed" ]] && "$PY" -c "import dspy" 2>/dev/null; then
  say "dspy ${DSPY_VERSION}: cached in $DIR"
else
  say "dspy ${DSPY_VERSION}: installing into $DIR (a minute or two)"
  started=$(date +%s)
  rm -rf "$DIR"
  python3 -m venv "$DIR/venv"
  "$PY" -m pip install --quiet --disable-pip-version-check "dspy==${DSPY_VERSION}" >&2
  "$PY" -c "import dspy, importlib.metadata as m; print('dspy', m.version('dspy'))" >&2
  touch "$DIR/.installed"
  say "installed in $(( $(date +%s) - started ))s"
fi
echo "$PY"
