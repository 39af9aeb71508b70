#!/usr/bin/env bash
# Framework overhead, Signet beside Python DSPy 3.4.1, in one run: the same Predict call and the same
# ReAct run (2 tool steps + finish + extract), with zero-latency in-process LMs on both sides, timed
# the same way. Checks that both send the same prompts, then prints the table and the ratios.
#
#   benches/compare/overhead.sh            # about a minute once DSPy is installed and Signet built
#   BENCH_SECONDS=5 BENCH_JSON=/tmp/overhead.json benches/compare/overhead.sh   # longer; keep the figures
#
# Installs DSPy on first use (benches/compare/install-dspy.sh, cached under
# ${SIGNET_CACHE:-$HOME/.cache/signet}). Figures are per run, median of samples of about 50 ms.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=$(benches/compare/install-dspy.sh)
seconds="${BENCH_SECONDS:-3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "building and timing Signet (cargo bench --bench compare) ..." >&2
cargo bench --quiet --bench compare -- --prompts "$tmp/prompts.json" --seconds "$seconds" >"$tmp/signet.jsonl"
echo "timing DSPy ..." >&2
(cd benches/compare && "$PY" dspy_overhead.py --signet "$tmp/signet.jsonl" --prompts "$tmp/prompts.json" \
  --seconds "$seconds" ${BENCH_JSON:+--json "$BENCH_JSON"})
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
