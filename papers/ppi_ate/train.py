"""PPI-ATE experiment: ``python -m papers.ppi_ate.train [scale=smoke|toy|paper|real]``.

No training loop: every replication draws D1 and D2, fits the nuisances and the CATE model,
and computes the D1-only AIPW, PPI and D2-only intervals of the ATE (brief Sec. 3.2-3.3).
Coverage, mean half-width and bias are aggregated over replications, which are checkpointed.
``scale=real`` (configs/ppi_ate/real.yaml) splits real experiments instead: each
replication is a random split into D1 and a confounded D2, scored against the full
experiment's difference in means, with a covariate-shift check of D1 against D2.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from papers.ppi_ate.claims import LABELS, REAL_LABELS, config_labels
from papers.ppi_ate.config import CSV_DATASET, REAL, Config, SettingConfig, is_off
from papers.ppi_ate.data import (
    REAL_ASSET,
    TOY_TRUE_ATE,
    Dataset,
    gp_draw,
    make_gp_world,
    n_d1_problem,
    real_draw,
    setting_data,
    toy_draw,
)
from papers.ppi_ate.method import (
    Interval,
    aipw_interval,
    aipw_pseudo_outcomes,
    check_dataset,
    cross_fit_nuisances,
    d2_only_interval,
    dr_learner,
    ppi_interval,
    shift_check,
    split_d2,
    t_learner,
)
from papers.ppi_ate.model import final_stage_factory, outcome_factory, propensity_factory
from shared import assets
from shared.entry import main
from shared.experiment import RunOutput, check_names, enabled_settings, run_grid
from shared.logger import MetricsLogger
from shared.plotting import plt
from shared.records import Results, by_setting
from shared.replications import run_replications

HAS_TRAINABLE_PARAMETERS = False  # a statistics paper: nothing is trained
METHODS = ("aipw", "ppi", "d2_only", "ppi_fit_on_d1")
REAL_ASSETS = (REAL_ASSET,)  # scale=real reads causaldata's files (shared/assets.py)


def active_settings(cfg: Config) -> dict[str, SettingConfig]:
    """The settings that run: not null, and not a csv slot still without its file."""
    active = {n: s for n, s in enabled_settings(cfg.settings).items() if not is_off(s)}
    if not active:
        raise ValueError(
            "no settings to run: every one is null or a csv slot without its file "
            "(settings.own.path=<your experiment.csv>)"
        )
    return active


def _real_settings(cfg: Config) -> dict[str, SettingConfig]:
    return {n: s for n, s in active_settings(cfg).items() if s.generator == REAL}


def real_assets(cfg: Config) -> tuple[str, ...]:
    """The assets this config reads: causaldata, unless every real setting is a user's CSV."""
    own = all(s.real_dataset == CSV_DATASET for s in _real_settings(cfg).values())
    return () if own and _real_settings(cfg) else REAL_ASSETS


def user_files(cfg: Config) -> dict[str, str]:
    """Each real_dataset=csv setting's file, by its key (recorded with its sha256)."""
    return {
        f"settings.{name}.path": setting.path
        for name, setting in _real_settings(cfg).items()
        if setting.real_dataset == CSV_DATASET
    }


def data_preflight(cfg: Config) -> list[str]:
    """Every scale, before the first replication: each enabled real setting's experiment is
    read once (a user's CSV checked column by column) and the keys only its data can check
    (D1's size against its usable units) are refused naming the full key, instead of after the
    settings before it have run. A missing asset is named instead (scale=real has checked it
    already, through ``real_assets``)."""
    real = _real_settings(cfg)
    shipped = [name for name, s in real.items() if s.real_dataset != CSV_DATASET]
    absent = assets.missing(REAL_ASSETS) if shipped else []
    if absent:
        keys = ", ".join(f"settings.{name}.generator" for name in shipped)
        return [f"{keys}={REAL} reads {REAL_ASSET}: {problem}" for problem in absent]
    problems = []
    for name, setting in real.items():
        try:
            data = setting_data(setting)
        except ValueError as err:  # a user's file: the message names the file and the column
            if setting.real_dataset != CSV_DATASET:
                raise
            problems.append(f"settings.{name}.path: {err}")
            continue
        problem = n_d1_problem(setting.n_d1, data)
        if problem:
            problems.append(f"settings.{name}.n_d1={setting.n_d1}: {problem}")
    return problems


