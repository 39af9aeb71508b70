"""BFCL v4 data export and scoring with BFCL's own checker (see README.md).

Run with the python that install.sh prints:
  PY=$(bash benches/bfcl/install.sh)
  $PY benches/bfcl/bfcl.py list
  $PY benches/bfcl/bfcl.py export --categories simple_python,irrelevance --limit 20 --seed 1 --out Q.jsonl
  $PY benches/bfcl/bfcl.py score --questions Q.jsonl --results R.jsonl --out SUMMARY.json
  $PY benches/bfcl/bfcl.py table [--markdown] SUMMARY.json [SUMMARY.json ...]

Everything BFCL (data, possible answers, loaders, checker, relevance rule) is imported from the
bfcl-eval package, unmodified; nothing of it is copied here.
"""

import argparse
import copy
import importlib.metadata
import json
import os
import random
import sys
import types
from collections import Counter, defaultdict
from pathlib import Path

# bfcl_eval creates lock/result folders under BFCL_PROJECT_ROOT when imported; keep them next to
# the venv instead of inside site-packages.
os.environ.setdefault("BFCL_PROJECT_ROOT", str(Path(sys.prefix).parent / "bfcl-root"))

# The real bfcl_eval.constants.model_config imports every provider SDK. The AST checker reads one
# thing from it: MODEL_CONFIG_MAPPING[model].underscore_to_dot, looked up only when a function name
# has a dot (convert_func_name in ast_checker.py; an empty mapping raises KeyError there). We call
# the checker as model CHECKER_MODEL with underscore_to_dot=False, so it expects the original
# dotted names; calls that come back with BFCL's "."->"_" names are mapped back first (see
# restore_dotted_names).
CHECKER_MODEL = "signet"
_stub = types.ModuleType("bfcl_eval.constants.model_config")
_stub.MODEL_CONFIG_MAPPING = {CHECKER_MODEL: types.SimpleNamespace(underscore_to_dot=False)}
sys.modules["bfcl_eval.constants.model_config"] = _stub

from bfcl_eval.constants.category_mapping import ALL_CATEGORIES, SINGLE_TURN_CATEGORY  # noqa: E402
from bfcl_eval.constants.enums import Language  # noqa: E402
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker  # noqa: E402
from bfcl_eval.utils import (  # noqa: E402
    is_agentic,
    is_empty_output,
    is_format_sensitivity,
    is_function_calling_format_output,
    is_java,
    is_js,
    is_multi_turn,
    is_relevance_or_irrelevance,
    load_dataset_entry,
    load_ground_truth_entry,
)

BFCL_VERSION = importlib.metadata.version("bfcl-eval")
SUPPORTED = list(SINGLE_TURN_CATEGORY)  # BFCL's single-turn categories, in BFCL's order


def language(category):
    if is_java(category):
        return Language.JAVA
    if is_js(category):
        return Language.JAVASCRIPT
    return Language.PYTHON


def scorer_kind(category):
    if is_format_sensitivity(category):
        return "unsupported: prompt-format variations of other categories (non-scoring)"
    if is_multi_turn(category):
        return "unsupported: multi-turn, stateful executable backend"
    if is_agentic(category):
        return "unsupported: agentic, multi-step with tool execution"
    if is_relevance_or_irrelevance(category):
        return "irrelevance: correct when no call" if "irrelevance" in category else "relevance: correct when any call"
    return f"ast:{language(category).value}"


def load(category, hint=False):
    """BFCL's own loaders: question entries and ground truth (None for (ir)relevance), by index."""
    entries = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=hint)
    if is_relevance_or_irrelevance(category):
        return entries, [None] * len(entries)
    truth = load_ground_truth_entry(category)
    # BFCL pairs questions and answers by position (eval_runner._subset_entries_by_model_ids).
    assert len(truth) == len(entries), category
    return entries, [t["ground_truth"] for t in truth]


