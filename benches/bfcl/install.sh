#!/usr/bin/env bash
# Installs BFCL's data and checker (the PyPI package bfcl-eval, Apache-2.0, pinned) in a venv, for
# benches/bfcl/bfcl.py.
#
# Only the data and the AST checker are used, so the package goes in with --no-deps (its full
# dependency set pulls torch and a dozen provider SDKs). The one dependency the code we import
# needs is filelock (bfcl_eval.utils: BFCL's dataset loaders and its relevance rule); bfcl-eval pins
# 3.20.0, we take 3.20.3, the same API with the CVE-2025-68146 fix.
#
# The venv goes to ${SIGNET_CACHE:-$HOME/.cache/signet}/bfcl-<version>/venv. A second run only
# checks that the install is there and importable (well under a second); an interrupted run leaves
# no stamp and is redone from scratch. Needs python3 (3.10+, with venv and pip).
#
# Prints the venv's python on stdout (everything else goes to stderr), so callers can do
#   PY=$(bash benches/bfcl/install.sh)
set -euo pipefail

BFCL_VERSION="2026.3.23"
FILELOCK_VERSION="3.20.3"
ROOT="${SIGNET_CACHE:-$HOME/.cache/signet}"
DIR="$ROOT/bfcl-${BFCL_VERSION}"
PY="$DIR/venv/bin/python"
CHECK="import bfcl_eval.eval_checker.ast_eval, filelock, importlib.resources as r; \
assert r.files('bfcl_eval').joinpath('data/BFCL_v4_simple_python.json').is_file()"

say() { echo "install-bfcl: $*" >&2; }
command -v python3 >/dev/null 2>&1 || { say "error: python3 (3.10+, with venv and pip) is not installed"; exit 1; }

mkdir -p "$ROOT"
# One install at a time (two runs may start together).
exec 9>"$ROOT/bfcl-install.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

if [[ -f "$DIR/.installed" ]] && "$PY" -c "$CHECK" 2>/dev/null; then
  say "bfcl-eval ${BFCL_VERSION}: cached in $DIR"
else
  say "bfcl-eval ${BFCL_VERSION}: installing into $DIR (data + checker only, --no-deps)"
  started=$(date +%s)
  rm -rf "$DIR"
  python3 -m venv "$DIR/venv"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps \
    "bfcl-eval==${BFCL_VERSION}" "filelock==${FILELOCK_VERSION}" >&2
  "$PY" -c "$CHECK"
  "$PY" -c "import importlib.metadata as m; print('bfcl-eval', m.version('bfcl-eval'))" >&2
  touch "$DIR/.installed"
  say "installed in $(( $(date +%s) - started ))s"
fi
echo "$PY"
