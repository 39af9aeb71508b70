#!/usr/bin/env bash
# Where the test command's time goes: builds every test binary of `cargo test --workspace`, runs
# each one as cargo would (one after another, in its package's folder), and prints the time of
# each binary, of the doctests, and the slowest tests.
#
#   bash scripts/test-times.sh            # the table; raw output in target/test-times/
#   bash scripts/test-times.sh --top 20   # the 20 slowest tests instead of 10
#
# Per-test times come from libtest's `--report-time`, an unstable flag that stable test binaries
# accept when RUSTC_BOOTSTRAP is set in their environment at run time. It is set only for the test
# binaries, never for cargo or rustc, so the build is the one `cargo test --workspace` makes (and
# the binaries whose tests run cargo themselves run one test at a time without it).
set -euo pipefail
cd "$(dirname "$0")/.."
top=10
if [ "${1:-}" = "--top" ]; then top=${2:?--top takes a number}; fi

out=target/test-times
rm -rf "$out"
mkdir -p "$out"

build_start=$(date +%s.%N)
cargo test --workspace --no-run --message-format=json-render-diagnostics > "$out/build.json"
build_end=$(date +%s.%N)

# One line per test binary: <executable> <package folder> <target name>.
python3 - "$out/build.json" > "$out/binaries.txt" <<'PY'
import json, os, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["profile"]["test"] and m.get("executable"):
        print(m["executable"], os.path.dirname(m["manifest_path"]), m["target"]["name"])
PY

cargo_bin=$(command -v cargo)
# Binaries whose tests run cargo (trybuild's UI tests, the guide's build): RUSTC_BOOTSTRAP would
# reach that cargo and change its build (proc-macro2 turns on nightly spans, which the UI
# snapshots do not have), so each of their tests runs on its own, timed from outside.
runs_cargo=" ui interop "
# As cargo runs them: in the package's folder, and with the toolchain's shared libraries on the
# library path (a proc-macro crate's test binary links libstd dynamically).
libs="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/lib"
run() {
  (cd "$dir" && CARGO="$cargo_bin" CARGO_MANIFEST_DIR="$dir" \
    LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@")
}
: > "$out/binaries.tsv"
status=0
while read -r exe dir name; do
  start=$(date +%s.%N)
  if [[ "$runs_cargo" == *" $name "* ]]; then
    : > "$out/$name.log"
    while read -r test; do
      test_start=$(date +%s.%N)
      if run "$exe" --exact "$test" >> "$out/$name.log" 2>&1; then result=ok; else result=FAILED; fi
      test_end=$(date +%s.%N)
      printf 'test %s ... %s <%.3fs>\n' "$test" "$result" "$(echo "$test_end - $test_start" | bc)" \
        >> "$out/$name.log"
      if [ "$result" != ok ]; then
        echo "FAILED: $name $test (see $out/$name.log)" >&2
        status=1
      fi
    done < <(run "$exe" --list --format terse | sed -n 's/: test$//p')
  elif ! run env RUSTC_BOOTSTRAP=1 "$exe" -Z unstable-options --report-time > "$out/$name.log" 2>&1; then
    echo "FAILED: $name (see $out/$name.log)" >&2
    status=1
  fi
  end=$(date +%s.%N)
  printf '%s\t%s\n' "$(echo "$end - $start" | bc)" "$name" >> "$out/binaries.tsv"
done < "$out/binaries.txt"

doc_start=$(date +%s.%N)
cargo test --workspace --doc > "$out/doctests.log" 2>&1 || { echo "FAILED: doctests" >&2; status=1; }
doc_end=$(date +%s.%N)

echo "build of the test binaries: $(printf '%.0f' "$(echo "$build_end - $build_start" | bc)") s"
echo "doctests (cargo test --workspace --doc, build included): $(printf '%.0f' "$(echo "$doc_end - $doc_start" | bc)") s"
echo "test binaries, run one after another: $(awk -F'\t' '{s += $1} END {printf "%.0f", s}' "$out/binaries.tsv") s"
echo
echo "slowest binaries (s):"
sort -rn "$out/binaries.tsv" | head -"$top" | awk -F'\t' '{printf "  %7.1f  %s\n", $1, $2}'
echo
echo "slowest tests (s):"
# libtest prints `test name ... ok <1.234s>` with --report-time.
for log in "$out"/*.log; do
  bin=$(basename "$log" .log)
  sed -n 's/^test \(.*\) \.\.\. ok <\([0-9.]*\)s>$/\2\t'"$bin"' \1/p' "$log"
done | sort -rn | head -"$top" | awk -F'\t' '{printf "  %7.1f  %s\n", $1, $2}'
echo
echo "tests run: $(cat "$out"/*.log | grep -Eo '^test result: [a-z]+\. [0-9]+ passed' | awk '{s += $4} END {print s}')"
exit $status