def parse_categories(text):
    cats = [c.strip() for c in text.split(",") if c.strip()]
    for c in cats:
        if c not in SUPPORTED:
            sys.exit(f"bfcl.py: category {c!r} is not supported ({scorer_kind(c) if c in ALL_CATEGORIES else 'unknown'}); "
                     f"supported: {','.join(SUPPORTED)}")
    return cats


# ---------------------------------------------------------------------------------------- list


def cmd_list(_args):
    print(f"bfcl-eval {BFCL_VERSION}")
    print(f"{'category':<24} {'count':>5}  {'turns':<10} scorer")
    for c in ALL_CATEGORIES:
        entries = load_dataset_entry(c, include_prereq=False, include_language_specific_hint=False)
        turns = "multi-step" if is_agentic(c) else "multi" if any(len(e["question"]) > 1 for e in entries) else "single"
        print(f"{c:<24} {len(entries):>5}  {turns:<10} {scorer_kind(c)}")


# -------------------------------------------------------------------------------------- export


def cmd_export(args):
    rows = []
    for c in parse_categories(args.categories):
        # Java/JavaScript: the checker wants every value as a string in that language's syntax,
        # so they always get the docs BFCL's generator sends (types rewritten to "string", hints).
        hint = args.language_hint or language(c) != Language.PYTHON
        entries, truth = load(c, hint=hint)
        # A full seeded permutation, then a window of it: --skip M --limit N with the same seed
        # gives disjoint splits. A fresh Random per category keeps each category's sample stable.
        order = random.Random(args.seed).sample(range(len(entries)), len(entries))
        end = None if args.limit is None else args.skip + args.limit
        picked = order[args.skip:end] if (args.limit is not None or args.skip) else order
        for i in sorted(picked):
            e = entries[i]
            rows.append({
                "id": e["id"],
                "category": c,
                "language": language(c).value,
                "messages": e["question"][0],  # single-turn: the first (only) turn
                "functions": e["function"],
                "ground_truth": truth[i],
            })
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    counts = Counter(r["category"] for r in rows)
    print(f"bfcl.py: wrote {len(rows)} questions to {args.out}: "
          + ", ".join(f"{c} {n}" for c, n in counts.items()), file=sys.stderr)


# --------------------------------------------------------------------------------------- score


def restore_dotted_names(calls, functions):
    """Maps names sent with BFCL's "."->"_" substitution (what FC APIs require) back to the
    documented dotted name, when exactly one documented function matches."""
    names = {f["name"] for f in functions}
    back = defaultdict(list)
    for n in names:
        back[n.replace(".", "_")].append(n)
    out = []
    for call in calls:
        (name, params), = call.items()
        if name not in names and len(back.get(name, [])) == 1:
            name = back[name][0]
        out.append({name: params})
    return out


