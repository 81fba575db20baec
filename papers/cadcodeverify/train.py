"""CADCodeVerify experiment: ``python -m papers.cadcodeverify.train [scale=smoke|toy|paper]``.

No training: for every (method, seed), each prompt goes once through the shared loop of
``method.py`` (generate, repair, M verify-and-refine rounds) with the method's verifier, and
every round's program is scored against the ground truth (which only this file reads).

* Toy (brief Sec. 5): toycad programs from the stylised :class:`ToyAgent`; methods
  ``generated`` (no feedback), ``cadcodeverify``, ``premise3d``, ``random_answer`` (negative
  control) and ``geometric_solver`` (oracle reference).
* Paper (brief Sec. 6): CADPrompt from a local clone, chat models (an OpenAI-compatible
  endpoint or a local transformers model), CadQuery scripts run in the sandbox of
  ``sandbox.py`` (never in-process), four numpy-rasterised views, trimesh sampling and ICP.

Metrics per method: the final round's ``median_d`` (IQR), ``success`` (D < 0.01), IoGT,
``compile_rate``, the same per round (``*_r0`` 'Generated', ``*_r1`` 'Refine-1', ...), and
``success_gain`` = final success - Generated success.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

import numpy as np

from papers.cadcodeverify.agents import (
    LLMAgent,
    ToyAgent,
    ToyAnswerRules,
    ToyNoise,
    toy_geometric_solver,
)
from papers.cadcodeverify.backends import make_chat
from papers.cadcodeverify.config import ChatConfig, Config
from papers.cadcodeverify.data import (
    CADPromptItem,
    ToyItem,
    load_cadprompt,
    load_mesh,
    make_toy_items,
)
from papers.cadcodeverify.executors import SandboxedCadQueryExecutor, ToyExecutor
from papers.cadcodeverify.geometry import occupancy, surface_points
from papers.cadcodeverify.method import (
    Execution,
    Feedback,
    PremiseVerifier,
    QAVerifier,
    RandomAnswerVerifier,
    ReferenceVerifier,
    Round,
    refine_loop,
)
from papers.cadcodeverify.metrics import (
    Score,
    failed_score,
    score_clouds,
    summarise_scores,
)
from papers.cadcodeverify.render import MeshRenderer, ToyRenderer, views_image
from papers.cadcodeverify.sandbox import SandboxLimits, SandboxUnavailableError, choose_mode
from papers.cadcodeverify.toycad import compile_program
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.plotting import plt
from shared.preflight import missing_model_folders, missing_packages, missing_paths
from shared.records import Results, read_json, write_json
from shared.tables import markdown_table

HAS_TRAINABLE_PARAMETERS = False  # prompting and verification: nothing is trained
METHODS = ("generated", "cadcodeverify", "premise3d", "random_answer", "geometric_solver")
ITEMS_NAME, SHOWCASE_NAME, FIGURE_NAME = "items.jsonl", "showcase.json", "refinement.png"
STOP_KINDS = ("timeout", "memory", "processes", "other")
# Our own few-shot examples for question generation (the paper's are not public).
QUESTION_EXAMPLES = (
    (
        "A rectangular plate with a circular hole in its centre.",
        ["Is the main body a flat rectangular plate?", "Is there a circular hole?",
         "Is the hole in the centre of the plate?"],
    ),
    (
        "A cylinder with a smaller cylinder stacked on top.",
        ["Is there a larger cylinder at the bottom?", "Is there a smaller cylinder on top?"],
    ),
)  # fmt: skip


# ============================================================================ scoring
def round_metrics(
    scores_by_round: list[list[Score]], repairs_by_round: list[list[int]], success_distance: float
) -> dict:
    """Per-round summaries (``*_r<k>``), the final round's unsuffixed, and the success gain.

    ``first_try_compile_rate``: the fraction of a round's programs that ran without a repair.
    With N = 3 repairs the compile rate itself is ~1 for every method (a program fails only if
    four draws with the same noise fail), so whether refinement breaks programs shows here."""
    metrics: dict[str, float] = {}
    first_try = [
        float(np.mean([s.compiled and r == 0 for s, r in zip(scores, repairs, strict=True)]))
        for scores, repairs in zip(scores_by_round, repairs_by_round, strict=True)
    ]
    for k, scores in enumerate(scores_by_round):
        for name, value in summarise_scores(scores, success_distance).items():
            metrics[f"{name}_r{k}"] = value
        metrics[f"first_try_compile_rate_r{k}"] = first_try[k]
    final = summarise_scores(scores_by_round[-1], success_distance)
    metrics.update(final)
    metrics["first_try_compile_rate"] = first_try[-1]
    metrics["success_gain"] = final["success"] - metrics["success_r0"]
    return metrics


# ============================================================================ toy
@lru_cache(maxsize=65536)
def toy_cloud(program: str, cells_long: int, n_points: int, sampler_seed: int) -> np.ndarray:
    """Surface points of a compiled toy program (cached: most rounds leave programs as is)."""
    return surface_points(occupancy(compile_program(program), cells_long), n_points, sampler_seed)


def toy_agent(cfg: Config, seed: int) -> ToyAgent:
    t = cfg.toy
    return ToyAgent(
        ToyNoise(t.p_kind, t.p_dim, t.p_drop, t.p_syntax),
        toy_rules(cfg),
        np.random.default_rng(seed + t.generator_offset),
        np.random.default_rng(seed + t.refiner_offset),
        np.random.default_rng(seed + t.answer_offset),
    )


def toy_rules(cfg: Config) -> ToyAnswerRules:
    t = cfg.toy
    return ToyAnswerRules(
        t.box_fill, t.boss_narrowing, t.yes_tolerance, t.unclear_tolerance, t.epsilon,
        t.max_questions,
    )  # fmt: skip


def run_toy_histories(method: str, seed: int, items: list[ToyItem], cfg: Config):
    """Every item through the loop with ``method``'s verifier; one history per item.

    Only ``geometric_solver`` reads an item's ground truth (it is the oracle reference)."""
    agent = toy_agent(cfg, seed)
    executor, renderer = ToyExecutor(), ToyRenderer(cfg.toy.cells_long)
    rounds = 0 if method == "generated" else cfg.refine.rounds
    histories = []
    for item in items:
        if method == "random_answer":
            verifier = RandomAnswerVerifier(
                agent, cfg.refine.feedback_on_unclear, rng=agent.answer_rng,
                p_no=cfg.refine.random_p_no,
            )  # fmt: skip
        elif method == "premise3d":
            verifier = PremiseVerifier(agent)
        elif method == "geometric_solver":
            verifier = ReferenceVerifier(toy_geometric_solver(agent, item.solid, toy_rules(cfg)))
        else:
            verifier = QAVerifier(agent, cfg.refine.feedback_on_unclear)
        histories.append(
            refine_loop(
                agent, executor, renderer, item.prompt, rounds, cfg.refine.max_repair, verifier
            )
        )
    return histories


