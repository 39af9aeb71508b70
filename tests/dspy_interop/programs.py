"""DSPy's side of tests/interop/dspy_interop.rs: compile and save a program, or load one saved by
Signet, and print the messages the loaded program sends (as JSON on stdout).

    python programs.py compile OUT.json    # BootstrapFewShot in DSPy, saved to OUT.json
    python programs.py run SAVED.json      # load SAVED.json into a fresh program and run it
    python programs.py react SAVED.json    # the same for a ReAct agent with one tool
"""

import json
import sys

import dspy
from dspy.utils.dummies import DummyLM


class QA(dspy.Signature):
    """Answer the arithmetic question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField(desc="just the number")


TRAIN = [(a, b) for a, b in [(2, 2), (3, 4), (5, 1), (6, 6), (7, 2)]]
TEST_QUESTION = "What is 8 + 9?"


def question(a, b):
    return f"What is {a} + {b}?"


def replies():
    """The answer to every question the programs see: right, with a short reasoning."""
    table = {question(a, b): {"reasoning": f"{a} plus {b} is {a + b}.", "answer": str(a + b)} for a, b in TRAIN}
    table[TEST_QUESTION] = {"reasoning": "8 plus 9 is 17.", "answer": "17"}
    return table


def program():
    return dspy.ChainOfThought(QA)


def compile_and_save(out):
    dspy.configure(lm=DummyLM(replies()))
    trainset = [dspy.Example(question=question(a, b), answer=str(a + b)).with_inputs("question") for a, b in TRAIN]
    metric = lambda example, prediction, trace=None: example.answer == prediction.answer
    compiled = dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=2, max_labeled_demos=3).compile(
        program(), trainset=trainset
    )
    compiled.predict.signature = compiled.predict.signature.with_instructions("Add the two numbers.")
    compiled.save(out)


def run(saved):
    lm = DummyLM(replies())
    dspy.configure(lm=lm)
    loaded = program()
    loaded.load(saved)
    prediction = loaded(question=TEST_QUESTION)
    print(json.dumps({"messages": lm.history[-1]["messages"], "answer": prediction.answer}))


class AboutWords(dspy.Signature):
    """Answer about words."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


def define(word: str) -> str:
    """Look a word up in the dictionary."""
    return f"{word}: a word"


def run_react(saved):
    """Load SAVED.json into a ReAct agent and print the messages of its first step."""
    lm = DummyLM(
        [
            {"next_thought": "I know it.", "next_tool_name": "finish", "next_tool_args": {}},
            {"reasoning": "It is a word.", "answer": "a word"},
        ]
    )
    dspy.configure(lm=lm)
    agent = dspy.ReAct(AboutWords, tools=[define])
    agent.load(saved)
    prediction = agent(question="What is a word?")
    print(json.dumps({"messages": lm.history[0]["messages"], "answer": prediction.answer}))


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "compile":
        compile_and_save(path)
    elif mode == "react":
        run_react(path)
    else:
        run(path)
