#!/usr/bin/env bash
# Starts every first-use install the tests need, side by side, in the background, and returns at
# once: the MCP peers (scripts/mcp-peers.sh), Arize Phoenix (scripts/phoenix.sh) and DSPy
# (benches/compare/install-dspy.sh). signet-local's `servers` test binary, among the first that
# `cargo test --workspace` runs, runs this, so the installs proceed while the tests before the ones
# that need them run; a test that finds one of them missing runs it too, then the installer it
# needs, which waits on that installer's lock for the background run and finds the install done.
# An install already in the cache costs its script a few milliseconds.
#
# Logs: ${SIGNET_CACHE:-$HOME/.cache/signet}/prefetch/<name>.log. SIGNET_PREFETCH=0 turns it off
# (each test then installs what it needs when it needs it).
set -euo pipefail
[[ "${SIGNET_PREFETCH:-1}" == "0" ]] && exit 0
root="$(cd "$(dirname "$0")/.." && pwd)"
logs="${SIGNET_CACHE:-$HOME/.cache/signet}/prefetch"
mkdir -p "$logs"
start() {
  local name=$1
  shift
  # Detached: it outlives the test binary that started it, and holds no pipe of cargo's.
  nohup setsid bash "$@" >"$logs/$name.log" 2>&1 </dev/null &
}
start mcp-peers "$root/scripts/mcp-peers.sh"
start phoenix "$root/scripts/phoenix.sh"
start dspy "$root/benches/compare/install-dspy.sh"
