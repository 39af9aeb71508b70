"""The workloads of benches/workloads/mod.rs in Python DSPy, reply for reply: the same signature,
tools, questions and model replies, so both sides make the same LM calls with the same prompts
(dspy_overhead.py checks the prompts byte for byte). Change both files together.

Two zero-latency LMs answer from the script, round and round:
  * CannedEngine: DSPy 3.4's engine contract (complete(Request) -> Response), used through
    dspy.LM(..., engine=CannedEngine(...), cache=False), the way DSPy 3.4 asks custom LMs to be
    written;
  * CannedLM: the legacy dspy.BaseLM subclass with forward(prompt, messages, **kwargs) (deprecated
    in 3.4, still supported), which can also record the messages it receives.
"""

import itertools
import os
import warnings
from types import SimpleNamespace

# DSPy fetches LiteLLM's model price list from the internet on first use (5 s time limit); the
# bundled copy is enough here and keeps the runs offline and repeatable.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402
from dspy.lm15 import Message, Response, TextPart, Usage, response_to_events  # noqa: E402

# The legacy BaseLM path and OpenAI-style messages warn once per process; not what is measured.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)


class QA(dspy.Signature):
    """Answer the question concisely."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def lookup(name: str) -> str:
    """Look up a colour."""
    return "blue" if name == "Alice" else "unknown"


PREDICT_QUESTION = "What is the capital of France?"
PREDICT_REPLY = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"
PREDICT_ANSWER = "Paris"

REACT_QUESTION = "2 + 3, and Alice's colour?"
REACT_ANSWER = "5; blue"


def step(thought, tool, args):
    return (
        f"[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n"
        f"[[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )


REACT_REPLIES = [
    step("Add first.", "add", '{"a": 2, "b": 3}'),
    step("Now the colour.", "lookup", '{"name": "Alice"}'),
    step("Done.", "finish", "{}"),
    "[[ ## reasoning ## ]]\n5 and blue.\n\n[[ ## answer ## ]]\n5; blue\n\n[[ ## completed ## ]]",
]
REACT_LM_CALLS = len(REACT_REPLIES)


def predict():
    return dspy.Predict(QA)


def react():
    # DSPy's default max_iters is 20, as Signet's.
    return dspy.ReAct(QA, tools=[add, lookup])


class CannedEngine:
    """A DSPy 3.4 engine that answers from a script, with no latency."""

    def __init__(self, replies):
        self.replies = itertools.cycle(replies)
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        return Response(
            id=None,
            model="canned",
            message=Message.assistant([TextPart(next(self.replies))]),
            finish_reason="stop",
            usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        )

    def stream(self, request):
        return response_to_events(self.complete(request))

    def close(self):
        pass


class CannedLM(dspy.BaseLM):
    """A legacy BaseLM that answers from a script, with no latency; records messages if asked."""

    def __init__(self, replies, record=False):
        super().__init__(model="canned", cache=False)
        self.replies = itertools.cycle(replies)
        self.record = record
        self.received = []
        self.calls = 0

    def forward(self, prompt=None, messages=None, **kwargs):
        self.calls += 1
        if self.record:
            self.received.append([{"role": m["role"], "content": m["content"]} for m in messages])
        message = SimpleNamespace(content=next(self.replies), tool_calls=None)
        return SimpleNamespace(
            choices=[SimpleNamespace(message=message, finish_reason="stop", logprobs=None)],
            usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            model="canned",
        )
