#!/usr/bin/env bash
# The README's main command with and without the prompt cache kept between servers
# (signet_local::LlamaCpp::prompt_cache), run in turn: N pairs, one run of each per pair.
#
#   bash benches/local/prompt_cache.sh [N]      (default 5)
#
# Prints, for each run, the example's own "done in" (from a ready server to the answer), the
# process's wall time (server start and stop included) and its answer; then the medians and
# their ratios. Uses the cache the example uses (SIGNET_CACHE, else ~/.cache/signet): the first
# run installs the model if needed and saves the prompt the measured runs restore.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-5}
cargo build -q --example react_agent
bin=target/debug/examples/react_agent
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" >/dev/null 2>&1 # installs if needed; saves this question's prompt
run() { # mode -> "answer_s wall_s answer"
  local start end out
  start=$(date +%s.%N)
  out=$(SIGNET_PROMPT_CACHE=$1 "$bin" 2>&1)
  end=$(date +%s.%N)
  local answer_s
  answer_s=$(grep -o 'done in [0-9.]* s' <<<"$out" | grep -o '[0-9.]*' | head -1)
  echo "$answer_s $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}') $(grep -o 'answer (typed TravelOutput): .*' <<<"$out" | cut -d: -f2- | xargs)"
}
declare -a on_answer on_wall off_answer off_wall
for i in $(seq 1 "$n"); do
  read -r a w text <<<"$(run off)"
  off_answer+=("$a"); off_wall+=("$w")
  printf 'pair %d  off: %5.1f s to the answer, %5.2f s in all  (%s)\n' "$i" "$a" "$w" "$text"
  read -r a w text <<<"$(run on)"
  on_answer+=("$a"); on_wall+=("$w")
  printf 'pair %d  on:  %5.1f s to the answer, %5.2f s in all  (%s)\n' "$i" "$a" "$w" "$text"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
ma_off=$(median "${off_answer[@]}"); ma_on=$(median "${on_answer[@]}")
mw_off=$(median "${off_wall[@]}"); mw_on=$(median "${on_wall[@]}")
echo
echo "| median of $n | prompt cache off | on | on / off |"
echo "|---|---:|---:|---:|"
printf '| from a ready server to the answer | %.1f s | %.1f s | %s |\n' "$ma_off" "$ma_on" "$(ratio "$ma_on" "$ma_off")"
printf '| the whole command (server start and stop included) | %.2f s | %.2f s | %s |\n' "$mw_off" "$mw_on" "$(ratio "$mw_on" "$mw_off")"