def intervals(
    d1: Dataset,
    d2: Dataset,
    setting: SettingConfig,
    cfg: Config,
    methods: list[str],
    rng: np.random.Generator,
    shared: np.ndarray | None = None,
) -> dict[str, Interval]:
    """Every requested interval for one pair of data sets (brief Sec. 3.2 steps 1-7).

    ``shared``: the columns of D1's X that D2 also has (the CATE model's inputs); default all.
    D1's own nuisances use every D1 column.
    """
    check_dataset("D1", d1.x, d1.a, d1.y)
    check_dataset("D2", d2.x, d2.a, d2.y)
    learners = cfg.learners
    make_regressor = outcome_factory(learners)  # D2's CATE model and its nuisances
    known = (
        setting.rct_propensity
        if (setting.d1_design == "rct" and setting.use_known_propensity)
        else None
    )
    d1_classifier = None if known is not None else propensity_factory(learners, "d1_propensity")
    clip = tuple(learners.propensity_clip)

    # Step 4: AIPW pseudo-outcomes on D1 with cross-fitted nuisances (Sec. 3.4), from D1's
    # own learners (the official code: linear / logistic regression), not D2's.
    d1_regressor = outcome_factory(learners, "d1_outcome")
    mu0, mu1, e = cross_fit_nuisances(
        d1.x, d1.a, d1.y, d1_regressor, d1_classifier, known, learners.n_folds, clip, rng
    )
    phi = aipw_pseudo_outcomes(d1.y, d1.a, mu0, mu1, e, cfg.aipw_variant)  # (n,)

    # Steps 1-2: CATE model on D2's training half; step 3 uses the evaluation half.
    train, evaluate = split_d2(len(d2.y))
    check_dataset("D2 (training half)", d2.x[train], d2.a[train], d2.y[train])
    if learners.cate == "t_learner":
        f = t_learner(d2.x[train], d2.a[train], d2.y[train], make_regressor)
    elif learners.cate == "dr_learner":
        f = dr_learner(
            d2.x[train],
            d2.a[train],
            d2.y[train],
            make_regressor,
            propensity_factory(learners),
            final_stage_factory(),
            learners.n_folds,
            clip,
            rng,
        )
    else:
        raise ValueError(f"unknown learners.cate {learners.cate!r}: t_learner or dr_learner")
    x1_shared = d1.x if shared is None else d1.x[:, shared]
    f_d1, f_d2_eval = f(x1_shared), f(d2.x[evaluate])  # (n,), (N_ev,)

    out = {}
    if "aipw" in methods:
        out["aipw"] = aipw_interval(phi, cfg.alpha)
    if "ppi" in methods:
        out["ppi"] = ppi_interval(phi, f_d1, f_d2_eval, cfg.alpha)  # steps 5-7
    if "d2_only" in methods:
        out["d2_only"] = d2_only_interval(f_d2_eval, cfg.alpha)
    if "ppi_fit_on_d1" in methods:  # ablation: measure of fit on D1's own X (Sec. 3.4)
        out["ppi_fit_on_d1"] = ppi_interval(phi, f_d1, f_d1, cfg.alpha)
    return out


def interval_records(by_method: dict, target: float) -> dict[str, list[float]]:
    """One replication's record per method: whether its interval covers ``target``, its
    half-width and its point estimate."""
    records = {}
    for method, interval in by_method.items():
        records[f"{method}/covered"] = [float(interval.covers(target))]
        records[f"{method}/half_width"] = [interval.half_width]
        records[f"{method}/estimate"] = [interval.estimate]
    return records


def replicate(
    one_replication, name: str, seed: int, run_dir: Path, cfg: Config, logger: MetricsLogger
) -> dict:
    """``cfg.replications`` draws of ``one_replication`` from one seeded stream, checkpointed
    and resumable (``shared.replications.run_replications``)."""
    return run_replications(
        one_replication,
        cfg.replications,
        seed,
        run_dir,
        checkpoint_every=cfg.checkpoint_every,
        logger=logger,
        tags={"setting": name, "seed": seed},
        log_keys=tuple(f"{m}/covered" for m in cfg.methods),
        progress=cfg.runtime.progress,
        desc=name,
    )


def run_setting(
    name: str,
    setting: SettingConfig,
    seed: int,
    run_dir: Path,
    cfg: Config,
    logger: MetricsLogger,
) -> RunOutput:
    """All replications of one setting: coverage, mean half-width and bias per method."""
    if setting.generator == "closed_form":
        true_ate, world = TOY_TRUE_ATE, None
    elif setting.generator == "gp":
        world = make_gp_world(setting)
        true_ate = world.true_ate
    else:
        raise ValueError(f"unknown generator {setting.generator!r}: closed_form, gp or real")

    def one_replication(rep: int, rng: np.random.Generator) -> dict[str, list[float]]:
        d1, d2 = toy_draw(setting, rng) if world is None else gp_draw(setting, world, rng)
        return interval_records(intervals(d1, d2, setting, cfg, cfg.methods, rng), true_ate)

    records = replicate(one_replication, name, seed, run_dir, cfg, logger)
    metrics, curves = {"true_ate": true_ate}, {}
    for method in cfg.methods:
        estimates = np.asarray(records[f"{method}/estimate"])
        metrics[f"{method}.coverage"] = float(np.mean(records[f"{method}/covered"]))
        metrics[f"{method}.half_width"] = float(np.mean(records[f"{method}/half_width"]))
        metrics[f"{method}.bias"] = float(estimates.mean() - true_ate)
        keep = slice(0, cfg.plot_replications)
        curves[f"{method}.estimate"] = estimates[keep].tolist()
        curves[f"{method}.half_width"] = records[f"{method}/half_width"][keep]
    return RunOutput(metrics=metrics, curves=curves)