def verdict(category, calls, functions, truth):
    """(valid, error_type, error) for one reply; calls is None when the reply was unparseable."""
    if is_relevance_or_irrelevance(category):
        # BFCL's rule, eval_runner._evaluate_single_relevance_entry: a reply "has a call" when it
        # decodes and is not is_empty_output ([] or [{}] or not in call format); a failed decode
        # (here calls=None) is no call. irrelevance: correct without a call; relevance: with one.
        has_call = calls is not None and not is_empty_output(calls)
        if "irrelevance" in category:
            return (True, None, None) if not has_call else (
                False, "irrelevance_error:decoder_success", "Made a call when none fits.")
        return (True, None, None) if has_call else (
            False, "relevance_error:decoder_failed", "Made no call.")
    # AST categories, as eval_runner._evaluate_single_ast_entry: decode, format check, ast_checker.
    if calls is None:
        return False, "ast_decoder:decoder_failed", "Unparseable reply."
    if not is_function_calling_format_output(calls):
        return False, "ast_decoder:decoder_wrong_output_format", "Not a list of {name: {args}}."
    calls = restore_dotted_names(calls, functions)
    try:
        r = ast_checker(copy.deepcopy(functions), calls, copy.deepcopy(truth), language(category),
                        category, CHECKER_MODEL)
    except Exception as e:  # the checker assumes well-typed input; BFCL's runner would crash here
        return False, "checker_exception", f"{type(e).__name__}: {e}"
    if r["valid"]:
        return True, None, None
    return False, r["error_type"], json.dumps(r["error"], ensure_ascii=False, default=str)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def mean(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return round(sum(xs) / len(xs), 3) if xs else None


def cmd_score(args):
    questions = read_jsonl(args.questions)
    order = {q["id"]: q for q in questions}
    # Docs and answers come from BFCL's data, not the export file: the checker needs the raw docs
    # (for Java/JS the original types, which the exported docs replace with "string").
    bfcl = {}
    for c in sorted({q["category"] for q in questions}):
        entries, truth = load(c)
        for e, t in zip(entries, truth):
            bfcl[e["id"]] = (e["function"], t)

    results = read_jsonl(args.results)
    by_run = defaultdict(dict)  # (mode, model) -> id -> result
    for r in results:
        if r["id"] not in order:
            print(f"bfcl.py: warning: result for unknown id {r['id']}, skipped", file=sys.stderr)
            continue
        by_run[(r.get("mode", ""), r.get("model", ""))][r["id"]] = r

    groups, verdicts = [], []
    for (mode, model), got in sorted(by_run.items()):
        per_cat = defaultdict(list)
        for q in questions:
            r = got.get(q["id"])
            if r is None:
                v = (False, "harness:missing_result", "No result for this question.")
                r = {}
            else:
                functions, truth = bfcl[q["id"]]
                v = verdict(q["category"], r.get("calls"), functions, truth)
            row = {"id": q["id"], "category": q["category"], "mode": mode, "model": model,
                   "valid": v[0], "error_type": v[1], "error": (v[2] or "")[:300] or None}
            if r.get("error"):
                row["reply_error"] = str(r["error"])[:300]
            verdicts.append(row)
            per_cat[q["category"]].append((row, r))
        for c, items in list(per_cat.items()) + [("ALL", [x for xs in per_cat.values() for x in xs])]:
            n = len(items)
            correct = sum(row["valid"] for row, _ in items)
            groups.append({
                "mode": mode, "model": model, "category": c, "n": n, "correct": correct,
                "accuracy": round(correct / n, 4) if n else None,
                "error_types": dict(Counter(row["error_type"] for row, _ in items if not row["valid"])),
                "unparseable": sum(1 for row, r in items if r and r.get("calls") is None),
                "reply_errors": sum(1 for _, r in items if r.get("error")),
                "mean_seconds": mean([r.get("seconds") for _, r in items]),
                "mean_prompt_tokens": mean([r.get("prompt_tokens") for _, r in items]),
                "mean_completion_tokens": mean([r.get("completion_tokens") for _, r in items]),
            })

    summary = {"bfcl_eval": BFCL_VERSION, "questions": args.questions, "results": args.results,
               "groups": groups, "verdicts": verdicts}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, ensure_ascii=False)
    print_table(groups)


MEANS = ("mean_seconds", "mean_prompt_tokens", "mean_completion_tokens")


def ranked_errors(group):
    """The group's checker error types, most frequent first, as (type, count)."""
    return sorted(group["error_types"].items(), key=lambda kv: -kv[1])


def print_table(groups):
    head = ["mode", "model", "category", "n", "acc%", "unparsed", "failed", "s/q", "prompt", "compl",
            "checker errors"]
    rows = [[g["mode"], g["model"], g["category"], str(g["n"]),
             "-" if g["accuracy"] is None else f"{100 * g['accuracy']:.1f}", str(g["unparseable"]),
             str(g["reply_errors"]),
             *("-" if g[k] is None else f"{g[k]:.1f}" for k in MEANS),
             ", ".join(f"{k} {v}" for k, v in ranked_errors(g))]
            for g in groups]
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head) - 1)]
    for r in [head] + rows:
        print("  ".join(x.ljust(w) if i < 3 else x.rjust(w) for i, (x, w) in enumerate(zip(r, widths))) + "  " + r[-1])


