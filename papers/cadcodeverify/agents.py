"""Agents: the roles V plays (brief Sec. 3.5) for the toy's stylised model and for real LLMs.

* :class:`ToyAgent` (brief Sec. 5): writes toycad field by field from the prompt with
  stylised errors; repairs regenerate only the field an error names; refinements regenerate
  only the fields the feedback flags (all other lines stay byte-identical); questions come
  from the prompt alone; answers are measured from the renders alone, then each Yes/No is
  flipped with probability epsilon to imitate an imperfect VLM.
* :class:`LLMAgent`: the same roles as paper-style prompts to any :class:`ChatModel`, with
  JSON answers parsed from the first ``{...}``/``[...]`` block (retry once, then "Unclear").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import binary_fill_holes

from papers.cadcodeverify.data import parse_prompt
from papers.cadcodeverify.method import Answer, Execution, Feedback, Question
from papers.cadcodeverify.render import ToyViews
from papers.cadcodeverify.toycad import FIELDS, Base, Boss, Hole, Solid, field_named_in

# ============================================================================ the toy agent
MISSPELLINGS = {"base": "extrude", "boss": "bos", "hole": "hol"}  # p_syntax's typos
SLOT_OF_OP = {**{op: op for op in MISSPELLINGS}, **{v: k for k, v in MISSPELLINGS.items()}}
SLOTS = ("base", "boss", "hole")
ALL_FIELDS = "all"  # 3D-Premise's unlocalised "it does not match, fix it"


@dataclass(frozen=True)
class ToyNoise:
    """The stylised model's error probabilities (brief Sec. 5)."""

    p_kind: float = 0.15  # box/cylinder confusion (base and boss)
    p_dim: float = 0.25  # one dimension error
    p_drop: float = 0.25  # an optional feature omitted
    p_syntax: float = 0.05  # a misspelt op (per written line)


@dataclass(frozen=True)
class ToyAnswerRules:
    """How the stylised answerer reads renders (brief Sec. 5)."""

    box_fill: float = 0.89  # fill ratio of the top mask's bounding rectangle above: a box
    boss_narrowing: float = 0.97  # top row of the front silhouette narrower than this x bottom
    yes_tolerance: float = 0.15  # ratio questions: relative error <= this -> Yes
    unclear_tolerance: float = 0.25  # <= this -> Unclear, otherwise No
    epsilon: float = 0.1  # probability of flipping each Yes/No
    max_questions: int = 5


@dataclass(frozen=True)
class Measures:
    """What the answerer measures about an object (from renders or, for the oracle, exactly)."""

    kind: str
    has_hole: bool
    has_boss: bool
    length_width: float
    thickness_length: float
    hole_length: float


def measure_views(views: ToyViews, boss_narrowing: float, box_fill: float) -> Measures:
    """Read the toy renders: top mask (hole-filled), front silhouette (brief Sec. 5)."""
    filled = binary_fill_holes(views.top_mask)
    xs, ys = np.nonzero(filled)
    ext_x = xs.max() - xs.min() + 1  # length along x, in pixels
    ext_y = ys.max() - ys.min() + 1
    fill_ratio = filled.sum() / (ext_x * ext_y)
    hole_pixels = int((filled & ~views.top_mask).sum())
    widths = views.front.sum(axis=0)  # (nz,) silhouette width of each z row
    rows = np.nonzero(widths)[0]
    bottom, top = widths[rows[0]], widths[rows[-1]]
    # base thickness: the rows, from the bottom, as wide as the bottom row
    base_rows = int(np.argmin(np.append(widths[rows[0] :] >= boss_narrowing * bottom, False)))
    return Measures(
        kind="box" if fill_ratio > box_fill else "cyl",
        has_hole=hole_pixels > 0,
        has_boss=bool(top < boss_narrowing * bottom),
        length_width=ext_x / ext_y,
        thickness_length=base_rows / bottom,
        hole_length=2 * np.sqrt(hole_pixels / np.pi) / ext_x,
    )


