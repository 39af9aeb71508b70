"""The DSPy side of the concurrency bench (benches/concurrency/main.rs runs it with --dspy): N
ReAct runs of dspy_workloads.py at once with DSPy's own parallel execution (Module.batch, i.e.
dspy.Parallel with num_threads=N), against the mock OpenAI-compatible server. Prints one JSON line
with the same fields as the Signet client.

    python dspy_concurrency.py --base-url http://127.0.0.1:PORT/v1 --n 100 [--engine auto|litellm]
"""

import argparse
import json
import resource
import time

import dspy

import dspy_workloads as w


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--engine", default="auto", help="dspy.LM's engine: auto (DSPy's default), lm15 or litellm")
    args = parser.parse_args()
    n = args.n

    # As the Signet client: no cache, no retries, a generous time limit.
    lm = dspy.LM("openai/signet-mock", api_base=args.base_url, api_key="none", cache=False, num_retries=0,
                 timeout=300, engine=args.engine)
    from dspy.clients.backend_selection import select_backend

    engine = "lm15 (native)" if select_backend(lm).native else "litellm"
    dspy.configure(lm=lm)
    agent = w.react()

    # Warm up (imports, the first connection), then measure from here.
    assert agent(question=w.REACT_QUESTION).answer == w.REACT_ANSWER
    baseline = status_kb("VmRSS")
    cpu_before = time.process_time()

    examples = [dspy.Example(question=w.REACT_QUESTION).with_inputs("question") for _ in range(n)]
    started = time.perf_counter()
    results, failed, exceptions = agent.batch(
        examples, num_threads=n, max_errors=n, return_failed_examples=True, disable_progress_bar=True
    )
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_before

    errors = len(failed) + sum(1 for r in results if r is None or getattr(r, "answer", None) != w.REACT_ANSWER)
    first_error = repr(exceptions[0]) if exceptions else None
    print(json.dumps({
        "impl": "dspy",
        "dspy": dspy.__version__,
        "engine": engine,
        "n": n,
        "wall_ms": wall * 1e3,
        # DSPy's batch() does not time each run; only the whole batch is measured.
        "p50_ms": None,
        "p99_ms": None,
        "max_ms": None,
        "errors": errors,
        "first_error": first_error,
        "baseline_rss_kb": baseline,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "cpu_ms": cpu * 1e3,
    }))


if __name__ == "__main__":
    main()
