"""Records a DSPy 3.4.1 MIPROv2 run (optuna 5.0.0) with scripted LMs, for tests/optimize/mipro.rs:
every evaluation (examples, instructions, demos, score), the demo sets, the instruction candidates,
the winner, the call counts and the prompt model's requests, written to
tests/fixtures/mipro/<NAME>.json (and the raw events to OUTDIR).

    python dspy_mipro_record.py OUTDIR [num_candidates] [num_trials] [minibatch_size] [full_eval_steps] [maxboot] [maxlab] [seed]

Environment: AUTO=light|medium|heavy, NDATA=n (questions q=0..n-1, split half and half),
VALNONE=1 (no valset), TASKFN=2 (the second task function), PROG=2 (two predictors). The fixtures
were recorded with (NAME = the last part of OUTDIR):

    run_nc3                                  (defaults: 3 5 4 2 2 2 0)
    run_nc6 6 12 4 3 3 2 0
    NDATA=40 TASKFN=2 run_tpe 6 40 8 5 3 2 0
    run_zeroshot 4 6 4 2 0 0 0
    run_nolabeled 4 4 4 2 2 0 0
    run_labeledonly3 3 4 4 2 0 2 0
    AUTO=light NDATA=50 VALNONE=1 run_auto_light 0 0 35 5 4 4 9
    AUTO=light NDATA=220 TASKFN=2 run_auto_light_mb 0 0 35 5 4 4 9
    PROG=2 NDATA=40 run_prog2 5 30 6 4 3 2 3

Needs the venv of benches/compare/install-dspy.sh with optuna==5.0.0 (benches/compare/mipro.sh
installs it).
"""
import sys, os, json, re, random, logging
import dspy
import optuna
from dspy.utils.dummies import DummyLM
from dspy.clients.engines.dummy_engine import DummyEngine, AsyncDummyEngine
from dspy.lm15 import Message, Response, TextPart, Usage
from dspy.teleprompt import mipro_optimizer_v2 as mv2
from dspy.evaluate.evaluate import Evaluate

OUT = sys.argv[1]
NC = int(sys.argv[2]) if len(sys.argv) > 2 else 3
NT = int(sys.argv[3]) if len(sys.argv) > 3 else 5
MBS = int(sys.argv[4]) if len(sys.argv) > 4 else 4
FES = int(sys.argv[5]) if len(sys.argv) > 5 else 2
MAXB = int(sys.argv[6]) if len(sys.argv) > 6 else 2
MAXL = int(sys.argv[7]) if len(sys.argv) > 7 else 2
SEED = int(sys.argv[8]) if len(sys.argv) > 8 else 0
os.makedirs(OUT, exist_ok=True)
EVENTS = []  # ordered log of everything interesting

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stdout)
for n in ["httpx", "LiteLLM"]:
    logging.getLogger(n).setLevel(logging.WARNING)


class FnEngine(DummyEngine):
    def __init__(self, owner, fn, name):
        super().__init__(owner); self.fn = fn; self.name = name
    def complete(self, request):
        self._req = request
        return super().complete(request)
    def complete_legacy(self, lm, request, **kw):
        self._req = {k: v for k, v in request.items() if k != "messages"}
        self._req["lm_kwargs"] = dict(lm.kwargs)
        return super().complete_legacy(lm, request, **kw)
    def _complete_messages(self, messages):
        out = self.fn(messages)
        req = getattr(self, "_req", None)
        cfg = req if isinstance(req, dict) else {"req": repr(req)[:300]}
        EVENTS.append({"ev": "lm", "lm": self.name, "sys": messages[0]["content"][:60], "cfg": cfg,
                       "user_tail": messages[-1]["content"][-120:], "out": out[:200]})
        MSGS.append({"lm": self.name, "messages": messages, "out": out, "req": repr(req)[:2000]})
        return Response(id=None, model="dummy", message=Message.assistant([TextPart(out)]), finish_reason="stop",
                        usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0))

MSGS = []

class FnLM(DummyLM):
    def copy(self, **kwargs):
        copied = DummyLM.__mro__[1].copy(self, **kwargs)  # BaseLM.copy
        copied._engine_spec = FnEngine(copied, self._engine_spec.fn, self._engine_spec.name)
        copied._async_engine_spec = AsyncDummyEngine(copied._engine_spec)
        return copied

def make_lm(fn, name):
    lm = FnLM([])
    lm._engine_spec = FnEngine(lm, fn, name)
    lm._async_engine_spec = AsyncDummyEngine(lm._engine_spec)
    return lm

