"""The toy: toycad compiler, data, renders, the ToyAgent and the loop (brief Sec. 5 and 7)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from papers.cadcodeverify.agents import (
    ToyAgent,
    ToyAnswerRules,
    ToyNoise,
    measure_solid,
    measure_views,
    toy_questions,
)
from papers.cadcodeverify.data import make_toy_items, parse_prompt, write_prompt
from papers.cadcodeverify.executors import ToyExecutor
from papers.cadcodeverify.geometry import occupancy, surface_points
from papers.cadcodeverify.method import Answer, QAVerifier, refine_loop
from papers.cadcodeverify.metrics import score_clouds
from papers.cadcodeverify.render import ToyRenderer
from papers.cadcodeverify.toycad import (
    ToyCadError,
    UnknownOpError,
    compile_program,
    field_named_in,
    format_program,
)
from papers.cadcodeverify.train import run_toy_histories, score_toy
from shared.config import compose


# ------------------------------------------------------------------ compiler (item 6)
def test_compiler_rejects_a_hole_as_wide_as_the_wall_naming_the_field():
    with pytest.raises(ToyCadError, match=r"^hole: ") as err:
        compile_program("base box 4 2 1\nhole 1\n")  # half-width of the base is 1
    assert err.value.field == "hole"
    with pytest.raises(ToyCadError, match=r"^hole: "):  # the boss is the thinner wall here
        compile_program("base box 4 2 1\nboss cyl 0.5 1\nhole 0.5\n")
    compile_program("base box 4 2 1\nboss cyl 0.5 1\nhole 0.49\n")


def test_compiler_rejects_a_boss_not_inside_the_base_naming_the_field():
    with pytest.raises(ToyCadError, match=r"^boss: ") as err:
        compile_program("base cyl 1 1\nboss box 1 1\n")
    assert err.value.field == "boss"
    compile_program("base cyl 1 1\nboss box 0.99 1\n")


def test_compiler_rejects_an_unknown_op_with_name_error():
    with pytest.raises(NameError, match="'bos'") as err:
        compile_program("base box 4 2 1\nbos cyl 0.5 1\n")
    assert isinstance(err.value, UnknownOpError) and err.value.line_number == 2
    for bad, field in [
        ("base box 4 2\n", "base.dims"),
        ("base tri 1 1\n", "base.kind"),
        ("base box 4 -2 1\n", "base.dims"),
        ("boss cyl 1 1\n", "base.kind"),
    ]:
        with pytest.raises(ToyCadError) as err:
            compile_program(bad)
        assert err.value.field == field, bad  # fmt: skip


def test_error_text_names_the_field_for_the_repair():
    assert field_named_in("ToyCadError: hole: radius too big") == "hole"
    assert field_named_in("boss: too wide") == "boss"
    assert field_named_in("UnknownOpError: unknown op 'bos' on line 2") is None


# ------------------------------------------------------------------ data and geometry
def test_toy_items_are_a_pure_function_of_the_seed_and_prompts_parse_back():
    a, b, c = make_toy_items(30, 0), make_toy_items(30, 0), make_toy_items(30, 1)
    assert a == b and a != c
    for item in a:
        assert parse_prompt(item.prompt) == item.solid
        assert compile_program(item.program) == item.solid
        assert format_program(item.solid) == item.program
    families = {write_prompt(a[0].solid, f) for f in range(3)}
    assert len(families) == 3 and all(parse_prompt(p) == a[0].solid for p in families)


def test_bad_prompt_and_sizes_are_named():
    with pytest.raises(ValueError, match="not a toy prompt"):
        parse_prompt("a teapot")
    with pytest.raises(ValueError, match="n_items"):
        make_toy_items(0, 0)


def test_identical_programs_score_zero_and_the_cube_is_cubic():
    item = make_toy_items(1, 3)[0]
    P = surface_points(occupancy(item.solid, 40), 1024, 0)
    Q = surface_points(occupancy(compile_program(item.program), 40), 1024, 0)
    assert score_clouds(P, Q, icp=False, icp_iterations=0).distance == 0.0
    grid = occupancy(compile_program("base box 4 2 1\n"), 40)
    assert grid.occ.shape == (40, 20, 10) and grid.occ.all()


# ------------------------------------------------------------------ answerer (item 7)
def test_answerer_says_yes_to_the_ground_truths_own_questions():
    rules = ToyAnswerRules(epsilon=0.0)
    renderer = ToyRenderer(40)
    agent = _agent(rules=rules)
    total = yes = 0
    for item in make_toy_items(200, 0):
        questions = agent.make_questions(item.prompt)
        answers = agent.answer(questions, renderer.render(item.solid), item.prompt)
        total += len(answers)
        yes += sum(a.label == "Yes" for a in answers)
    assert yes / total >= 0.95, yes / total


def test_answerer_sees_a_missing_hole_and_a_wrong_kind():
    rules = ToyAnswerRules(epsilon=0.0)
    agent = _agent(rules=rules)
    prompt = write_prompt(compile_program("base box 4 2 0.8\nhole 0.4\n"), 0)
    questions = agent.make_questions(prompt)
    wrong = ToyRenderer(40).render(compile_program("base cyl 2 0.8\n"))
    labels = {
        q.check: a.label
        for q, a in zip(questions, agent.answer(questions, wrong, prompt), strict=True)
    }
    assert labels["kind"] == "No" and labels["hole"] == "No"


def test_view_measures_agree_with_exact_measures():
    for item in make_toy_items(40, 5):
        seen = measure_views(ToyRenderer(40).render(item.solid), 0.97, 0.89)
        exact = measure_solid(item.solid)
        assert seen.kind == exact.kind
        assert seen.has_hole == exact.has_hole and seen.has_boss == exact.has_boss


def test_questions_follow_the_priority_order_and_cap():
    truth = compile_program("base box 4 2 0.8\nboss cyl 0.5 1\nhole 0.3\n")
    checks = [q.check for q in toy_questions(truth, 5)]
    assert checks == ["kind", "hole", "boss", "lw", "tl"]  # the sixth (hole size) is cut
    assert [q.check for q in toy_questions(truth, 6)][-1] == "hl"


# ------------------------------------------------------------------ agent and loop (item 8)
def _agent(seed: int = 0, rules: ToyAnswerRules | None = None, noise: ToyNoise | None = None):
    return ToyAgent(
        noise or ToyNoise(),
        rules or ToyAnswerRules(),
        np.random.default_rng(seed + 1000),
        np.random.default_rng(seed + 2000),
        np.random.default_rng(seed + 3000),
    )


class AlwaysYes(ToyAgent):
    def answer(self, questions, images, prompt):
        return [Answer("Yes") for _ in questions]


def test_loop_with_an_always_yes_answerer_returns_the_program_unchanged():
    for item in make_toy_items(40, 0):
        agent = AlwaysYes(
            ToyNoise(), ToyAnswerRules(), *(np.random.default_rng(s) for s in (1, 2, 3))
        )
        history = refine_loop(agent, ToyExecutor(), ToyRenderer(40), item.prompt, 2, 3)
        assert history[2].code == history[1].code == history[0].code  # byte for byte
        assert all(r.feedback is None for r in history)


def test_refine_rewrites_only_the_flagged_field():
    agent = _agent(noise=ToyNoise(0, 0, 0, 0))  # a noiseless writer
    prompt = write_prompt(compile_program("base box 4 2 0.8\nboss cyl 0.5 1\nhole 0.3\n"), 1)
    code = "base box 4 2 1.6\nboss cyl 0.5 1\n"  # thickness doubled, hole dropped
    fixed = agent.refine(
        prompt,
        code,
        QAVerifier(agent).agent.write_feedback(
            [q for q in agent.make_questions(prompt) if q.field == "hole"], [Answer("No")]
        ),
    )
    assert fixed.splitlines()[:2] == code.splitlines()  # other lines byte-identical
    assert fixed.splitlines()[2] == "hole 0.3"


def test_repair_regenerates_the_field_named_in_the_error():
    agent = _agent(noise=ToyNoise(0, 0, 0, 0))
    prompt = write_prompt(compile_program("base cyl 2 0.8\nhole 0.5\n"), 2)
    broken = "base cyl 2 0.8\nhol 0.5\n"
    error = ToyExecutor().execute(broken).error
    assert "unknown op 'hol'" in error
    assert agent.repair(prompt, broken, error) == "base cyl 2 0.8\nhole 0.5\n"


def test_generated_round_is_shared_by_every_verifier():
    cfg = compose("cadcodeverify", "smoke")
    items = make_toy_items(15, 0)
    first = {
        m: [h[0].code for h in run_toy_histories(m, 0, items, cfg)]
        for m in ("generated", "cadcodeverify", "premise3d", "random_answer")
    }
    assert len({tuple(v) for v in first.values()}) == 1


# ------------------------------------------------------------------ honesty (item 10)
def test_replacing_every_ground_truth_leaves_the_final_programs_identical():
    cfg = compose("cadcodeverify", "smoke")
    items = make_toy_items(25, 0)
    others = make_toy_items(25, 99)
    swapped = [
        dataclasses.replace(item, program=other.program, solid=other.solid)
        for item, other in zip(items, others, strict=True)
    ]
    for method in ("cadcodeverify", "premise3d", "random_answer"):
        real = run_toy_histories(method, 0, items, cfg)
        fake = run_toy_histories(method, 0, swapped, cfg)
        assert [h[-1].code for h in real] == [h[-1].code for h in fake], method
    # ... while the scores do read the ground truth (the swap is not a no-op)
    h = run_toy_histories("cadcodeverify", 0, items[:5], cfg)
    assert [score_toy(x, i, cfg) for x, i in zip(h, items[:5], strict=True)] != [
        score_toy(x, i, cfg) for x, i in zip(h, swapped[:5], strict=True)
    ]


def test_a_never_no_verifier_would_fail_claims_1_and_2():
    """Brief Sec. 5: 'a stub that never answers No fails (1)-(2)': it returns Generated."""
    items = make_toy_items(60, 0)
    cfg = compose("cadcodeverify", "smoke")
    agent = AlwaysYes(ToyNoise(), ToyAnswerRules(), *(np.random.default_rng(s) for s in (1, 2, 3)))
    scores = [
        score_toy(refine_loop(agent, ToyExecutor(), ToyRenderer(40), i.prompt, 2, 3), i, cfg)
        for i in items
    ]
    final = np.median([s[-1].distance for s in scores])
    generated = np.median([s[0].distance for s in scores])
    assert final == generated  # ratio 1 > 0.6, success gain 0 < 0.10


def test_first_try_compile_rate_by_hand():
    """Claim 5's statistic: compiled without a repair in that round; the final round's is
    unsuffixed (a repaired or failed program does not count)."""
    from papers.cadcodeverify.metrics import Score
    from papers.cadcodeverify.train import round_metrics

    ok, failed = Score(True, 0.0, 0.0, 1.0), Score(False, 1.7, 1.7, 0.0)
    metrics = round_metrics(
        [[ok, ok, failed, ok], [ok, ok, ok, ok]], [[0, 2, 3, 0], [0, 0, 1, 0]], 0.01
    )
    assert metrics["first_try_compile_rate_r0"] == 0.5
    assert metrics["first_try_compile_rate"] == metrics["first_try_compile_rate_r1"] == 0.75
    assert metrics["compile_rate_r0"] == 0.75 and metrics["compile_rate"] == 1.0


def test_a_refiner_that_breaks_programs_fails_claim_5_though_repair_hides_it():
    """Brief claim 5 (the final compile rate) cannot see a refiner that breaks every program it
    touches, since three repairs mend it; the first-run rate that claim 5 gates can."""
    from papers.cadcodeverify.claims import CLAIMS
    from papers.cadcodeverify.train import round_metrics
    from shared.claims import evaluate

    class BreakingRefiner(ToyAgent):
        def refine(self, prompt, code, feedback):
            return super().refine(prompt, code, feedback).replace("base ", "extrude ")

    cfg = compose("cadcodeverify", "smoke")
    items = make_toy_items(60, 0)
    results = {}
    for method, rounds, agent_class in (
        ("generated", 0, ToyAgent),
        ("cadcodeverify", 2, BreakingRefiner),
    ):
        agent = agent_class(
            ToyNoise(), ToyAnswerRules(), *(np.random.default_rng(s) for s in (1, 2, 3))
        )
        histories = [
            refine_loop(agent, ToyExecutor(), ToyRenderer(40), i.prompt, rounds, 3) for i in items
        ]
        scores = [score_toy(h, i, cfg) for h, i in zip(histories, items, strict=True)]
        by_round = [[s[k] for s in scores] for k in range(rounds + 1)]
        repairs = [[h[k].repairs for h in histories] for k in range(rounds + 1)]
        metrics = round_metrics(by_round, repairs, cfg.metric.success_distance)
        results[method] = {name: [value] for name, value in metrics.items()}
    verdicts = {v.name: v for v in evaluate([c for c in CLAIMS if c.name.startswith("5")], results)}
    assert not verdicts["5: first-run compile rate after CADCodeVerify >= Generated's - 0.01"].holds
    brief = next(v for name, v in verdicts.items() if name.startswith("5 (brief)"))
    assert brief.holds  # repair hides the breakage from the final compile rate
