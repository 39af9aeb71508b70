#!/usr/bin/env bash
# GEPA's own overhead, Signet beside Python DSPy 3.4.1, in one run: DSPy's reference GEPA run of
# tests/optimize/gepa.rs (two predictors, 8 train + 8 validation examples, per-predictor feedback)
# with zero-latency scripted task and reflection LMs, one example at a time, at budget 150 and at
# budget 300 (with merges). Each side compiles from scratch again and again and reports the median
# run; both check every run reaches the same candidates, parents and metric calls.
#
#   benches/compare/gepa.sh                     # about 25 s once DSPy is installed and Signet built
#   BENCH_SECONDS=10 benches/compare/gepa.sh    # longer samples
#
# Installs DSPy on first use (benches/compare/install-dspy.sh, cached under
# ${SIGNET_CACHE:-$HOME/.cache/signet}).
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=$(benches/compare/install-dspy.sh)
seconds="${BENCH_SECONDS:-3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "building and timing Signet (cargo bench --bench gepa_overhead) ..." >&2
cargo bench --quiet --bench gepa_overhead -- --seconds "$seconds" | tee "$tmp/signet.jsonl"
echo "timing DSPy ..." >&2
(cd benches/compare && "$PY" dspy_gepa.py --signet "$tmp/signet.jsonl" --seconds "$seconds")
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
