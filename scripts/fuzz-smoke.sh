#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for a short time (default 20 s each; FUZZ_SECONDS to change),
# starting from the committed seeds. Installs cargo-fuzz if it is missing. A crash fails the script
# and leaves the input in fuzz/artifacts/<target>/.
#
# Inputs may be up to 1 MB (libFuzzer's default cap is 4 KB, too small to reach a harmful depth),
# every target runs its input on a small stack (signet_fuzz::SMALL_STACK), and the build keeps
# overflow checks and debug assertions on (`-a`), so an arithmetic overflow is a finding too.
#
# Without AddressSanitizer (`-s none`): the code under test is safe Rust, where a panic, an
# overflow, a stack overflow, a timeout or running out of memory is what a finding looks like, and
# libFuzzer reports each of them without it. The sanitizer made the build of the whole tree on
# 2 cores take half as long again (about 771 s against 505 s); `FUZZ_SANITIZER=address` brings it back.
#
# cargo-fuzz needs unstable compiler flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${FUZZ_SECONDS:-20}"
sanitizer="${FUZZ_SANITIZER:-none}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz 0.13.2"
    cargo install cargo-fuzz --version 0.13.2 --locked
fi

export RUSTC_BOOTSTRAP=1
cargo fuzz build -O -a -s "$sanitizer"
for target in $(cargo fuzz list); do
    mkdir -p "corpus/$target"
    echo "== fuzz $target (${seconds} s)"
    cargo fuzz run -O -a -s "$sanitizer" "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -max_len=1048576 -print_final_stats=1 2>&1 |
        grep -E "^Done|stat::number_of_executed_units|panicked|ERROR|SUMMARY|Test unit written" || true
    # `cargo fuzz run` exits non-zero on a crash; grep above swallows the status, so check artifacts.
    failed=""
    for kind in crash leak timeout oom; do
        if compgen -G "artifacts/$target/$kind-*" >/dev/null; then failed="$kind"; fi
    done
    if [[ -n "$failed" ]]; then
        echo "fuzz target $target failed (crash, leak, timeout or out of memory); inputs in fuzz/artifacts/$target/" >&2
        exit 1
    fi
done