def score_toy(history: list[Round], item: ToyItem, cfg: Config) -> list[Score]:
    t, m = cfg.toy, cfg.metric
    truth = toy_cloud(item.program, t.cells_long, t.n_points, t.sampler_seed)
    return [
        score_clouds(toy_cloud(r.code, t.cells_long, t.n_points, t.sampler_seed), truth, False, 0)
        if r.execution.ok
        else failed_score(m.fail_distance, m.fail_iogt)
        for r in history
    ]


def run_toy_method(method: str, seed: int, run_dir: Path, cfg: Config) -> RunOutput:
    items = make_toy_items(cfg.toy.n_prompts, seed)
    histories = run_toy_histories(method, seed, items, cfg)
    scores = [score_toy(h, item, cfg) for h, item in zip(histories, items, strict=True)]
    n_rounds = len(histories[0])
    by_round = [[s[k] for s in scores] for k in range(n_rounds)]
    repairs = [[h[k].repairs for h in histories] for k in range(n_rounds)]
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / ITEMS_NAME).open("w") as f:
        for item, history, item_scores in zip(items, histories, scores, strict=True):
            f.write(json.dumps(item_record(item.index, history, item_scores)) + "\n")
    if seed == cfg.plot_seed:
        showcase = [
            {"prompt": it.prompt, "truth": it.program, "rounds": [r.code for r in h],
             "ok": [r.execution.ok for r in h], "d": [s.distance for s in sc]}
            for it, h, sc in list(zip(items, histories, scores, strict=True))[: cfg.plot_items]
        ]  # fmt: skip
        write_json({"items": showcase}, run_dir / SHOWCASE_NAME)
    return RunOutput(round_metrics(by_round, repairs, cfg.metric.success_distance))