def measure_solid(solid: Solid) -> Measures:
    """The same measures computed exactly from a solid (the geometric solver's oracle)."""
    hx, hy = solid.base.half_widths
    return Measures(
        kind=solid.base.kind,
        has_hole=solid.hole is not None,
        has_boss=solid.boss is not None,
        length_width=hx / hy,
        thickness_length=solid.base.height / (2 * hx),
        hole_length=(2 * solid.hole.r / (2 * hx)) if solid.hole else 0.0,
    )


def toy_questions(truth: Solid, max_questions: int) -> list[Question]:
    """The stylised question writer (brief Sec. 5): priority order, each tagged with a field."""
    b = truth.base
    length = b.dims[0] if b.kind == "box" else 2 * b.dims[0]
    name = {"box": "rectangular box", "cyl": "cylinder"}[b.kind]
    questions = [Question(f"Is the base a {name}?", "base.kind", "kind", b.kind)]
    if truth.hole is not None:
        questions.append(Question("Is there a through hole in the centre?", "hole", "hole", True))
    if truth.boss is not None:
        questions.append(Question("Is there a boss centred on top?", "boss", "boss", True))
    if b.kind == "box":
        ratio = b.dims[0] / b.dims[1]
        questions.append(
            Question(f"Is the length about {ratio:.2f} x the width?", "base.dims", "lw", ratio)
        )
    ratio = b.height / length
    questions.append(
        Question(f"Is the thickness about {ratio:.2f} x the length?", "base.dims", "tl", ratio)
    )
    if truth.hole is not None:
        ratio = 2 * truth.hole.r / length
        questions.append(
            Question(f"Is the hole diameter about {ratio:.2f} x the length?", "hole", "hl", ratio)
        )
    return questions[:max_questions]


def answer_from_measures(question: Question, m: Measures, rules: ToyAnswerRules) -> tuple[str, str]:
    """Yes/No/Unclear for one question given the measures (before any noise)."""
    if question.check == "kind":
        return ("Yes" if m.kind == question.expected else "No"), f"the top view looks {m.kind}"
    if question.check == "hole":
        return ("Yes" if m.has_hole else "No"), f"hole seen: {m.has_hole}"
    if question.check == "boss":
        return ("Yes" if m.has_boss else "No"), f"boss seen: {m.has_boss}"
    measured = {"lw": m.length_width, "tl": m.thickness_length, "hl": m.hole_length}[question.check]
    error = abs(measured - question.expected) / question.expected
    if error <= rules.yes_tolerance:
        label = "Yes"
    elif error <= rules.unclear_tolerance:
        label = "Unclear"
    else:
        label = "No"
    return label, f"measured ratio {measured:.2f}"


