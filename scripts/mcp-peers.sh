#!/usr/bin/env bash
# Installs the real MCP peers that crates/signet-mcp's integration tests drive:
#
#   * Python `mcp` (the official SDK) in a venv, to run scripts/mcp/python_server.py and
#     scripts/mcp/python_client.py;
#   * the npm servers @modelcontextprotocol/server-everything, server-filesystem and server-memory.
#
# Everything goes under ${SIGNET_CACHE:-$HOME/.cache/signet}/mcp, in directories named after the
# pinned versions, so a second run only checks that the installs are there (well under a second)
# and bumping a pin installs the new version beside the old one. A run that was interrupted leaves
# no stamp and is redone. Needs python3 (3.10+, with venv and pip), node (18+) and npm.
#
# At the end it writes ${SIGNET_CACHE:-$HOME/.cache/signet}/mcp/peers.env, which the tests read
# (override with SIGNET_MCP_PEERS=/path/to/peers.env):
#   SIGNET_MCP_PYTHON=<venv python>   SIGNET_MCP_NODE_MODULES=<node_modules with the servers>
#   SIGNET_MCP_NODE=<node>
set -euo pipefail

PY_MCP_VERSION="2.3.0"
NPM_SERVERS_VERSION="2026.8.31"
NPM_PACKAGES=(
  "@modelcontextprotocol/server-everything@${NPM_SERVERS_VERSION}"
  "@modelcontextprotocol/server-filesystem@${NPM_SERVERS_VERSION}"
  "@modelcontextprotocol/server-memory@${NPM_SERVERS_VERSION}"
)

ROOT="${SIGNET_CACHE:-$HOME/.cache/signet}/mcp"
PY_DIR="$ROOT/python-mcp-${PY_MCP_VERSION}"
NPM_DIR="$ROOT/npm-servers-${NPM_SERVERS_VERSION}"
mkdir -p "$ROOT"

say() { echo "mcp-peers: $*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || { say "error: '$1' is not installed ($2)"; exit 1; }; }
need python3 "Python 3.10+ with venv and pip"
need node "Node.js 18+"
need npm "npm, which comes with Node.js"

# One install at a time (tests or CI jobs may start together).
exec 9>"$ROOT/install.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

started=$(date +%s)

# --- Python `mcp` in a venv -------------------------------------------------------------------
if [[ -f "$PY_DIR/.installed" ]] && "$PY_DIR/venv/bin/python" -c "import mcp" 2>/dev/null; then
  say "python mcp ${PY_MCP_VERSION}: cached in $PY_DIR"
else
  say "python mcp ${PY_MCP_VERSION}: installing into $PY_DIR"
  rm -rf "$PY_DIR"
  python3 -m venv "$PY_DIR/venv"
  "$PY_DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "mcp==${PY_MCP_VERSION}"
  "$PY_DIR/venv/bin/python" -c "import mcp, importlib.metadata as m; print('mcp', m.version('mcp'))" >&2
  touch "$PY_DIR/.installed"
fi

# --- npm servers ------------------------------------------------------------------------------
if [[ -f "$NPM_DIR/.installed" ]] \
   && [[ -f "$NPM_DIR/node_modules/@modelcontextprotocol/server-everything/package.json" ]] \
   && [[ -f "$NPM_DIR/node_modules/@modelcontextprotocol/server-filesystem/package.json" ]] \
   && [[ -f "$NPM_DIR/node_modules/@modelcontextprotocol/server-memory/package.json" ]]; then
  say "npm servers ${NPM_SERVERS_VERSION}: cached in $NPM_DIR"
else
  say "npm servers ${NPM_SERVERS_VERSION}: installing into $NPM_DIR"
  rm -rf "$NPM_DIR"
  mkdir -p "$NPM_DIR"
  # A package.json of our own keeps npm from walking up to a parent project.
  echo '{"name": "signet-mcp-peers", "private": true}' >"$NPM_DIR/package.json"
  npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error --save-exact \
    "${NPM_PACKAGES[@]}" >&2
  touch "$NPM_DIR/.installed"
fi

cat >"$ROOT/peers.env.tmp" <<EOF
SIGNET_MCP_PYTHON=$PY_DIR/venv/bin/python
SIGNET_MCP_NODE_MODULES=$NPM_DIR/node_modules
SIGNET_MCP_NODE=$(command -v node)
EOF
mv "$ROOT/peers.env.tmp" "$ROOT/peers.env"
say "ready in $(( $(date +%s) - started ))s; peers listed in $ROOT/peers.env"