ICOUNT = [0]
def prompt_fn(messages):
    sysm = messages[0]["content"]
    if "please summarize them into a brief" in sysm:
        return "[[ ## summary ## ]]\nSummary: Arithmetic questions of the form q=N.\n\n[[ ## completed ## ]]"
    if "I will also provide you with a few observations" in sysm:
        return "[[ ## observations ## ]]\nMore observations.\n\n[[ ## completed ## ]]"
    if "Given several examples from a dataset" in sysm:
        return "[[ ## observations ## ]]\nQuestions look like q=N; answers are N.\n\n[[ ## completed ## ]]"
    if "Please describe what type of task" in sysm:
        return "[[ ## program_description ## ]]\nProgram Description: echoes numbers.\n\n[[ ## completed ## ]]"
    if "Please describe the purpose of one of the specified module" in sysm:
        return "[[ ## module_description ## ]]\nThe module answers.\n\n[[ ## completed ## ]]"
    if "generate a new instruction" in sysm:
        ICOUNT[0] += 1
        return f"[[ ## proposed_instruction ## ]]\nProposed Instruction: \"INSTR-{ICOUNT[0]} answer the question\"\n\n[[ ## completed ## ]]"
    raise RuntimeError("unknown prompt signature: " + sysm[:200])

def task_fn2(messages):
    sysm = messages[0]["content"]; user = messages[-1]["content"]
    q = int(re.search(r"q=(\d+)", user).group(1))
    m = re.search(r"INSTR-(\d+)", sysm); v = int(m.group(1)) if m else 0
    ndemos = (len(messages) - 2) // 2
    outs = sysm.split("Your output fields are:")[1].split("All interactions")[0]
    if "`hint`" in outs:
        ok = ((q * 5 + v * 7 + ndemos) % 7) < 4
        return f"[[ ## hint ## ]]\n{'good' if ok else 'bad'}\n\n[[ ## completed ## ]]"
    hint = re.search(r"\[\[ ## hint ## \]\]\n(\w+)", user).group(1)
    ok = hint == "good" or ((q * 3 + v * 11 + ndemos * 2) % 5) < 2
    return f"[[ ## answer ## ]]\n{q if ok else -1}\n\n[[ ## completed ## ]]"

def task_fn(messages):
    if os.environ.get("PROG") == "2":
        return task_fn2(messages)
    sysm = messages[0]["content"]
    user = messages[-1]["content"]
    q = int(re.search(r"q=(\d+)", user).group(1))
    m = re.search(r"INSTR-(\d+)", sysm)
    v = int(m.group(1)) if m else 0
    ndemos = (len(messages) - 2) // 2
    if os.environ.get("TASKFN") == "2":
        ok = ((q * 7 + v * 3 + ndemos * 5 + q * v) % 11) < 6
    else:
        ok = (q + v + ndemos) % 3 != 0
    return f"[[ ## answer ## ]]\n{q if ok else -1}\n\n[[ ## completed ## ]]"

class Prog(dspy.Module):
    def __init__(self):
        super().__init__()
        self.pred = dspy.Predict(dspy.Signature("question -> answer", "Answer the question."))
    def forward(self, question):
        return self.pred(question=question)

class Prog2(dspy.Module):
    def __init__(self):
        super().__init__()
        self.hinter = dspy.Predict(dspy.Signature("question -> hint", "Give a hint."))
        self.answerer = dspy.Predict(dspy.Signature("question, hint -> answer", "Answer the question."))
    def forward(self, question):
        h = self.hinter(question=question).hint
        return self.answerer(question=question, hint=h)
if os.environ.get("PROG") == "2":
    Prog = Prog2

METRIC_CALLS = []
def metric(gold, pred, trace=None):
    s = 1.0 if str(pred.answer).strip() == str(gold.answer) else 0.0
    METRIC_CALLS.append((gold.question, trace is not None, s))
    return s

# --- instrument MIPRO's python RNG
class LogRandom(random.Random):
    def _log(self, name, args, res):
        EVENTS.append({"ev": "rng", "fn": name, "args": args, "res": res})
    def sample(self, population, k, **kw):
        r = super().sample(population, k, **kw)
        self._log("sample", [repr(population) if isinstance(population, range) else f"list(len={len(population)})", k],
                  r if isinstance(population, range) else "<items>")
        return r
    def shuffle(self, x):
        before = list(x)
        super().shuffle(x)
        self._log("shuffle", [len(x)], [before.index(e) for e in x])
    def randint(self, a, b):
        r = super().randint(a, b)
        self._log("randint", [a, b], r)
        return r
    def choice(self, seq):
        r = super().choice(seq)
        self._log("choice", [list(seq) if len(seq) < 10 else len(seq)], r)
        return r
    # NOTE: do not override random(): Random.__init_subclass__ would switch _randbelow to the
    # random()-based variant and change the stream. MIPROv2 never calls rng.random() (set_history_randomly=False).