class ToyAgent:
    """The stylised LLM of brief Sec. 5, with one RNG per role (generator, refiner, answers).

    Repairs use the RNG of the phase they follow (generation or refinement), so the
    'Generated' programs are identical for every verifier.
    """

    def __init__(
        self,
        noise: ToyNoise,
        rules: ToyAnswerRules,
        generator_rng: np.random.Generator,
        refiner_rng: np.random.Generator,
        answer_rng: np.random.Generator,
    ):
        self.noise, self.rules = noise, rules
        self.generator_rng, self.refiner_rng, self.answer_rng = (
            generator_rng,
            refiner_rng,
            answer_rng,
        )
        self._rng = generator_rng

    # --- writing fields from the prompt, with the stylised errors ----------------------
    def _chance(self, p: float) -> bool:
        return bool(self._rng.random() < p)

    def _kind(self, true_kind: str) -> str:
        other = "cyl" if true_kind == "box" else "box"
        return other if self._chance(self.noise.p_kind) else true_kind

    @staticmethod
    def _dims_as(truth: Base, kind: str) -> tuple[float, ...]:
        """The prompt's base dimensions written for ``kind`` (a box read as a cylinder takes
        its length as diameter; a cylinder read as a box is a square of side 2R)."""
        if kind == truth.kind:
            return truth.dims
        if truth.kind == "box":
            return (truth.dims[0] / 2, truth.dims[2])
        return (2 * truth.dims[0], 2 * truth.dims[0], truth.dims[1])

    def _noisy_dims(self, dims: tuple[float, ...], kind: str) -> tuple[float, ...]:
        if not self._chance(self.noise.p_dim):
            return dims
        error = int(self._rng.integers(3))
        d = list(dims)
        if kind == "box" and error == 0:
            d[0], d[1] = d[1], d[0]  # length and width swapped
        elif kind == "cyl" and error == 0:
            d[0] *= 2  # radius used as diameter
        else:
            d[-1] *= 0.5 if error == 1 else 2.0  # thickness halved or doubled
        return tuple(d)

    def _boss(self, truth: Boss | None) -> Boss | None:
        if truth is None or self._chance(self.noise.p_drop):
            return None
        kind = self._kind(truth.kind)
        size, height = truth.size, truth.height
        if self._chance(self.noise.p_dim):
            error = int(self._rng.integers(3))
            if error == 0:
                size *= 2  # radius used as diameter
            else:
                height *= 0.5 if error == 1 else 2.0
        return Boss(kind, size, height)

    def _hole(self, truth: Hole | None) -> Hole | None:
        if truth is None or self._chance(self.noise.p_drop):
            return None
        return Hole(truth.r * 2 if self._chance(self.noise.p_dim) else truth.r)

    def _line(self, slot: str, words: str) -> str:
        op = MISSPELLINGS[slot] if self._chance(self.noise.p_syntax) else slot
        return f"{op} {words}"

    def _base_line(self, base: Base) -> str:
        return self._line("base", f"{base.kind} " + " ".join(f"{d:.4g}" for d in base.dims))

    def _boss_line(self, boss: Boss | None) -> str | None:
        if boss is None:
            return None
        return self._line("boss", f"{boss.kind} {boss.size:.4g} {boss.height:.4g}")

    def _hole_line(self, hole: Hole | None) -> str | None:
        return None if hole is None else self._line("hole", f"{hole.r:.4g}")

    @staticmethod
    def _slots(code: str) -> dict[str, str | None]:
        """The program's lines by slot (misspelt ops included); absent slots map to None."""
        slots: dict[str, str | None] = dict.fromkeys(SLOTS)
        for line in code.splitlines():
            words = line.split()
            if words and words[0] in SLOT_OF_OP:
                slots[SLOT_OF_OP[words[0]]] = line.strip()
        return slots

    @staticmethod
    def _join(slots: dict[str, str | None]) -> str:
        return "\n".join(line for line in slots.values() if line is not None) + "\n"

    def _regenerate(self, truth: Solid, slots: dict[str, str | None], field: str) -> None:
        """Rewrite one field from the prompt with the same noise (brief Sec. 5)."""
        if field == "boss":
            slots["boss"] = self._boss_line(self._boss(truth.boss))
        elif field == "hole":
            slots["hole"] = self._hole_line(self._hole(truth.hole))
        else:
            current = (slots["base"] or "").split()
            current_kind = current[1] if len(current) > 1 and current[1] in ("box", "cyl") else None
            if field == "base.kind" or current_kind is None:
                kind = self._kind(truth.base.kind)
                if kind == current_kind:
                    return  # the same kind drawn again: the line stays as it is
                # a new kind needs its own dimensions, written with the same noise
                base = Base(kind, self._noisy_dims(self._dims_as(truth.base, kind), kind))
            else:  # base.dims: keep the kind, write the dimensions again
                base = Base(
                    current_kind,
                    self._noisy_dims(self._dims_as(truth.base, current_kind), current_kind),
                )
            slots["base"] = self._base_line(base)

    # --- the roles ------------------------------------------------------------------
    def generate_code(self, prompt: str) -> str:
        self._rng = self.generator_rng
        truth = parse_prompt(prompt)
        kind = self._kind(truth.base.kind)
        base = Base(kind, self._noisy_dims(self._dims_as(truth.base, kind), kind))
        slots = {
            "base": self._base_line(base),
            "boss": self._boss_line(self._boss(truth.boss)),
            "hole": self._hole_line(self._hole(truth.hole)),
        }
        return self._join(slots)

    def repair(self, prompt: str, code: str, error: str) -> str:
        """Regenerate only the field the error names (an unknown op names its line's slot)."""
        truth = parse_prompt(prompt)
        slots = self._slots(code)
        field = field_named_in(error)
        if field is None:
            match = re.search(r"unknown op '(\w+)'", error)
            slot = SLOT_OF_OP.get(match.group(1)) if match else None
            field = {"base": "base.dims", "boss": "boss", "hole": "hole"}.get(slot or "")
        if field is None:  # an error it cannot place: write the whole program again
            return self.generate_code(prompt) if self._rng is self.generator_rng else code
        self._regenerate(truth, slots, field)
        return self._join(slots)

    def make_questions(self, prompt: str) -> list[Question]:
        """From the prompt alone (never the render, never the ground truth)."""
        return toy_questions(parse_prompt(prompt), self.rules.max_questions)

    def answer(self, questions: Sequence[Question], images: ToyViews, prompt: str) -> list[Answer]:
        """From the renders of the generated object alone; then each Yes/No flips w.p. eps."""
        measures = measure_views(images, self.rules.boss_narrowing, self.rules.box_fill)
        answers = []
        for q in questions:
            label, reason = answer_from_measures(q, measures, self.rules)
            if self.answer_rng.random() < self.rules.epsilon and label != "Unclear":
                label = "No" if label == "Yes" else "Yes"
            answers.append(Answer(label, reason))
        return answers

    def write_feedback(self, questions: Sequence[Question], answers: Sequence[Answer]) -> Feedback:
        """The list of failed questions with their field tags."""
        fields = tuple(f for f in FIELDS if any(q.field == f for q in questions))
        text = " ".join(
            f"[{q.field}] {q.text} -> {a.label}." for q, a in zip(questions, answers, strict=True)
        )
        return Feedback(text, fields)

    def premise_feedback(self, prompt: str, code: str, image) -> Feedback:
        """3D-Premise-style: 'the render does not match the prompt, fix it', unlocalised."""
        return Feedback(
            "The rendered object does not match the description; fix it.", (ALL_FIELDS,)
        )

    def refine(self, prompt: str, code: str, feedback: Feedback) -> str:
        """Regenerate only the flagged fields; every other line stays byte-identical."""
        self._rng = self.refiner_rng
        if ALL_FIELDS in feedback.fields:
            return self._regenerate_all(prompt)
        truth = parse_prompt(prompt)
        slots = self._slots(code)
        for field in FIELDS:
            if field in feedback.fields:
                self._regenerate(truth, slots, field)
        return self._join(slots)

    def _regenerate_all(self, prompt: str) -> str:
        truth = parse_prompt(prompt)
        kind = self._kind(truth.base.kind)
        base = Base(kind, self._noisy_dims(self._dims_as(truth.base, kind), kind))
        return self._join(
            {
                "base": self._base_line(base),
                "boss": self._boss_line(self._boss(truth.boss)),
                "hole": self._hole_line(self._hole(truth.hole)),
            }
        )