def merge_groups(summaries):
    """The groups of several summaries (runs split by category or mode) as one table: per
    (mode, model), the summaries' category rows in the order given, then one ALL row over all of
    them, its means weighted by the questions each row had."""
    rows = [g for s in summaries for g in s["groups"] if g["category"] != "ALL"]
    merged = []
    for key in sorted({(g["mode"], g["model"]) for g in rows}):
        part = [g for g in rows if (g["mode"], g["model"]) == key]
        merged.extend(part)
        n = sum(g["n"] for g in part)
        correct = sum(g["correct"] for g in part)
        errors = Counter()
        for g in part:
            errors.update(g["error_types"])

        def weighted(k):
            have = [(g[k], g["n"]) for g in part if g[k] is not None]
            weight = sum(w for _, w in have)
            return round(sum(x * w for x, w in have) / weight, 3) if weight else None

        merged.append({
            "mode": key[0], "model": key[1], "category": "ALL", "n": n, "correct": correct,
            "accuracy": round(correct / n, 4) if n else None, "error_types": dict(errors),
            "unparseable": sum(g["unparseable"] for g in part),
            "reply_errors": sum(g["reply_errors"] for g in part),
            **{k: weighted(k) for k in MEANS},
        })
    return merged


def print_markdown(groups, top=3):
    """The table as docs/bfcl.md writes it: the checker's most frequent error types only."""
    print("| mode | category | accuracy | unreadable | s/question | prompt / completion tokens | checker errors (most frequent) |")
    print("|---|---|---:|---:|---:|---:|---|")
    for g in groups:
        category = f"all {g['n']}" if g["category"] == "ALL" else g["category"]
        errors = ", ".join(f"{k} {v}" for k, v in ranked_errors(g)[:top])
        tokens = " / ".join("-" if g[k] is None else f"{g[k]:.0f}" for k in MEANS[1:])
        seconds = "-" if g["mean_seconds"] is None else f"{g['mean_seconds']:.1f}"
        accuracy = "-" if g["accuracy"] is None else f"{100 * g['accuracy']:.1f}%"
        print(f"| {g['mode']} | {category} | {accuracy} | {g['unparseable']} | {seconds} | {tokens} | {errors} |")


def cmd_table(args):
    summaries = []
    for path in args.summaries:
        with open(path, encoding="utf-8") as f:
            summaries.append(json.load(f))
    groups = merge_groups(summaries)
    (print_markdown if args.markdown else print_table)(groups)


# ---------------------------------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="all categories in the installed data: count, turns, scorer")
    e = sub.add_parser("export", help="write questions as JSON lines")
    e.add_argument("--categories", required=True, help="comma-separated, e.g. simple_python,irrelevance")
    e.add_argument("--limit", type=int, help="questions per category (default: all)")
    e.add_argument("--seed", type=int, default=0, help="seed of the per-category shuffle (default 0)")
    e.add_argument("--skip", type=int, default=0, help="skip the first M of the shuffled order")
    e.add_argument("--language-hint", action="store_true",
                   help="append BFCL's 'Note that the provided function is in Python 3 syntax.' to "
                        "descriptions, as BFCL's generator does (always on for Java/JavaScript)")
    e.add_argument("--out", required=True)
    s = sub.add_parser("score", help="score results with BFCL's checker")
    s.add_argument("--questions", required=True)
    s.add_argument("--results", required=True)
    s.add_argument("--out", required=True)
    t = sub.add_parser("table", help="print the table of one or more summaries (runs split by "
                                     "category or mode), with one ALL row per mode over all of them")
    t.add_argument("--markdown", action="store_true", help="as docs/bfcl.md writes it")
    t.add_argument("summaries", nargs="+")
    args = p.parse_args()
    {"list": cmd_list, "export": cmd_export, "score": cmd_score, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    main()
