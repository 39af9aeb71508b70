"""The DSPy side of benches/compare/run.sh: times the Predict and ReAct workloads of
dspy_workloads.py in Python DSPy with zero-latency LMs, the same way benches/compare/main.rs times
Signet, checks that both send the same prompts, and prints the side-by-side table.

    python dspy_overhead.py --signet signet.jsonl [--prompts signet-prompts.json] [--seconds S]
"""

import argparse
import json
import logging
import platform
import sys
import time

import dspy

import dspy_workloads as w

# Evaluate logs its average after every run at INFO: thousands of lines while timing.
logging.getLogger("dspy.evaluate").setLevel(logging.WARNING)

SAMPLE = 0.050  # seconds per sample, as in main.rs
EVAL_EXAMPLES = 100  # examples per Evaluate run, as in main.rs


def time_calls(call, budget):
    """Warm up, size a batch to take about SAMPLE, sample for `budget` seconds: median and fastest."""
    warm_up = time.perf_counter()
    batch = 1
    while True:
        started = time.perf_counter()
        for _ in range(batch):
            call()
        if time.perf_counter() - started < SAMPLE:
            batch *= 2
        elif time.perf_counter() - warm_up >= budget / 10:
            break
    per_call = []
    measuring = time.perf_counter()
    while time.perf_counter() - measuring < budget or len(per_call) < 5:
        started = time.perf_counter()
        for _ in range(batch):
            call()
        per_call.append((time.perf_counter() - started) / batch)
    per_call.sort()
    return {"median_us": per_call[len(per_call) // 2] * 1e6, "fastest_us": per_call[0] * 1e6,
            "calls": batch * len(per_call)}


def measure(lm_kind, budget):
    """Both workloads with one kind of LM; checks the answers and the number of LM calls."""
    def make(replies):
        """The LM, and what counts its calls."""
        if lm_kind == "engine":
            engine = w.CannedEngine(replies)
            return dspy.LM("canned", engine=engine, cache=False), engine
        lm = w.CannedLM(replies)
        return lm, lm

    results = {}
    lm, _ = make([w.PREDICT_REPLY])
    with dspy.context(lm=lm):
        module = w.predict()
        assert module(question=w.PREDICT_QUESTION).answer == w.PREDICT_ANSWER
        results["predict"] = time_calls(lambda: module(question=w.PREDICT_QUESTION), budget)

    lm, _ = make([w.PREDICT_REPLY])
    with dspy.context(lm=lm):
        module = w.predict()
        devset = [dspy.Example(question=w.PREDICT_QUESTION, answer=w.PREDICT_ANSWER).with_inputs("question")
                  for _ in range(EVAL_EXAMPLES)]
        metric = lambda example, prediction, trace=None: dspy.evaluate.answer_exact_match(example, prediction)
        evaluate = dspy.Evaluate(devset=devset, metric=metric, display_progress=False, display_table=False)
        assert evaluate(module).score == 100.0
        timing = time_calls(lambda: evaluate(module), budget)
        results["evaluate"] = {k: v / EVAL_EXAMPLES if k != "calls" else v * EVAL_EXAMPLES
                               for k, v in timing.items()}

    lm, counter = make(w.REACT_REPLIES)
    with dspy.context(lm=lm):
        module = w.react()
        before = counter.calls
        assert module(question=w.REACT_QUESTION).answer == w.REACT_ANSWER
        assert counter.calls - before == w.REACT_LM_CALLS, counter.calls - before
        results["react"] = time_calls(lambda: module(question=w.REACT_QUESTION), budget)
    return results


def check_prompts(path):
    """Runs each workload once with a recording LM and compares the messages with Signet's."""
    with open(path) as f:
        signet = json.load(f)
    same = {}
    for name, replies, run in [
        ("predict", [w.PREDICT_REPLY], lambda: w.predict()(question=w.PREDICT_QUESTION)),
        ("react", w.REACT_REPLIES, lambda: w.react()(question=w.REACT_QUESTION)),
    ]:
        lm = w.CannedLM(replies, record=True)
        with dspy.context(lm=lm):
            run()
        theirs = [[{"role": m["role"], "content": m["content"]} for m in call] for call in signet[name]]
        same[name] = lm.received == theirs
        if not same[name]:
            for i, (a, b) in enumerate(zip(lm.received, theirs)):
                if a != b:
                    print(f"prompts differ in {name} call {i}:\nDSPy:   {a}\nSignet: {b}", file=sys.stderr)
                    break
            else:
                print(f"{name}: DSPy made {len(lm.received)} calls, Signet {len(theirs)}", file=sys.stderr)
    return same


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--signet", required=True, help="JSON lines printed by `cargo bench --bench compare`")
    parser.add_argument("--prompts", help="the prompts Signet sent (cargo bench --bench compare -- --prompts)")
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per workload and LM")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()

    signet = {}
    with open(args.signet) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                signet[row["workload"]] = row
    same = check_prompts(args.prompts) if args.prompts else None

    dspy_results = {kind: measure(kind, args.seconds) for kind in ("engine", "legacy")}

    print(f"Python {platform.python_version()}, dspy {dspy.__version__}; {platform.processor() or platform.machine()}")
    if same is not None:
        print("same prompts as Signet (byte for byte): "
              + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
    print()
    head = ("workload", "Signet", "DSPy engine LM", "DSPy legacy BaseLM", "DSPy / Signet")
    print(f"| {head[0]:<45} | {head[1]:>9} | {head[2]:>14} | {head[3]:>18} | {head[4]:>13} |")
    print(f"|{'-' * 47}|{'-' * 10}:|{'-' * 15}:|{'-' * 19}:|{'-' * 14}:|")
    names = {"predict": "Predict, 1 LM call", "react": "ReAct, 2 tools + finish + extract (4 calls)",
             "evaluate": "Evaluate, per example (Predict + exact match)"}
    ratios = {}
    for workload in ("predict", "react", "evaluate"):
        ours = signet[workload]["median_us"]
        engine = dspy_results["engine"][workload]["median_us"]
        legacy = dspy_results["legacy"][workload]["median_us"]
        # Against the faster DSPy LM, so the ratio does not flatter Signet.
        ratio = min(engine, legacy) / ours
        ratios[workload] = ratio
        print(f"| {names[workload]:<45} | {fmt(ours):>9} | {fmt(engine):>14} | {fmt(legacy):>18} | {ratio:>12.0f}x |")
    # Evaluate's own cost per example: the per-example time less the Predict call inside it.
    overhead = {}
    for side, rows in [("signet", signet), ("engine", dspy_results["engine"]), ("legacy", dspy_results["legacy"])]:
        overhead[side] = rows["evaluate"]["median_us"] - rows["predict"]["median_us"]
    ratios["evaluate_overhead"] = min(overhead["engine"], overhead["legacy"]) / max(overhead["signet"], 1e-3)
    print(f"| {'Evaluate own cost per example (less Predict)':<45} | {fmt(overhead['signet']):>9} "
          f"| {fmt(overhead['engine']):>14} | {fmt(overhead['legacy']):>18} | {ratios['evaluate_overhead']:>12.0f}x |")
    print()
    print("Median time per run over samples of about 50 ms each; the ratio is against the faster DSPy LM.")
    verdict = "met" if all(ratios[k] >= 100 for k in ("predict", "react")) else "NOT met"
    print(f"Target (Signet at least 100x faster on Predict and ReAct): {verdict}.")
    verdict = "met" if ratios["evaluate_overhead"] >= 100 else "NOT met"
    print(f"Target (Evaluate's own cost per example at least 100x less): {verdict}.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"signet": signet, "dspy": dspy_results, "ratio": ratios, "same_prompts": same}, f, indent=1)
    if same is not None and not all(same.values()):
        sys.exit("the two sides did not send the same prompts: the comparison is not like for like")


def fmt(us):
    return f"{us:.1f} µs" if us < 100 else f"{us:.0f} µs" if us < 1000 else f"{us / 1000:.2f} ms"


if __name__ == "__main__":
    main()