def run_real_setting(
    name: str,
    setting: SettingConfig,
    seed: int,
    run_dir: Path,
    cfg: Config,
    logger: MetricsLogger,
) -> RunOutput:
    """Random splits of one real experiment (``data.real_draw``): coverage of the full
    experiment's difference in means, mean half-width and bias per method, the bias in units
    of AIPW's mean half-width, and the covariate-shift check's flag rate and mean max |SMD|."""
    data = setting_data(setting)
    reference = data.reference

    def one_replication(rep: int, rng: np.random.Generator) -> dict[str, list[float]]:
        d1, d2, shared = real_draw(setting, data, rng)
        by_method = intervals(d1, d2, setting, cfg, cfg.methods, rng, shared)
        records = interval_records(by_method, reference)
        check = shift_check(d1.x[:, shared], d2.x, cfg.shift_alpha, cfg.shift_smd)
        records["shift_check/flagged"] = [float(check.flagged)]
        records["shift_check/max_smd"] = [check.max_abs_smd]
        records["data/n_d2"] = [float(len(d2.y))]
        return records

    records = replicate(one_replication, name, seed, run_dir, cfg, logger)
    metrics, curves = {"true_ate": reference}, {}
    aipw_width = (
        float(np.mean(records["aipw/half_width"])) if "aipw" in cfg.methods else float("nan")
    )
    for method in cfg.methods:
        estimates = np.asarray(records[f"{method}/estimate"])
        bias = float(estimates.mean() - reference)
        metrics[f"{method}.coverage"] = float(np.mean(records[f"{method}/covered"]))
        metrics[f"{method}.half_width"] = float(np.mean(records[f"{method}/half_width"]))
        metrics[f"{method}.bias"] = bias
        metrics[f"{method}.bias_over_aipw_hw"] = bias / aipw_width
        keep = slice(0, cfg.plot_replications)
        curves[f"{method}.estimate"] = estimates[keep].tolist()
        curves[f"{method}.half_width"] = records[f"{method}/half_width"][keep]
    metrics["shift_check.flagged"] = float(np.mean(records["shift_check/flagged"]))
    metrics["shift_check.max_smd"] = float(np.mean(records["shift_check/max_smd"]))
    metrics["shift_check.n_d2"] = float(np.mean(records["data/n_d2"]))
    return RunOutput(metrics=metrics, curves=curves)


def plot_intervals(curves: dict, metrics: dict, cfg: Config, path: Path) -> None:
    """Estimate ± half-width of the first replications, per setting and method."""
    labels, settings = LABELS | REAL_LABELS | config_labels(cfg), active_settings(cfg)
    names = list(curves)
    fig, axes = plt.subplots(1, len(names), figsize=(5.6 * len(names), 4.6), dpi=120, squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        truth = metrics[name]["true_ate"][0]
        offsets = np.linspace(-0.25, 0.25, len(cfg.methods))
        for offset, method in zip(offsets, cfg.methods, strict=True):
            est = np.asarray(curves[name][f"{method}.estimate"][0])
            hw = np.asarray(curves[name][f"{method}.half_width"][0])
            reps = np.arange(est.size) + offset
            ax.errorbar(
                reps,
                est,
                yerr=hw,
                fmt="o",
                markersize=2.5,
                linewidth=0.9,
                label=labels.get(f"{name}/{method}", method).split(": ", 1)[-1],
            )
        real = settings[name].generator == "real"
        truth_label = "reference: the experiment's difference in means" if real else "true ATE"
        ax.axhline(truth, color="black", linewidth=1.0, linestyle="--", label=truth_label)
        ax.set_title(f"{name}: {1 - cfg.alpha:.0%} intervals, first {est.size} replications")
        ax.set_xlabel("replication")
        ax.set_ylabel("ATE")
        ax.legend(
            frameon=False, fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14)
        )
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def run(cfg: Config, out_dir: Path) -> Results:
    """Every setting (with resume), the interval plot, and the per-method results."""
    check_names("methods", cfg.methods, METHODS)
    settings = active_settings(cfg)
    logger = MetricsLogger(Path(out_dir) / "metrics.jsonl")
    per_setting, curves = run_grid(
        list(settings),
        cfg.seeds,
        out_dir,
        lambda name, seed, run_dir: (
            run_real_setting if settings[name].generator == "real" else run_setting
        )(name, settings[name], seed, run_dir, cfg, logger),
        progress=cfg.runtime.progress,
    )
    results = by_setting(per_setting)
    plot_intervals(curves, per_setting, cfg, Path(out_dir) / "intervals.png")
    return results


if __name__ == "__main__":
    main("ppi_ate")
