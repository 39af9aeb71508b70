#!/usr/bin/env bash
# Concurrency, Signet beside Python DSPy 3.4.1: N ReAct runs at once against a local mock
# OpenAI-compatible server that takes 50 ms per completion (4 completions per run).
# Signet: N = 1, 100, 1,000 and 10,000 on one tokio runtime. DSPy: ReAct.batch(num_threads=N) for
# N = 100 and 1,000 on the same server. Prints the tables (wall time against the latency floor,
# peak memory per run, client CPU, errors).
#
#   benches/compare/concurrency.sh                 # a few minutes; DSPy at N = 1,000 takes the most
#   benches/compare/concurrency.sh --n 1,100 --dspy-n 100   # any option of benches/concurrency/main.rs
#
# Installs DSPy on first use (benches/compare/install-dspy.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=$(benches/compare/install-dspy.sh)
# One socket per concurrent run on the client side (the server runs in its own process): raise the
# open-files limit as far as allowed. The bench raises its own soft limit too.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "building (cargo bench --bench concurrency) ..." >&2
cargo bench --quiet --bench concurrency -- --dspy "$PY" "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
