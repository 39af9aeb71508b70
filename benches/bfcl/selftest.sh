#!/usr/bin/env bash
# Self-check of the BFCL harness, no model needed (seconds once installed): installs bfcl-eval,
# exports 5 questions per category, writes results by hand from the ground truth, scores them with
# BFCL's checker and asserts the verdicts:
#   perfect - the first possible value of every argument (dotted and "_" names alternating),
#             no call on irrelevance (null, and [] on live_irrelevance), a call on relevance:
#             every category 100%;
#   broken  - one wrong value in the first question of each AST category (the checker must report
#             a value error), a call on irrelevance and none on relevance (both incorrect).
# Also checks that --skip gives a split disjoint from --limit with the same seed, and that `table`
# makes one run's ALL rows out of the run scored in two parts.
#
#   bash benches/bfcl/selftest.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=$(bash benches/bfcl/install.sh | tail -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cats=simple_python,multiple,parallel,parallel_multiple,irrelevance,live_simple,live_multiple,live_irrelevance,live_relevance

"$PY" benches/bfcl/bfcl.py export --categories "$cats" --limit 5 --seed 0 --out "$tmp/q.jsonl"
"$PY" benches/bfcl/bfcl.py export --categories "$cats" --skip 5 --limit 5 --seed 0 --out "$tmp/held.jsonl"

# Synthesize results from the exported ground truth.
"$PY" - "$tmp" <<'EOF'
import json, sys
tmp = sys.argv[1]
qs = [json.loads(l) for l in open(f"{tmp}/q.jsonl")]
held = {json.loads(l)["id"] for l in open(f"{tmp}/held.jsonl")}
assert len(held) == len(qs) and not held & {q["id"] for q in qs}, "--skip split overlaps"

def value(v):  # a dict argument's answer lists each key's options ("" = may be left out)
    if isinstance(v, dict):
        return {k: next(x for x in o if x != "") for k, o in v.items() if any(x != "" for x in o)}
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        return [value(x) for x in v]
    return v

def call(name, options, doc, underscore):
    # The first possible value; an argument that may be left out ("") is left out unless required.
    required = doc["parameters"]["required"]
    args = {k: value(next(x for x in o if x != "")) for k, o in options.items()
            if any(x != "" for x in o) and not ("" in o and k not in required)}
    return {name.replace(".", "_") if underscore else name: args}

def spoil(calls):  # one wrong value: the first number or string argument
    for c in calls:
        args = next(iter(c.values()))
        for k, v in args.items():
            if type(v) in (int, float, str):
                args[k] = v + " (wrong)" if type(v) is str else v + 1
                return True
    return False

perfect, broken, spoiled = [], [], {}  # spoiled: category -> the id with the wrong value
underscored = 0  # dotted names sent as BFCL's FC models send them, "." -> "_"
for i, q in enumerate(qs):
    base = {"id": q["id"], "category": q["category"], "model": "truth", "seconds": 0.5,
            "prompt_tokens": 300, "completion_tokens": 20}
    docs = {d["name"]: d for d in q["functions"]}
    if q["category"].endswith("irrelevance"):  # no call: unparseable (null) or none ([])
        good, bad = None if q["category"] == "irrelevance" else [], [{q["functions"][0]["name"]: {}}]
    elif q["category"].endswith("relevance"):
        good, bad = [{q["functions"][0]["name"].replace(".", "_"): {}}], None
    else:
        good = [call(n, o, docs[n], i % 2 == 1) for t in q["ground_truth"] for n, o in t.items()]
        underscored += sum("." in n for t in q["ground_truth"] for n in t) if i % 2 == 1 else 0
        bad = json.loads(json.dumps(good))
        if q["category"] not in spoiled and spoil(bad):
            spoiled[q["category"]] = q["id"]
    perfect.append({**base, "mode": "perfect", "calls": good})
    broken.append({**base, "mode": "broken", "calls": bad})
with open(f"{tmp}/r.jsonl", "w") as f:
    for r in perfect + broken:
        f.write(json.dumps(r) + "\n")
json.dump(sorted(spoiled.values()), open(f"{tmp}/bad_ids.json", "w"))
assert underscored > 0
print(f"selftest: {len(qs)} questions, {underscored} calls with dotted names sent as '_' names")
EOF

"$PY" benches/bfcl/bfcl.py score --questions "$tmp/q.jsonl" --results "$tmp/r.jsonl" --out "$tmp/summary.json"

# Assert the verdicts.
"$PY" - "$tmp" <<'EOF'
import json, sys
tmp = sys.argv[1]
s = json.load(open(f"{tmp}/summary.json"))
bad_ids = set(json.load(open(f"{tmp}/bad_ids.json")))
for g in s["groups"]:
    if g["mode"] == "perfect":
        assert g["accuracy"] == 1.0, f"perfect results not 100%: {g}"
for v in s["verdicts"]:
    if v["mode"] != "broken":
        continue
    c = v["category"]
    if c.endswith("irrelevance"):
        assert not v["valid"] and v["error_type"] == "irrelevance_error:decoder_success", v
    elif c.endswith("relevance"):
        assert not v["valid"] and v["error_type"] == "relevance_error:decoder_failed", v
    elif v["id"] in bad_ids:
        assert not v["valid"] and "Invalid value for parameter" in v["error"], v
        e = v["error"]
        print(f"  {v['id']}: {v['error_type']}: {e[e.find('Invalid value'):][:100]}")
    else:
        assert v["valid"], v
assert len(bad_ids) == 6, bad_ids  # one per AST category
EOF

# A run split by category (scored in two parts) makes the same table as one run: `table` merges
# the parts' summaries into one ALL row per mode.
"$PY" - "$tmp" <<'EOF'
import json, subprocess, sys
tmp = sys.argv[1]
sys.path.insert(0, "benches/bfcl")
import bfcl
qs, rs = bfcl.read_jsonl(f"{tmp}/q.jsonl"), bfcl.read_jsonl(f"{tmp}/r.jsonl")
parts = []
for name, keep in [("a", lambda c: c == "simple_python"), ("b", lambda c: c != "simple_python")]:
    for kind, rows in [("q", qs), ("r", rs)]:
        with open(f"{tmp}/{kind}_{name}.jsonl", "w") as f:
            f.writelines(json.dumps(x) + "\n" for x in rows if keep(x["category"]))
    subprocess.run([sys.executable, "benches/bfcl/bfcl.py", "score", "--questions", f"{tmp}/q_{name}.jsonl",
                    "--results", f"{tmp}/r_{name}.jsonl", "--out", f"{tmp}/s_{name}.json"],
                   check=True, stdout=subprocess.DEVNULL)
    parts.append(json.load(open(f"{tmp}/s_{name}.json")))
whole = {g["mode"]: g for g in json.load(open(f"{tmp}/summary.json"))["groups"] if g["category"] == "ALL"}
merged = {g["mode"]: g for g in bfcl.merge_groups(parts) if g["category"] == "ALL"}
assert merged.keys() == whole.keys(), (merged.keys(), whole.keys())
for mode, g in merged.items():
    assert g == whole[mode], (mode, g, whole[mode])
print(f"selftest: table of a run scored in 2 parts = the whole run's ({', '.join(sorted(merged))})")
print("selftest: ok")
EOF
