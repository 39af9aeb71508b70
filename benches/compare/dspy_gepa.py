"""The DSPy side of benches/compare/gepa.sh: GEPA's own overhead in Python DSPy 3.4.1 on the
workloads of benches/gepa_overhead.rs (DSPy's reference GEPA run of tests/optimize/gepa.rs), with
zero-latency scripted LMs, timed the same way, checked to reach the same outcome, and printed beside
Signet's figures.

    python dspy_gepa.py --signet signet.jsonl [--seconds S]

`signet.jsonl` is the output of `cargo bench --bench gepa_overhead` (one JSON line per workload).
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

# GEPA's and Evaluate's INFO lines (a few per iteration) are skipped at the level check.
logging.getLogger("dspy").setLevel(logging.WARNING)
logging.getLogger("gepa").setLevel(logging.WARNING)

# The workloads of benches/gepa_overhead.rs: for each instruction version, the questions (mod 8)
# it gets right; the budget; and the outcome both sides must reach (parents of each candidate,
# metric calls), as in tests/optimize/gepa.rs.
WORKLOADS = {
    "reference": {
        "good1": {0: {0}, 1: {1, 2}, 2: {0, 3}, 3: {4}},
        "good2": {0: {5}, 1: {1, 6}, 2: {2, 7}, 3: {3}},
        "budget": 150,
        "parents": [[], [0], [1], [1]],
        "metric_calls": 152,
    },
    "merges": {
        "good1": {0: {2}, 1: {5, 7}, 2: {0, 1, 4}, 3: {4, 7}, 4: {3}, 5: {4, 6, 7}, 6: {5, 6},
                  7: {3}, 8: {2, 4, 6}, 9: {0, 5}, 10: {2}, 11: {0, 2, 7}},
        "good2": {0: {4, 7}, 1: {3, 5, 6}, 2: {1, 7}, 3: {0, 1}, 4: {7}, 5: {4}, 6: {5, 6, 7},
                  7: {4, 6}, 8: {4, 5}, 9: {1, 4, 6}, 10: {0, 6}, 11: {2, 5}},
        "budget": 300,
        "parents": [[], [0], [1], [0], [1, 3], [3], [2, 5]],
        "metric_calls": 300,
    },
}


def version(system, tag):
    found = re.search(tag + r"-v(\d+)", system)
    return int(found.group(1)) if found else 0


def task_lm(good1, good2):
    """Hinter version N gives a good hint on good1[N]; the answerer is right after a good hint or
    on good2[N]."""
    def reply(system, user):
        q = int(re.search(r"q=(\d+)", user).group(1))
        outputs = system.split("Your output fields are:")[1].split("All interactions")[0]
        if "`hint`" in outputs:
            hint = "good" if q % 8 in good1.get(version(system, "HINT"), ()) else "bad"
            return f"[[ ## hint ## ]]\n{hint}\n\n[[ ## completed ## ]]"
        hint = re.search(r"\[\[ ## hint ## \]\]\n(\w+)", user).group(1)
        right = hint == "good" or q % 8 in good2.get(version(system, "ANS"), ())
        return f"[[ ## answer ## ]]\n{q if right else -1}\n\n[[ ## completed ## ]]"
    return fn_lm(lambda system, messages: reply(system, messages[-1].text or ""))


def reflection_lm():
    """Proposes the next version of the instruction it is shown."""
    counters = {"HINT": 0, "ANS": 0}

    def reply(system, user):
        current = user.split("[[ ## current_instruction ## ]]\n")[1]
        tag = "HINT" if "HINT" in current else "ANS"
        counters[tag] += 1
        return json.dumps({"new_instruction": f"{tag}-v{counters[tag]} instruction"})
    return fn_lm(lambda system, messages: reply(system, messages[-1].text or ""))


class HintThenAnswer(dspy.Module):
    def __init__(self):
        super().__init__()
        self.hinter = dspy.Predict(dspy.Signature("question -> hint", "HINT-v0 instruction"))
        self.answerer = dspy.Predict(dspy.Signature("question, hint -> answer", "ANS-v0 instruction"))

    def forward(self, question):
        hint = self.hinter(question=question).hint
        return self.answerer(question=question, hint=hint)


def metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
    score = 1.0 if str(pred.answer).strip() == gold.answer else 0.0
    if pred_name is None:
        return score
    return dspy.Prediction(score=score, feedback=f"fb for {pred_name}: expected {gold.answer}")


def examples(numbers):
    return [dspy.Example(question=f"q={i}", answer=str(i)).with_inputs("question") for i in numbers]


TRAIN, VAL = examples(range(8)), examples(range(8, 16))


def run(workload):
    """One full GEPA run from scratch: fresh LMs, program and optimizer, as Signet's side does."""
    gepa = dspy.GEPA(metric=metric, reflection_lm=reflection_lm(), max_metric_calls=workload["budget"],
                     num_threads=1, track_stats=True)
    with dspy.context(lm=task_lm(workload["good1"], workload["good2"])):
        return gepa.compile(HintThenAnswer(), trainset=TRAIN, valset=VAL).detailed_results


def check(name, workload, results):
    """Exits non-zero unless the run reached the expected outcome."""
    parents = [[p for p in ps if p is not None] for ps in results.parents]
    if parents != workload["parents"] or results.total_metric_calls != workload["metric_calls"]:
        sys.exit(f"dspy_gepa: {name}: parents {parents} and {results.total_metric_calls} metric calls, "
                 f"expected {workload['parents']} and {workload['metric_calls']}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--signet", required=True, help="cargo bench --bench gepa_overhead output")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    with open(args.signet) as f:
        signet = {line["workload"]: line for line in map(json.loads, filter(str.strip, f))}

    rows = []
    for name, workload in WORKLOADS.items():
        ours = signet[name]
        results = run(workload)  # untimed: checks the outcome and warms up
        check(name, workload, results)
        if (ours["candidates"], ours["metric_calls"]) != (len(results.parents), results.total_metric_calls):
            sys.exit(f"dspy_gepa: {name}: Signet's run ({ours['candidates']} candidates, "
                     f"{ours['metric_calls']} metric calls) differs from DSPy's")
        times = []
        started = time.perf_counter()
        while time.perf_counter() - started < args.seconds or len(times) < 5:
            start = time.perf_counter()
            results = run(workload)
            times.append(time.perf_counter() - start)
            check(name, workload, results)
        rows.append((name, workload["budget"], ours, len(times), sorted(times)[len(times) // 2] * 1e3))

    print(f"{'workload':<12} {'budget':>6} {'metric calls':>12} {'candidates':>10} "
          f"{'Signet ms':>10} {'DSPy ms':>10} {'DSPy / Signet':>14}")
    for name, budget, ours, runs, dspy_ms in rows:
        print(f"{name:<12} {budget:>6} {ours['metric_calls']:>12} {ours['candidates']:>10} "
              f"{ours['median_ms']:>10.2f} {dspy_ms:>10.1f} {dspy_ms / ours['median_ms']:>13.0f}x")
    print("median of whole compile() runs; runs: "
          + ", ".join(f"{name} Signet {ours['runs']} / DSPy {runs}" for name, _, ours, runs, _ in rows))


if __name__ == "__main__":
    main()