def toy_geometric_solver(agent: ToyAgent, ground_truth: Solid, rules: ToyAnswerRules):
    """Geometric solver* for the toy: all six questions, answered exactly by comparing the
    generated solid with the ground-truth geometry (no renders, no noise). Needs the ground
    truth, so it is an upper reference, not a usable method."""

    questions = toy_questions(ground_truth, max_questions=6)

    def reference_feedback(prompt: str, code: str, execution: Execution) -> Feedback | None:
        measures = measure_solid(execution.artifact)
        answers = [Answer(*answer_from_measures(q, measures, rules)) for q in questions]
        failed = [(q, a) for q, a in zip(questions, answers, strict=True) if a.label == "No"]
        if not failed:
            return None
        return agent.write_feedback([q for q, _ in failed], [a for _, a in failed])

    return reference_feedback


# ============================================================================ LLM agents
CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str:
    """The first fenced code block of a reply, or the whole reply when it has none."""
    match = CODE_BLOCK.search(text)
    return (match.group(1) if match else text).strip() + "\n"


def extract_json(text: str):
    """The first JSON object or array in ``text`` (prose around it is ignored).

    Raises:
        ValueError: no parseable ``{...}`` or ``[...]`` block.
    """
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "[{":
            try:
                value, _ = decoder.raw_decode(text[start:])
            except json.JSONDecodeError:
                continue
            return value
    raise ValueError("no JSON block in the model's reply")