def item_record(item_id, history: list[Round], scores: list[Score]) -> dict:
    """One item's rounds: compile state, what the sandbox stopped, repairs, D/H/IoGT."""
    return {
        "item": item_id,
        "rounds": [
            {
                "compiled": r.execution.ok,
                "stopped": r.execution.stopped,
                "error": r.execution.error[-300:],
                "repairs": r.repairs,
                "feedback": r.feedback.text if r.feedback else None,
                "answers": [a.label for a in r.answers],
                "d": s.distance,
                "h": s.hausdorff,
                "iogt": s.iogt,
            }
            for r, s in zip(history, scores, strict=True)
        ],
    }


# ============================================================================ paper scale
def chat_from(c: ChatConfig):
    if c.backend == "openai":
        return make_chat("openai", base_url=c.base_url, model=c.model,
                         api_key_env=c.api_key_env, timeout=c.timeout_s)  # fmt: skip
    return make_chat(c.backend, model_dir=c.model_dir, device=c.device)


def mesh_properties(mesh) -> dict[str, float]:
    """The geometric solver's properties (paper Eq. 5-6), measured on a triangle mesh with
    trimesh for both solids (counts are of triangles, edges and vertices of the mesh)."""
    lo, hi = mesh.bounds
    w, h, d = (hi - lo).tolist()
    centre = ((lo + hi) / 2).tolist()
    return {
        "faces": len(mesh.faces),
        "unique_edges": len(mesh.edges_unique),
        "vertices": len(mesh.vertices),
        "width": w, "height": h, "depth": d,
        "bbox_centre": [round(c, 4) for c in centre],
        "aspect_xy": w / h if h else 0.0, "aspect_xz": w / d if d else 0.0,
        "aspect_yz": h / d if d else 0.0,
        "is_solid": bool(mesh.is_watertight),
        "volume": float(mesh.volume) if mesh.is_watertight else 0.0,
        "surface_area": float(mesh.area),
    }  # fmt: skip


def properties_feedback(truth_properties: dict):
    """Geometric solver* (Eq. 5-6): the generated and ground-truth properties, concatenated."""

    def reference_feedback(prompt: str, code: str, execution: Execution) -> Feedback | None:
        generated = mesh_properties(execution.artifact)
        text = (
            "Geometric properties of the generated solid: " + json.dumps(generated)
            + ". Geometric properties of the target solid: " + json.dumps(truth_properties)
            + ". Change the code so that the generated properties match the target's."
        )  # fmt: skip
        return Feedback(text, ("geometry",))

    return reference_feedback


def few_shot_examples(items: list[CADPromptItem], index: int, k: int, seed: int):
    """k (prompt, code) pairs of *other* items, drawn per item and seed."""
    others = [i for i in range(len(items)) if i != index]
    rng = np.random.default_rng([seed, index])
    chosen = rng.choice(others, size=min(k, len(others)), replace=False) if others else []
    return [(items[i].prompt, items[i].code) for i in chosen]


def sample_mesh(mesh, n_points: int, seed: int) -> np.ndarray:
    import trimesh

    points, _ = trimesh.sample.sample_surface(mesh, n_points, seed=seed)
    return np.asarray(points)


