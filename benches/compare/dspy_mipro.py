"""The DSPy side of benches/compare/mipro.sh: MIPROv2's own overhead in Python DSPy 3.4.1 (with
optuna 5.0.0) on the workloads of benches/mipro_overhead.rs (two of the recorded runs that
tests/optimize/mipro.rs replays), with zero-latency scripted LMs, timed the same way, checked to
reach the same outcome, and printed beside Signet's figures.

    python dspy_mipro.py --signet signet.jsonl [--seconds S]

`signet.jsonl` is the output of `cargo bench --bench mipro_overhead` (one JSON line per workload).
Each workload is compiled from scratch again and again for S seconds (at least 5 runs, after one
untimed run); the median run is reported.
"""

import argparse
import json
import logging
import re
import sys
import time

from dspy_scripted import fn_lm  # noqa: E402  (first: it quiets tqdm before DSPy loads)

import dspy  # noqa: E402
import optuna  # noqa: E402

# The proposer warns about unused inputs on every proposal; those lines are skipped too.
logging.getLogger("dspy").setLevel(logging.ERROR)
optuna.logging.set_verbosity(optuna.logging.WARNING)

# The workloads of benches/mipro_overhead.rs and the outcome both sides must reach
# (evaluations, metric calls, best score).
WORKLOADS = {
    "reference": dict(examples=20, task=1, candidates=3, trials=5, minibatch_size=4, full_eval_steps=2,
                      max_bootstrapped=2, outcome=(9, 63, 70.0)),
    "tpe": dict(examples=40, task=2, candidates=6, trials=40, minibatch_size=8, full_eval_steps=5,
                max_bootstrapped=3, outcome=(49, 512, 100.0)),
}


def task_lm(task):
    """Right or wrong by a fixed function of the question, the INSTR-k in the instruction and the
    number of demos (tests/support/mipro_task.rs)."""
    def reply(system, messages):
        q = int(re.search(r"q=(\d+)", messages[-1].text).group(1))
        found = re.search(r"INSTR-(\d+)", system)
        v = int(found.group(1)) if found else 0
        demos = (len(messages) - 1) // 2
        if task == 1:
            right = (q + v + demos) % 3 != 0
        else:
            right = (q * 7 + v * 3 + demos * 5 + q * v) % 11 < 6
        return f"[[ ## answer ## ]]\n{q if right else -1}\n\n[[ ## completed ## ]]"
    return fn_lm(reply)


def prompt_lm():
    """A fixed reply per proposer signature; proposal k proposes INSTR-k."""
    proposals = [0]

    def reply(system, messages):
        def field(name, text):
            return f"[[ ## {name} ## ]]\n{text}\n\n[[ ## completed ## ]]"
        if "please summarize them into a brief" in system:
            return field("summary", "Summary: Arithmetic questions of the form q=N.")
        if "I will also provide you with a few observations" in system:
            return field("observations", "More observations.")
        if "Given several examples from a dataset" in system:
            return field("observations", "Questions look like q=N; answers are N.")
        if "Please describe what type of task" in system:
            return field("program_description", "Program Description: echoes numbers.")
        if "Please describe the purpose of one of the specified module" in system:
            return field("module_description", "The module answers.")
        proposals[0] += 1
        return field("proposed_instruction", f'Proposed Instruction: "INSTR-{proposals[0]} answer the question"')
    return fn_lm(reply)


class Prog(dspy.Module):
    def __init__(self):
        super().__init__()
        self.pred = dspy.Predict(dspy.Signature("question -> answer", "Answer the question."))

    def forward(self, question):
        return self.pred(question=question)


CALLS = [0]


def metric(gold, pred, trace=None):
    CALLS[0] += 1
    return 1.0 if str(pred.answer).strip() == gold.answer else 0.0


def run(w):
    """One full MIPROv2 run from scratch: fresh LMs, program and optimizer, as Signet's side does."""
    data = [dspy.Example(question=f"q={i}", answer=str(i)).with_inputs("question") for i in range(w["examples"])]
    half = w["examples"] // 2
    task = task_lm(w["task"])
    CALLS[0] = 0
    mipro = dspy.MIPROv2(metric=metric, prompt_model=prompt_lm(), task_model=task, auto=None,
                         num_candidates=w["candidates"], max_bootstrapped_demos=w["max_bootstrapped"],
                         max_labeled_demos=2, num_threads=1, seed=0, verbose=False)
    with dspy.context(lm=task):
        best = mipro.compile(Prog(), trainset=data[:half], valset=data[half:], num_trials=w["trials"],
                             minibatch_size=w["minibatch_size"], minibatch_full_eval_steps=w["full_eval_steps"])
    return (len(best.trial_logs), CALLS[0], best.score)


def check(name, w, outcome):
    if outcome != w["outcome"]:
        sys.exit(f"dspy_mipro: {name}: (evaluations, metric calls, best score) {outcome}, expected {w['outcome']}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--signet", required=True, help="cargo bench --bench mipro_overhead output")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    with open(args.signet) as f:
        signet = {line["workload"]: line for line in map(json.loads, filter(str.strip, f))}

    rows = []
    for name, w in WORKLOADS.items():
        ours = signet[name]
        check(name, w, run(w))  # untimed: checks the outcome and warms up
        times = []
        started = time.perf_counter()
        while time.perf_counter() - started < args.seconds or len(times) < 5:
            start = time.perf_counter()
            outcome = run(w)
            times.append(time.perf_counter() - start)
            check(name, w, outcome)
        rows.append((name, w, ours, len(times), sorted(times)[len(times) // 2] * 1e3))

    print(f"{'workload':<10} {'trials':>6} {'metric calls':>12} {'Signet ms':>10} {'DSPy ms':>10} {'DSPy / Signet':>14}")
    for name, w, ours, runs, dspy_ms in rows:
        print(f"{name:<10} {w['trials']:>6} {ours['metric_calls']:>12} {ours['median_ms']:>10.2f} "
              f"{dspy_ms:>10.1f} {dspy_ms / ours['median_ms']:>13.0f}x")
    print("median of whole compile() runs; runs: "
          + ", ".join(f"{name} Signet {ours['runs']} / DSPy {runs}" for name, _, ours, runs, _ in rows))


if __name__ == "__main__":
    main()
