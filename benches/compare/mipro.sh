#!/usr/bin/env bash
# MIPROv2's own overhead, Signet beside Python DSPy 3.4.1 (+ optuna 5.0.0), in one run: two of the
# recorded MIPROv2 runs tests/optimize/mipro.rs replays (one predictor; 5 trials on minibatches of
# 4, and 40 trials on minibatches of 8 with TPE sampling), zero-latency scripted task and prompt
# LMs, one example at a time. Each side compiles from scratch again and again and reports the median
# run; both check every run reaches the same evaluations, metric calls and best score.
#
#   benches/compare/mipro.sh                     # about 20 s once DSPy is installed and Signet built
#   BENCH_SECONDS=10 benches/compare/mipro.sh    # longer samples
#
# Installs DSPy on first use (benches/compare/install-dspy.sh, cached under
# ${SIGNET_CACHE:-$HOME/.cache/signet}) and optuna into its venv.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=$(benches/compare/install-dspy.sh)
# MIPROv2 needs optuna, an optional dependency of DSPy (`dspy[optuna]`); pinned to the version the
# recorded runs used.
"$PY" -c "import optuna" 2>/dev/null || "$PY" -m pip install --quiet --disable-pip-version-check "optuna==5.0.0" >&2
seconds="${BENCH_SECONDS:-3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "building and timing Signet (cargo bench --bench mipro_overhead) ..." >&2
cargo bench --quiet --bench mipro_overhead -- --seconds "$seconds" | tee "$tmp/signet.jsonl"
echo "timing DSPy ..." >&2
(cd benches/compare && "$PY" dspy_mipro.py --signet "$tmp/signet.jsonl" --seconds "$seconds")
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