def run_cadprompt_method(method: str, seed: int, run_dir: Path, cfg: Config) -> RunOutput:
    c, m = cfg.cadprompt, cfg.metric
    items = load_cadprompt(c.cadprompt_dir, c.max_items or None)
    generator = chat_from(c.generator)
    verifier_chat = chat_from(c.verifier) if c.separate_verifier else None
    gen = {"temperature": c.generator.temperature, "max_tokens": c.generator.max_tokens,
           "seed": seed}  # fmt: skip
    verifier_gen = (
        {"temperature": c.verifier.temperature, "max_tokens": c.verifier.max_tokens, "seed": seed}
        if c.separate_verifier
        else None
    )
    executor = SandboxedCadQueryExecutor(SandboxLimits(**asdict(c.sandbox)), c.output_name)
    renderer = MeshRenderer(c.views, c.elevation, c.image_size)
    rounds = 0 if method == "generated" else cfg.refine.rounds
    rng = np.random.default_rng(seed + cfg.toy.answer_offset)
    run_dir.mkdir(parents=True, exist_ok=True)
    by_round: list[list[Score]] = [[] for _ in range(rounds + 1)]
    repairs: list[list[int]] = [[] for _ in range(rounds + 1)]
    stops = dict.fromkeys(STOP_KINDS, 0)
    with (run_dir / ITEMS_NAME).open("w") as f:
        for index, item in enumerate(items):
            truth_mesh = load_mesh(item.mesh_path)
            examples = (
                few_shot_examples(items, index, c.n_examples, seed)
                if c.codegen == "few_shot" else []
            )  # fmt: skip
            agent = LLMAgent(
                generator, verifier_chat, examples=examples,
                question_examples=QUESTION_EXAMPLES if c.qa_examples == "few_shot" else (),
                output_name=c.output_name, gen=gen, verifier_gen=verifier_gen,
            )  # fmt: skip
            verifier = paper_verifier(method, agent, truth_mesh, rng, cfg)
            history = refine_loop(
                agent, executor, renderer, item.prompt, rounds, cfg.refine.max_repair, verifier
            )
            truth = sample_mesh(truth_mesh, c.n_points, seed)
            scores = [
                score_clouds(sample_mesh(r.execution.artifact, c.n_points, seed), truth,
                             c.icp, c.icp_iterations)
                if r.execution.ok else failed_score(m.fail_distance, m.fail_iogt)
                for r in history
            ]  # fmt: skip
            for k, (s, r) in enumerate(zip(scores, history, strict=True)):
                by_round[k].append(s)
                repairs[k].append(r.repairs)
            for r in history:
                if r.execution.stopped in stops:
                    stops[r.execution.stopped] += 1
            f.write(json.dumps(item_record(item.item_id, history, scores)) + "\n")
    metrics = round_metrics(by_round, repairs, m.success_distance)
    metrics.update({f"stopped_{kind}": float(n) for kind, n in stops.items()})
    # Which sandbox ran the programs: "unconfined" counts only under the unsafe opt-in.
    metrics.update({f"sandbox_runs_{mode}": float(n) for mode, n in executor.runs_by_mode.items()})
    return RunOutput(metrics)


def paper_verifier(method: str, agent: LLMAgent, truth_mesh, rng, cfg: Config):
    """The verifier of ``method`` at paper scale (None: 'generated' runs no round)."""
    if method == "cadcodeverify":
        return QAVerifier(agent, cfg.refine.feedback_on_unclear)
    if method == "random_answer":
        return RandomAnswerVerifier(
            agent, cfg.refine.feedback_on_unclear, rng=rng, p_no=cfg.refine.random_p_no
        )
    if method == "premise3d":
        return PremiseVerifier(agent)
    if method == "geometric_solver":  # the upper reference: reads the ground truth
        return ReferenceVerifier(properties_feedback(mesh_properties(truth_mesh)))
    return None


def preflight(cfg: Config) -> list[str]:
    """Paper scale reads CADPrompt from a local clone, talks to configured models, and runs
    CadQuery (optional extra) in the sandbox; name everything missing, on one line."""
    if cfg.benchmark != "cadprompt":
        return []
    c = cfg.cadprompt
    hint = " (a local path; nothing is downloaded, see configs/cadcodeverify/paper.yaml)"
    problems = missing_paths({"cadprompt.cadprompt_dir": c.cadprompt_dir}, hint)
    problems += missing_packages(
        {"trimesh": "pip install trimesh", "cadquery": "pip install cadquery (extra [cad])"}
    )
    chats = {"cadprompt.generator": c.generator}
    if c.separate_verifier:
        chats["cadprompt.verifier"] = c.verifier
    for name, chat in chats.items():
        if chat.backend == "openai" and not chat.base_url:
            problems.append(f"{name}.base_url is not set (an OpenAI-compatible endpoint)")
        elif chat.backend == "hf":
            problems += missing_model_folders({f"{name}.model_dir": chat.model_dir}, hint)
    try:  # model-written code runs only where a sandbox holds (or under the unsafe opt-in)
        choose_mode(SandboxLimits(**asdict(c.sandbox)))
    except (SandboxUnavailableError, ValueError) as err:
        problems.append(str(err))
    return problems


