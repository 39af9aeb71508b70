#!/usr/bin/env bash
# Signet on BFCL, scored by BFCL's own checker: installs the bfcl-eval package (data + checker,
# cached), exports a sample of questions, answers them with examples/bfcl.rs in each mode, scores
# the answers and prints the table (mode x category: accuracy, the checker's error types,
# unreadable replies, seconds and tokens per question).
#
#   bash benches/bfcl/run.sh [--categories simple_python,multiple,...] [--limit N] [--seed S]
#                            [--modes native,chat,json,xml,constrained] [--model local|api]
#                            [--train K [--demos B] [--labeled L] [--per-category]
#                             [--optimizer bootstrap|gepa|mipro] [--budget N]]
#                            [--out DIR] [--release]
#
# Defaults: simple_python, 10 questions, seed 0, native mode, the local model, out target/bfcl.
# `--train K` takes K questions per category for training (disjoint from the evaluated ones: both
# come from one seeded shuffle) and adds a `<mode>+bootstrap` row per mode: the program compiled
# with BootstrapFewShot on them (B bootstrapped demos at most, 2 by default, then labeled demos -
# BFCL's first possible answers - up to L demos in all, 0 by default). `--per-category`: one
# compiled program per category, from that category's training questions. `--optimizer gepa` /
# `mipro`: a `<mode>+gepa` / `<mode>+mipro` row instead, optimized within N metric calls (150 by
# default). `--model api` reads OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_MODEL. The summary with
# every question's verdict is written to DIR/summary.json.
set -euo pipefail
cd "$(dirname "$0")/../.."

categories=simple_python limit=10 seed=0 modes=native model=local out=target/bfcl profile=() train=0 optimizer=bootstrap budget=150 demos=2 labeled=0 per_category=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --categories) categories=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --train) train=$2; shift 2 ;;
    --optimizer) optimizer=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --demos) demos=$2; shift 2 ;;
    --labeled) labeled=$2; shift 2 ;;
    --per-category) per_category=(--per-category); shift ;;
    --release) profile=(--release); shift ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

PY=$(bash benches/bfcl/install.sh | tail -n 1)
mkdir -p "$out"
limit_args=()
[[ "$limit" != all ]] && limit_args=(--limit "$limit")
train_args=()
if [[ "$train" != 0 ]]; then
  "$PY" benches/bfcl/bfcl.py export --categories "$categories" --limit "$train" --seed "$seed" \
    --out "$out/train.jsonl"
  train_args=(--train "$out/train.jsonl" --optimizer "$optimizer" --budget "$budget"
    --demos "$demos" --labeled "$labeled" "${per_category[@]}")
fi
"$PY" benches/bfcl/bfcl.py export --categories "$categories" "${limit_args[@]}" --seed "$seed" \
  --skip "$train" --out "$out/questions.jsonl"
cargo run -q "${profile[@]}" --example bfcl -- --questions "$out/questions.jsonl" \
  --results "$out/results.jsonl" --modes "$modes" --model "$model" "${train_args[@]}"
"$PY" benches/bfcl/bfcl.py score --questions "$out/questions.jsonl" --results "$out/results.jsonl" \
  --out "$out/summary.json"