@dataclass(frozen=True)
class PromptTemplates:
    """Paper-style prompts (rules paraphrased from the paper's appendix, brief Sec. 3.1)."""

    system: str = "You are an expert CAD engineer who writes CadQuery (Python) code."
    generate: str = (
        "TASK: generate CAD code.\n{examples}Write a complete CadQuery Python script for the "
        "object below. It must export the final solid with "
        "cq.exporters.export(result, '{output}'). Reply with one ```python block.\n"
        "Description: {prompt}"
    )
    repair: str = (
        "TASK: repair CAD code.\nDescription: {prompt}\nThis script fails:\n```python\n{code}"
        "```\nError:\n{error}\nReturn the whole corrected script in one ```python block; it "
        "must still export to '{output}'."
    )
    questions: str = (
        "TASK: write validation questions.\n{examples}Write between 2 and 5 yes/no questions "
        "that check whether a 3D object matches the description. Phrase each so that 'No' "
        "means a change is needed; ask only about entities named in the description; do not "
        "ask about relative orientation (left/right). If fewer than 2 sensible questions "
        "exist, return []. Reply with a JSON list of strings.\nDescription: {prompt}"
    )
    answer: str = (
        "TASK: answer validation questions.\nThe images show one 3D object from four "
        "directions. Description: {prompt}\nAnswer each question from the images only, with "
        "Yes, No or Unclear (when the images do not settle it) and a short reason. Reply with "
        'a JSON list of {{"answer": "Yes|No|Unclear", "reason": "..."}}, one per question.\n'
        "Questions:\n{questions}"
    )
    feedback: str = (
        "TASK: write feedback.\nThese checks of a generated 3D object failed:\n{qa}\nWrite one "
        "concise paragraph of actionable corrections so that every answer becomes Yes. Do not "
        "touch parts that are already correct; say nothing about image quality, orientation "
        "or scale."
    )
    refine: str = (
        "TASK: refine CAD code.\nDescription: {prompt}\nCurrent script:\n```python\n{code}```\n"
        "Feedback: {feedback}\nRewrite the whole script to address the feedback; export to "
        "'{output}'. Reply with one ```python block."
    )
    premise: str = (
        "TASK: refine CAD code from an image.\nDescription: {prompt}\nCurrent script:\n"
        "```python\n{code}```\nThe image shows the object this script builds. Fix every "
        "discrepancy with the description; export to '{output}'. Reply with one ```python block."
    )