# ============================================================================ figure
def draw_figure(cfg: Config, results: Results, out_dir: Path) -> None:
    """Success per round for each method, and, for the first prompts of ``plot_seed``, the
    ground truth's views beside the generated object's views after each round."""
    methods = [m for m in results if "success_r0" in results[m]]
    source = next((m for m in ("cadcodeverify", *methods) if m in results), None)
    showcase_path = out_dir / "runs" / f"{source}-s{cfg.plot_seed}" / SHOWCASE_NAME
    showcase = read_json(showcase_path)["items"] if showcase_path.is_file() else []
    n_rows = 1 + len(showcase)
    n_cols = max(1 + max((len(s["rounds"]) for s in showcase), default=0), 2)
    fig = plt.figure(figsize=(3.0 * n_cols, 2.2 * n_rows), dpi=70)
    grid = fig.add_gridspec(n_rows, n_cols)
    ax = fig.add_subplot(grid[0, :])
    for method in methods:
        ks = sorted(int(k.rsplit("_r", 1)[1]) for k in results[method] if k.startswith("success_r"))
        means = [np.mean(results[method][f"success_r{k}"]) for k in ks]
        ax.plot(ks, means, marker="o", label=method)
    ax.set_xlabel("round (0 = Generated)")
    ax.set_ylabel("success (D < 0.01)")
    ax.set_xticks(range(cfg.refine.rounds + 1))
    ax.legend(fontsize=7, ncol=3)
    ax.set_title(f"{cfg.benchmark}: success rate per refinement round, mean over seeds")
    toy = cfg.benchmark == "toy"
    for row, item in enumerate(showcase, start=1):
        panels = [("ground truth", item["truth"], True, None)] + [
            (f"round {k}", code, ok, d)
            for k, (code, ok, d) in enumerate(
                zip(item["rounds"], item["ok"], item["d"], strict=True)
            )
        ]
        for col, (title, code, ok, d) in enumerate(panels):
            a = fig.add_subplot(grid[row, col])
            a.axis("off")
            if toy and ok:
                a.imshow(views_image(ToyRenderer(cfg.toy.cells_long).render(
                    compile_program(code))), cmap="viridis")  # fmt: skip
            label = title if d is None else f"{title}: D={d:.3f}" if ok else f"{title}: failed"
            a.set_title(label, fontsize=8)
    fig.suptitle("top (height) | front | side views, per prompt", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_dir / FIGURE_NAME)
    plt.close(fig)


# ============================================================================ entry
def run(cfg: Config, out_dir: Path) -> Results:
    """Every (method, seed): the loop over the benchmark's prompts, scored per round."""
    check_names("methods", cfg.methods, METHODS)
    out_dir = Path(out_dir)
    one = run_toy_method if cfg.benchmark == "toy" else run_cadprompt_method
    results, _ = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        lambda method, seed, run_dir: one(method, seed, run_dir, cfg),
        progress=cfg.runtime.progress,
        logger=MetricsLogger(out_dir / "metrics.jsonl"),
    )
    draw_figure(cfg, results, out_dir)
    print("\n" + round_table(results))
    return results


def round_table(results: Results) -> str:
    """Per method and round: median D (IQR), success, mean IoGT, compile rate (seed means)."""
    rows = []
    for method, metrics in results.items():
        k = 0
        while f"median_d_r{k}" in metrics:
            mean = {
                name: float(np.mean(metrics[f"{name}_r{k}"]))
                for name in ("median_d", "iqr_d", "success", "mean_iogt", "compile_rate")
            }
            name = "Generated" if k == 0 else f"Refine-{k}"
            rows.append([method, name, f"{mean['median_d']:.4f} ({mean['iqr_d']:.4f})",
                         f"{mean['success']:.3f}", f"{mean['mean_iogt']:.3f}",
                         f"{mean['compile_rate']:.3f}"])  # fmt: skip
            k += 1
    header = ["method", "round", "median D (IQR)", "success", "IoGT", "compile rate"]
    return markdown_table(header, rows)


if __name__ == "__main__":
    main("cadcodeverify")