def _set_random_seeds(self, seed):
    self.rng = LogRandom(seed)
if not os.environ.get('NOINSTR'):
    mv2.MIPROv2._set_random_seeds = _set_random_seeds

# --- instrument Evaluate
_orig_call = Evaluate.__call__
def eval_call(self, program, *a, devset=None, **kw):
    ds = devset if devset is not None else self.devset
    instr = [p.signature.instructions for p in program.predictors()]
    nd = [len(p.demos) for p in program.predictors()]
    r = _orig_call(self, program, *a, devset=devset, **kw)
    EVENTS.append({"ev": "eval", "ids": [int(e.question.split("=")[1]) for e in ds], "instr": instr, "ndemos": nd,
                   "score": r.score})
    return r
Evaluate.__call__ = eval_call

_orig_boot = mv2.MIPROv2._bootstrap_fewshot_examples
CAP = {}
def _boot(self, *a, **kw):
    CAP["train"] = [int(e.question.split("=")[1]) for e in a[1]]
    r = _orig_boot(self, *a, **kw)
    EVENTS.append({"ev": "demo_candidates", "sets": {i: [[(int(d["question"].split("=")[1]), "augmented" in d.keys()) for d in s] for s in sets] for i, sets in r.items()}})
    return r
mv2.MIPROv2._bootstrap_fewshot_examples = _boot
_orig_prop = mv2.MIPROv2._propose_instructions
def _prop(self, *a, **kw):
    r = _orig_prop(self, *a, **kw)
    EVENTS.append({"ev": "instruction_candidates", "cands": r})
    return r
mv2.MIPROv2._propose_instructions = _prop
_orig_opt = mv2.MIPROv2._optimize_prompt_parameters
def _optp(self, program, ic, dc, evaluate, valset, num_trials, minibatch, mbs, fes, seed):
    CAP["val"] = [int(e.question.split("=")[1]) for e in valset]
    CAP["hp"] = dict(num_trials=num_trials, minibatch=minibatch, n_instr=len(ic[0]), n_demo_sets=(len(dc[0]) if dc else 0))
    return _orig_opt(self, program, ic, dc, evaluate, valset, num_trials, minibatch, mbs, fes, seed)
mv2.MIPROv2._optimize_prompt_parameters = _optp
_orig_sv = mv2.MIPROv2._set_and_validate_datasets
def _sv(self, trainset, valset):
    t, v = _orig_sv(self, trainset, valset)
    CAP["val_before"] = len(v)
    return t, v
mv2.MIPROv2._set_and_validate_datasets = _sv

AUTO = os.environ.get("AUTO") or None
NDATA = int(os.environ.get("NDATA", "20"))
VALNONE = bool(os.environ.get("VALNONE"))
data = [dspy.Example(question=f"q={i}", answer=str(i)).with_inputs("question") for i in range(NDATA)]
if VALNONE:
    train, val = data, None
