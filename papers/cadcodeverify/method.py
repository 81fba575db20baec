"""CADCodeVerify: generate CAD code, verify it visually, refine it (arXiv 2410.05340, Sec. 3).

The loop of paper Sec. 3 (brief Sec. 3.1), shared by every agent (the toy's stylised model,
an OpenAI-compatible endpoint, a local ``transformers`` model):

1. generate y0 = V(x);
2. execute and repair: run y; on an error feed its text back, at most N times;
3. M refinement rounds, each: render O = C(y); questions Q = V(x) from the prompt alone;
   answers A = V(Q, I_ref) from the renders alone; feedback F = V(Q, A) from the "No"
   answers; y <- V(x, y, F); then step 2 again. A round with no "No" leaves y unchanged.

Honesty boundaries (brief Sec. 3.4) are enforced by the signatures: ``make_questions`` takes
only the prompt; ``answer`` takes only (questions, images, prompt); nothing in this module
ever receives the ground truth. The baselines of paper Sec. 5.1 are other *verifiers* in the
same loop: 3D-Premise (one image, direct refinement), the random-answer control, and the
geometric solver* (an upper reference that needs the ground truth, built outside this module).

No Hydra, no file I/O: executors and renderers are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

ANSWER_LABELS = ("Yes", "No", "Unclear")


@dataclass(frozen=True)
class Question:
    """A yes/no validation question; "No" means a change is needed (paper appendix).

    ``field`` tags what a "No" asks to change (the toy's program fields; free text for an LLM),
    ``check`` and ``expected`` let a stylised answerer measure it from the renders.
    """

    text: str
    field: str = ""
    check: str = ""
    expected: Any = None


@dataclass(frozen=True)
class Answer:
    label: str  # Yes | No | Unclear
    reason: str = ""

    def __post_init__(self):
        if self.label not in ANSWER_LABELS:
            raise ValueError(f"answer label must be one of {ANSWER_LABELS}, got {self.label!r}")


@dataclass(frozen=True)
class Feedback:
    """Corrective feedback F: text for the refiner, the fields it flags, optional images
    (3D-Premise hands its single render to the refiner)."""

    text: str
    fields: tuple[str, ...] = ()
    images: tuple = ()


@dataclass(frozen=True)
class Execution:
    """What running code gave: the artifact (a solid or a mesh) or the error text."""

    ok: bool
    artifact: Any = None
    error: str = ""
    stopped: str = ""  # what a sandbox stopped: timeout | memory | other ("" when nothing)


class Executor(Protocol):
    """The compiler/executor C: code -> Execution (never raises for bad code)."""

    def execute(self, code: str) -> Execution: ...


class Renderer(Protocol):
    """O = C(y) -> images of the generated object."""

    def render(self, artifact: Any) -> Any: ...


class Agent(Protocol):
    """The roles V plays (brief Sec. 3.5). ``answer`` sees no code and no ground truth."""

    def generate_code(self, prompt: str) -> str: ...

    def repair(self, prompt: str, code: str, error: str) -> str: ...

    def make_questions(self, prompt: str) -> list[Question]: ...

    def answer(self, questions: Sequence[Question], images: Any, prompt: str) -> list[Answer]: ...

    def write_feedback(
        self, questions: Sequence[Question], answers: Sequence[Answer]
    ) -> Feedback: ...

    def refine(self, prompt: str, code: str, feedback: Feedback) -> str: ...


def execute_and_repair(
    agent: Agent, executor: Executor, prompt: str, code: str, max_repair: int
) -> tuple[str, Execution, int]:
    """Step 2: run ``code``; on an error ask the agent to fix it, at most ``max_repair`` times.

    Returns the last code, its execution and the number of repairs made. A still-failing
    program is a compile failure; it is never swapped for an earlier good version.
    """
    execution = executor.execute(code)
    repairs = 0
    while not execution.ok and repairs < max_repair:
        code = agent.repair(prompt, code, execution.error)
        execution = executor.execute(code)
        repairs += 1
    return code, execution, repairs


# ------------------------------------------------------------------------------ verifiers
class Verifier(Protocol):
    """Turns the current (compiled) program into feedback, or None to leave it unchanged."""

    def feedback(
        self, prompt: str, code: str, execution: Execution, images: Any
    ) -> Feedback | None: ...


def edit_driving(
    questions: Sequence[Question], answers: Sequence[Answer], feedback_on_unclear: bool
) -> tuple[list[Question], list[Answer]]:
    """The QA pairs that drive edits: only "No" (paper), plus "Unclear" when configured."""
    labels = {"No", "Unclear"} if feedback_on_unclear else {"No"}
    kept = [(q, a) for q, a in zip(questions, answers, strict=True) if a.label in labels]
    return [q for q, _ in kept], [a for _, a in kept]


@dataclass
class QAVerifier:
    """CADCodeVerify's verifier (Sec. 3.1 steps 3.2-3.4): questions from the prompt, answers
    from the renders, feedback from the "No" answers."""

    agent: Agent
    feedback_on_unclear: bool = False
    last_questions: list[Question] = field(default_factory=list)
    last_answers: list[Answer] = field(default_factory=list)

    def _answers(self, questions: list[Question], images: Any, prompt: str) -> list[Answer]:
        return self.agent.answer(questions, images, prompt)

    def feedback(
        self, prompt: str, code: str, execution: Execution, images: Any
    ) -> Feedback | None:
        questions = self.agent.make_questions(prompt)  # the prompt alone, never the render
        answers = self._answers(questions, images, prompt) if questions else []
        self.last_questions, self.last_answers = questions, answers
        driving_q, driving_a = edit_driving(questions, answers, self.feedback_on_unclear)
        if not driving_q:
            return None  # no "No": the round leaves y unchanged (Sec. 3.1 step 3.6)
        return self.agent.write_feedback(driving_q, driving_a)


@dataclass
class RandomAnswerVerifier(QAVerifier):
    """Negative control (brief Sec. 4 (d)): the same loop, every answer a coin flip, "No" with
    probability ``p_no``; the renders are never looked at."""

    rng: np.random.Generator | None = None
    p_no: float = 0.3

    def _answers(self, questions: list[Question], images: Any, prompt: str) -> list[Answer]:
        if self.rng is None:
            raise ValueError("RandomAnswerVerifier needs an rng")
        return [
            Answer("No" if self.rng.random() < self.p_no else "Yes", "coin flip") for _ in questions
        ]


@dataclass
class PremiseVerifier:
    """3D-Premise (paper Sec. 5.1): one rendered image and a direct request to fix whatever
    does not match the prompt; no question decomposition, nothing localised."""

    agent: Any  # needs premise_feedback(prompt, code, image) -> Feedback
    view: int = 0

    def feedback(
        self, prompt: str, code: str, execution: Execution, images: Any
    ) -> Feedback | None:
        single = images[self.view] if isinstance(images, list | tuple) else images
        return self.agent.premise_feedback(prompt, code, single)


@dataclass
class ReferenceVerifier:
    """Geometric solver* (paper Eq. 5-6): feedback computed from the ground truth by a callable
    the caller builds. An upper reference only: it needs what no real user has."""

    reference_feedback: Callable[[str, str, Execution], Feedback | None]

    def feedback(
        self, prompt: str, code: str, execution: Execution, images: Any
    ) -> Feedback | None:
        return self.reference_feedback(prompt, code, execution)


# ------------------------------------------------------------------------------ the loop
@dataclass(frozen=True)
class Round:
    """One state of the program: round 0 is 'Generated', round k is 'Refine-k'."""

    code: str
    execution: Execution
    repairs: int
    feedback: Feedback | None = None  # the feedback that produced this round (None: unchanged)
    questions: tuple[Question, ...] = ()
    answers: tuple[Answer, ...] = ()


def refine_loop(
    agent: Agent,
    executor: Executor,
    renderer: Renderer,
    prompt: str,
    rounds: int,
    max_repair: int,
    verifier: Verifier | None = None,
) -> list[Round]:
    """CADCodeVerify (paper Sec. 3): generate, repair, then ``rounds`` verify-and-refine rounds.

    Args:
        agent: plays every role; ``verifier`` defaults to :class:`QAVerifier` of this agent.
        executor: C; renderer: renders C(y) (four views at paper scale, three toy views).
        rounds: M (paper: 2); max_repair: N (brief default 3).

    Returns:
        ``rounds + 1`` :class:`Round` records: Generated, Refine-1, ..., Refine-M. The ground
        truth is not an argument: the loop cannot read it.
    """
    if rounds < 0 or max_repair < 0:
        raise ValueError(f"rounds and max_repair must be >= 0, got {rounds}, {max_repair}")
    verifier = verifier if verifier is not None else QAVerifier(agent)
    code, execution, repairs = execute_and_repair(
        agent, executor, prompt, agent.generate_code(prompt), max_repair
    )
    history = [Round(code, execution, repairs)]
    for _ in range(rounds):
        if not execution.ok:
            # Nothing to render: the item stays a compile failure (repair already ran N times).
            history.append(Round(code, execution, 0))
            continue
        images = renderer.render(execution.artifact)
        feedback = verifier.feedback(prompt, code, execution, images)
        questions = tuple(getattr(verifier, "last_questions", ()))
        answers = tuple(getattr(verifier, "last_answers", ()))
        if feedback is None:
            history.append(Round(code, execution, 0, None, questions, answers))
            continue
        new_code = agent.refine(prompt, code, feedback)
        # Every rewrite goes through compile-repair again (brief Sec. 3.4).
        code, execution, repairs = execute_and_repair(agent, executor, prompt, new_code, max_repair)
        history.append(Round(code, execution, repairs, feedback, questions, answers))
    return history