class LLMAgent:
    """Every role as a chat prompt. A code-only ``generator`` needs a separate VLM
    ``verifier`` (the paper verified CodeLlama's code with GPT-4); by default one model does
    both. ``gen`` holds the generator's sampling settings (temperature, max_tokens, seed);
    ``verifier_gen`` a separate verifier's own (default: ``gen``)."""

    def __init__(
        self,
        generator,
        verifier=None,
        templates: PromptTemplates | None = None,
        examples: Sequence[tuple[str, str]] = (),
        question_examples: Sequence[tuple[str, list[str]]] = (),
        output_name: str = "output.stl",
        gen: dict | None = None,
        verifier_gen: dict | None = None,
    ):
        self.generator = generator
        self.verifier = verifier if verifier is not None else generator
        self.t = templates or PromptTemplates()
        self.examples = list(examples)
        self.question_examples = list(question_examples)
        self.output_name = output_name
        self.gen = dict(gen or {})
        self.verifier_gen = dict(verifier_gen) if verifier_gen is not None else self.gen

    def _ask(self, chat, text: str, images=()) -> str:
        messages = [{"role": "system", "content": self.t.system}, {"role": "user", "content": text}]
        settings = self.gen if chat is self.generator else self.verifier_gen
        return chat.complete(messages, images=tuple(images), **settings)

    def _ask_json(self, chat, text: str, images=()):
        """Ask, parse the first JSON block; on failure retry once; None if it fails again."""
        for _ in range(2):
            try:
                return extract_json(self._ask(chat, text, images))
            except ValueError:
                continue
        return None

    def generate_code(self, prompt: str) -> str:
        shots = "".join(
            f"Example description: {p}\nExample script:\n```python\n{c}```\n"
            for p, c in self.examples
        )
        text = self.t.generate.format(examples=shots, prompt=prompt, output=self.output_name)
        return extract_code(self._ask(self.generator, text))

    def repair(self, prompt: str, code: str, error: str) -> str:
        text = self.t.repair.format(prompt=prompt, code=code, error=error, output=self.output_name)
        return extract_code(self._ask(self.generator, text))

    def make_questions(self, prompt: str) -> list[Question]:
        """From the prompt alone; fewer than 2 usable questions count as none (paper rule)."""
        shots = "".join(
            f"Example description: {p}\nExample questions: {json.dumps(q)}\n"
            for p, q in self.question_examples
        )
        reply = self._ask_json(
            self.verifier, self.t.questions.format(examples=shots, prompt=prompt)
        )
        texts = (
            [q.strip() for q in reply if isinstance(q, str) and q.strip()]
            if isinstance(reply, list)
            else []
        )
        return [Question(t) for t in texts[:5]] if len(texts) >= 2 else []

    def answer(self, questions: Sequence[Question], images, prompt: str) -> list[Answer]:
        """From (questions, images, prompt) only; unreadable replies are read as Unclear."""
        listing = "\n".join(f"{i + 1}. {q.text}" for i, q in enumerate(questions))
        reply = self._ask_json(
            self.verifier, self.t.answer.format(prompt=prompt, questions=listing), images
        )
        items = reply if isinstance(reply, list) else []
        answers = []
        for i in range(len(questions)):
            item = items[i] if i < len(items) else None
            label = item.get("answer") if isinstance(item, dict) else item
            label = str(label).strip().capitalize() if label is not None else "Unclear"
            reason = str(item.get("reason", "")) if isinstance(item, dict) else ""
            answers.append(Answer(label if label in ("Yes", "No") else "Unclear", reason))
        return answers

    def write_feedback(self, questions: Sequence[Question], answers: Sequence[Answer]) -> Feedback:
        qa = "\n".join(
            f"Q: {q.text} A: {a.label} ({a.reason})"
            for q, a in zip(questions, answers, strict=True)
        )
        text = self._ask(self.verifier, self.t.feedback.format(qa=qa)).strip()
        return Feedback(text, tuple(q.text for q in questions))

    def premise_feedback(self, prompt: str, code: str, image) -> Feedback:
        return Feedback("", ("premise",), (image,))

    def refine(self, prompt: str, code: str, feedback: Feedback) -> str:
        if feedback.images:  # 3D-Premise: the image itself, and a direct request to fix it
            text = self.t.premise.format(prompt=prompt, code=code, output=self.output_name)
            return extract_code(self._ask(self.verifier, text, feedback.images))
        text = self.t.refine.format(
            prompt=prompt, code=code, feedback=feedback.text, output=self.output_name
        )
        return extract_code(self._ask(self.generator, text))