else:
    train, val = data[:NDATA // 2], data[NDATA // 2:]

task_lm = make_lm(task_fn, "task")
prompt_lm = make_lm(prompt_fn, "prompt")
dspy.configure(lm=task_lm)

if AUTO:
    opt = dspy.MIPROv2(metric=metric, prompt_model=prompt_lm, task_model=task_lm, auto=AUTO,
                       max_bootstrapped_demos=MAXB, max_labeled_demos=MAXL, num_threads=1, seed=SEED, verbose=False)
    best = opt.compile(Prog(), trainset=train, valset=val, minibatch_size=MBS, minibatch_full_eval_steps=FES)
else:
    opt = dspy.MIPROv2(metric=metric, prompt_model=prompt_lm, task_model=task_lm, auto=None, num_candidates=NC,
                       max_bootstrapped_demos=MAXB, max_labeled_demos=MAXL, num_threads=1, seed=SEED, verbose=False)
    best = opt.compile(Prog(), trainset=train, valset=val, num_trials=NT, minibatch_size=MBS,
                       minibatch_full_eval_steps=FES)

res = {
    "params": dict(AUTO=AUTO, NVAL_BEFORE=CAP["val_before"], NTRAIN=len(CAP["train"]), NVAL=len(CAP["val"]), train_ids=CAP["train"], val_ids=CAP["val"], hp=CAP["hp"], NC=NC, NT=NT, MBS=MBS, FES=FES, MAXB=MAXB, MAXL=MAXL, SEED=SEED, optuna=optuna.__version__),
    "best_instr": [p.signature.instructions for p in best.predictors()],
    "best_demos": [[dict(d) for d in p.demos] for p in best.predictors()],
    "best_score": best.score,
    "trial_logs": {k: {kk: (vv if isinstance(vv, (int, float, str, type(None))) else
                            [p.signature.instructions for p in vv.predictors()] + [len(p.demos) for p in vv.predictors()])
                       for kk, vv in v.items()} for k, v in best.trial_logs.items()},
    "candidate_programs": [(c["score"], c["full_eval"], [p.signature.instructions for p in c["program"].predictors()], [len(p.demos) for p in c["program"].predictors()]) for c in best.candidate_programs],
    "mb_candidate_programs": [(c["score"], c["full_eval"], [p.signature.instructions for p in c["program"].predictors()], [len(p.demos) for p in c["program"].predictors()]) for c in best.mb_candidate_programs],
    "n_metric_calls": len(METRIC_CALLS),
    "trials": [(k, {kk: vv for kk, vv in v.items() if kk.endswith(("_instruction", "_demos"))}, v.get("mb_score"), v.get("full_eval_score")) for k, v in sorted(best.trial_logs.items())],
    "n_metric_calls_with_trace": sum(1 for c in METRIC_CALLS if c[1]),
    "n_lm_calls": {"task": sum(1 for e in EVENTS if e["ev"] == "lm" and e["lm"] == "task"),
                    "prompt": sum(1 for e in EVENTS if e["ev"] == "lm" and e["lm"] == "prompt")},
}
res["demo_candidates"] = [e for e in EVENTS if e["ev"] == "demo_candidates"][0]["sets"]
res["instruction_candidates"] = [e for e in EVENTS if e["ev"] == "instruction_candidates"][0]["cands"]
res["evals"] = [(e["ids"], e["instr"], e["ndemos"], e["score"]) for e in EVENTS if e["ev"] == "eval"]
res["rng"] = [(e["fn"], e["args"], e["res"]) for e in EVENTS if e["ev"] == "rng"]
json.dump(res, open(f"{OUT}/result.json", "w"), indent=1, default=str)
json.dump(EVENTS, open(f"{OUT}/events.json", "w"), indent=1, default=str)
json.dump(MSGS, open(f"{OUT}/messages.json", "w"), indent=1, default=str)
print("RESULT", json.dumps(res, default=str)[:3000])


# The fixture tests/optimize/mipro.rs reads.
name = os.path.basename(os.path.normpath(OUT))
fixture = {
    "run": name,
    "settings": {"auto": AUTO, "candidates": NC, "trials": NT, "minibatch_size": MBS, "full_eval_steps": FES,
                 "max_bootstrapped_demos": MAXB, "max_labeled_demos": MAXL, "seed": SEED, "examples": NDATA,
                 "no_valset": VALNONE,
                 "task": "prog2" if os.environ.get("PROG") == "2" else ("fn2" if os.environ.get("TASKFN") == "2" else "fn1")},
    "val_ids": CAP["val"],
    "demo_sets": [res["demo_candidates"][k] for k in sorted(res["demo_candidates"], key=int)],
    "instructions": [res["instruction_candidates"][k] for k in sorted(res["instruction_candidates"], key=int)],
    "evals": [{"ids": e[0], "instructions": e[1], "demos": e[2], "score": e[3]} for e in res["evals"]],
    "best_instructions": res["best_instr"],
    "best_demos": [len(d) for d in res["best_demos"]],
    "best_score": res["best_score"],
    "lm_calls": res["n_lm_calls"],
    "metric_calls": res["n_metric_calls"],
}
if name in ("run_nc3", "run_prog2"):
    fixture["prompt_requests"] = []
    for m in MSGS:
        if m["lm"] != "prompt":
            continue
        rollout = re.search(r"'rollout_id': (\d+)", m["req"])
        temperature = re.search(r"'temperature': ([\d.]+)", m["req"])
        fixture["prompt_requests"].append({
            "system": m["messages"][0]["content"], "user": m["messages"][-1]["content"],
            "rollout_id": int(rollout.group(1)) if rollout else None, "temperature": float(temperature.group(1))})
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "..", "tests", "fixtures", "mipro", f"{name}.json"), "w") as f:
    json.dump(fixture, f, indent=1)
