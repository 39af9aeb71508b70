"""What the DSPy side of the optimizer overhead benchmarks (dspy_gepa.py, dspy_mipro.py) shares:
offline, quiet runs, and a DSPy 3.4 LM whose replies are a function of the request, with no
latency. Import it before DSPy (it silences tqdm before DSPy and GEPA import it).
"""

import os

# DSPy fetches LiteLLM's model price list from the internet on first use (5 s time limit); the
# bundled copy is enough here and keeps the runs offline and repeatable.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Progress bars and logging are off on both sides (Signet: Progress::Off, no tracing subscriber).
# dspy.GEPA always asks GEPA for a progress bar and its trace capture asks Evaluate for one, so
# tqdm itself is told to stay quiet, before DSPy and GEPA import it.
import tqdm  # noqa: E402


class _QuietTqdm(tqdm.tqdm):
    def __init__(self, *args, **kwargs):
        kwargs["disable"] = True
        super().__init__(*args, **kwargs)


tqdm.tqdm = _QuietTqdm

import dspy  # noqa: E402
from dspy.lm15 import Message, Response, TextPart, Usage, response_to_events  # noqa: E402


class FnEngine:
    """A DSPy 3.4 engine answering with fn(system message, messages after it), with no latency."""

    def __init__(self, fn):
        self.fn = fn

    def complete(self, request):
        system = request.system if isinstance(request.system, str) else "".join(
            p.text for p in request.system or [])
        reply = self.fn(system, request.messages)
        return Response(id=None, model="fn", message=Message.assistant([TextPart(reply)]),
                        finish_reason="stop", usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0))

    def stream(self, request):
        return response_to_events(self.complete(request))

    def close(self):
        pass


def fn_lm(fn):
    """An uncached LM answering with fn(system message, messages after it)."""
    return dspy.LM("fn", engine=FnEngine(fn), cache=False)
