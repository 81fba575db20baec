"""CBMA experiment: ``python -m papers.conformal_bma.train [scale=smoke|toy|paper] [key=value]``.

No training loop: for every setting, every replication draws a training set and test points,
fits each candidate's closed-form NIG posterior once, and at every test input computes the
full-conformal p-values of CB (one per candidate) and of CBMA over the whole y-grid plus the
true response (brief Sec. 3.3 algorithm). Coverage is read from pi(Y_true) itself, set size
as Lebesgue measure on the grid (Sec. 3.1). Replications are checkpointed, so an interrupted
run resumes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from papers.conformal_bma.claims import LABELS, REAL_LABELS, REAL_PLOT
from papers.conformal_bma.config import Config, SettingConfig
from papers.conformal_bma.data import RealDataError, RealTable, load_real, simulate
from papers.conformal_bma.method import (
    ModelSpec,
    NIGPrior,
    check_inputs,
    conformal_set_by_model,
    fit_nig,
    log_predictive,
    set_size,
)
from shared.entry import main
from shared.experiment import RunOutput, check_names, enabled_settings, run_grid
from shared.logger import MetricsLogger
from shared.plotting import plt
from shared.preflight import missing_paths
from shared.records import Results, by_setting
from shared.replications import run_replications

HAS_TRAINABLE_PARAMETERS = False  # a statistics paper: nothing is trained
METHODS = ("cb", "cbma", "cbma_frozen", "bma_credible", "split_conformal")
# What fetch_california_housing(data_home=data_root) reads (scikit-learn's Python 3 cache name).
CALIFORNIA_CACHE = "cal_housing_py3.pkz"
# scale=real: the pinned assets the entry point verifies before any work (shared/assets.py).
REAL_ASSETS = ("diabetes",)


def candidate_specs(setting: SettingConfig, table: RealTable | None = None) -> list[ModelSpec]:
    """The candidates of a setting; a candidate's ``columns`` (names) become indices into the
    real table's input columns (simulated data have one input and take none)."""
    specs = []
    for m in setting.models:
        columns = None
        if m.columns is not None:
            if table is None:
                raise ValueError(
                    f"model {m.name!r} names columns {m.columns}, but only a real table has "
                    "named columns (simulated data have one input)"
                )
            columns = table.column_indices(m.columns, m.name)
        specs.append(ModelSpec(m.name, m.degree, m.variance, m.variance_offset, columns))
    return specs


def log_model_prior(name: str, setting: SettingConfig) -> np.ndarray:
    """(K,) log prior model probabilities of a setting (brief Sec. 3: omega_k(y) is
    proportional to p(M_k) m_k(Z^y)): uniform when ``model_prior`` is unset, else its weights
    normalised to sum to 1; refuses a list of the wrong length or with a weight that is not
    positive and finite, naming the key."""
    K = len(setting.models)
    if setting.model_prior is None:
        return np.full(K, -np.log(K))
    weights = np.asarray(setting.model_prior, dtype=float)
    if weights.shape != (K,) or not np.all(np.isfinite(weights)) or not np.all(weights > 0):
        models = [m.name for m in setting.models]
        raise ValueError(
            f"settings.{name}.model_prior must hold one positive, finite weight per model "
            f"({K}: {models}, in that order), got {list(setting.model_prior)}"
        )
    return np.log(weights / weights.sum())


def method_names(setting: SettingConfig, methods: list[str]) -> list[str]:
    """Reported rows of one setting: ``cb_<candidate>`` for each candidate, then the rest."""
    names = []
    for method in methods:
        if method == "cb":
            names += [f"cb_{m.name}" for m in setting.models]
        else:
            names.append(method)
    return names


def bma_credible_interval(
    posteriors,
    models: list[ModelSpec],
    x_new: np.ndarray,
    grid: np.ndarray,
    alpha: float,
    log_model_post: np.ndarray,
) -> tuple[float, float]:
    """Central (1 - alpha) interval of the BMA posterior predictive on the grid (baseline)."""
    log_density = logsumexp(
        [
            lw
            + log_predictive(post, m.features(x_new)[0], float(m.variance_profile(x_new)[0]), grid)
            for lw, post, m in zip(log_model_post, posteriors, models, strict=True)
        ],
        axis=0,
    )  # (G,)
    cdf = np.cumsum(np.exp(log_density - log_density.max()))
    cdf /= cdf[-1]
    low = grid[np.searchsorted(cdf, alpha / 2.0)]
    high = grid[min(np.searchsorted(cdf, 1.0 - alpha / 2.0), grid.size - 1)]
    return float(low), float(high)


def split_conformal(
    x: np.ndarray, y: np.ndarray, degree: int, alpha: float
) -> tuple[np.ndarray, float]:
    """OLS on the first half, absolute-residual quantile on the second (baseline).

    Returns the fitted coefficients and the half-width q (inf when the calibration set is too
    small for level alpha)."""
    spec = ModelSpec("split", degree)
    half = len(y) // 2
    coef, *_ = np.linalg.lstsq(spec.features(x[:half]), y[:half], rcond=None)
    resid = np.sort(np.abs(y[half:] - spec.features(x[half:]) @ coef))
    rank = int(np.ceil((resid.size + 1) * (1.0 - alpha)))
    return coef, (float(resid[rank - 1]) if rank <= resid.size else np.inf)


def sizes(setting: SettingConfig, cfg: Config) -> tuple[int, int, int]:
    """(n_train, n_test, replications) of a setting: its own values, else the experiment's."""
    return (
        setting.n_train or cfg.n_train,
        setting.n_test or cfg.n_test,
        setting.replications or cfg.replications,
    )


def exact_coverage(n: int, alpha: float) -> float:
    """Full conformal's coverage with continuous, tie-free scores: 1 - floor(alpha (n+1))/(n+1)
    (brief Sec. 3.1)."""
    return 1.0 - np.floor(alpha * (n + 1)) / (n + 1)


def draw_replication(setting: SettingConfig, cfg: Config, rng, real=None):
    """Training and test data of one replication."""
    n_train, n_test, _ = sizes(setting, cfg)
    n_total = n_train + n_test
    if setting.source == "simulated":
        x, y = simulate(setting, n_total, rng)
    else:
        X, Y = real.X, real.y
        if n_total > len(Y):
            raise ValueError(f"n_train + n_test = {n_total} exceeds the {len(Y)} data points")
        pick = rng.choice(len(Y), size=n_total, replace=False)
        x, y = X[pick], Y[pick]
    x_tr, y_tr, x_te, y_te = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    if cfg.standardise:
        mu_x, sd_x = x_tr.mean(axis=0), x_tr.std(axis=0)
        sd_x = np.where(sd_x > 0, sd_x, 1.0)  # a column constant on this split stays as is
        mu_y, sd_y = y_tr.mean(), y_tr.std()
        x_tr, x_te = (x_tr - mu_x) / sd_x, (x_te - mu_x) / sd_x
        y_tr, y_te = (y_tr - mu_y) / sd_y, (y_te - mu_y) / sd_y
    return x_tr, y_tr, x_te, y_te


def y_grid(y_train: np.ndarray, cfg: Config) -> np.ndarray:
    """[min y - m sd, max y + m sd] with G points (Sec. 3.3 step 2)."""
    margin = cfg.grid_margin_sd * y_train.std()
    return np.linspace(y_train.min() - margin, y_train.max() + margin, cfg.grid_size)


def run_setting(
    name: str,
    setting: SettingConfig,
    seed: int,
    run_dir: Path,
    cfg: Config,
    logger: MetricsLogger | None = None,
) -> RunOutput:
    """All replications of one setting; returns per-method coverage and mean set size."""
    real = None if setting.source == "simulated" else load_real(setting, cfg.data_root)
    models = candidate_specs(setting, real)
    prior = NIGPrior(cfg.prior.g, cfg.prior.a0, cfg.prior.b0)
    log_prior = log_model_prior(name, setting)
    names = method_names(setting, cfg.methods)
    if setting.coverage_only:  # sizes need a grid; these baselines need one too
        names = [n for n in names if n not in ("bma_credible", "split_conformal")]
    n_train, _, replications = sizes(setting, cfg)
    true_idx = next((k for k, m in enumerate(models) if m.name == setting.true_model), None)

    def one_replication(rep: int, rng: np.random.Generator) -> dict[str, list[float]]:
        records: dict[str, list[float]] = {}

        def add(key: str, value: float) -> None:
            records.setdefault(key, []).append(value)

        x_tr, y_tr, x_te, y_te = draw_replication(setting, cfg, rng, real)
        check_inputs(x_tr, y_tr, models, cfg.alpha)
        grid = np.empty(0) if setting.coverage_only else y_grid(y_tr, cfg)
        step = grid[1] - grid[0] if grid.size > 1 else 0.0
        x_tr2 = x_tr[:, None] if x_tr.ndim == 1 else x_tr
        posteriors = [
            fit_nig(m.features(x_tr2), y_tr, m.variance_profile(x_tr2), prior) for m in models
        ]
        if "split_conformal" in names:
            coef, half_width = split_conformal(x_tr2, y_tr, cfg.split_conformal_degree, cfg.alpha)
        for x_new, y_true in zip(x_te, y_te, strict=True):
            x_new = np.atleast_2d(x_new) if x_tr.ndim == 2 else np.array([[x_new]])
            out = conformal_set_by_model(
                models,
                prior,
                x_tr2,
                y_tr,
                x_new,
                np.append(grid, y_true),
                log_prior=log_prior,
                posteriors=posteriors,
                with_frozen="cbma_frozen" in names,
            )
            pvalues = {f"cb_{m.name}": out["cb_pvalues"][k] for k, m in enumerate(models)}
            pvalues["cbma"] = out["cbma_pvalues"]
            if "cbma_frozen" in names:
                pvalues["cbma_frozen"] = out["frozen_pvalues"]
            for method, pv in pvalues.items():
                if method in names:
                    add(f"{method}/covered", float(pv[-1] > cfg.alpha))  # pi(Y_true) > alpha
                    if not setting.coverage_only:
                        add(f"{method}/size", set_size(pv[:-1], cfg.alpha, step))
            if true_idx is not None:
                add("cbma/true_model_weight", float(np.exp(out["log_weights"][true_idx, -1])))
            if cfg.compare_candidates:  # omega_k(Y_true) of every candidate
                for k, m in enumerate(models):
                    add(f"cbma/weight_{m.name}", float(np.exp(out["log_weights"][k, -1])))
            if "bma_credible" in names:
                low, high = bma_credible_interval(
                    posteriors, models, x_new, grid, cfg.alpha, out["frozen_log_weights"]
                )
                add("bma_credible/covered", float(low <= y_true <= high))
                add("bma_credible/size", high - low)
            if "split_conformal" in names:
                split_features = ModelSpec("split", cfg.split_conformal_degree).features(x_new)
                pred = float((split_features @ coef)[0])
                add("split_conformal/covered", float(abs(y_true - pred) <= half_width))
                add("split_conformal/size", 2.0 * half_width)
        return records

    records = run_replications(
        one_replication,
        replications,
        seed,
        run_dir,
        checkpoint_every=setting.checkpoint_every or cfg.checkpoint_every,
        logger=logger,
        tags={"setting": name, "seed": seed},
        log_keys=tuple(f"{m}/covered" for m in names),
        progress=cfg.runtime.progress,
        desc=name,
    )

    metrics = {}
    for method in names:
        metrics[f"{method}.coverage"] = float(np.mean(records[f"{method}/covered"]))
        if records.get(f"{method}/size"):
            metrics[f"{method}.length"] = float(np.mean(records[f"{method}/size"]))
        metrics[f"{method}.coverage_error"] = metrics[f"{method}.coverage"] - exact_coverage(
            n_train, cfg.alpha
        )
    if records.get("cbma/true_model_weight"):
        metrics["cbma.true_model_weight"] = float(np.mean(records["cbma/true_model_weight"]))
    if cfg.compare_candidates:
        metrics.update(candidate_comparison(metrics, [m.name for m in models]))
        for m in models:
            metrics[f"cbma.weight_{m.name}"] = float(np.mean(records[f"cbma/weight_{m.name}"]))
    return RunOutput(metrics=metrics)


def candidate_comparison(metrics: dict[str, float], candidates: list[str]) -> dict[str, float]:
    """Every method's mean length over the shortest and over the longest single-candidate CB
    mean length (``<method>.length_over_best_cb``, ``<method>.length_over_worst_cb``): the real
    rung asks CBMA to be about as short as the best candidate, which is not known in advance."""
    cb = [metrics[f"cb_{name}.length"] for name in candidates if f"cb_{name}.length" in metrics]
    if not cb:
        raise ValueError("compare_candidates needs the cb method (one row per candidate)")
    best, worst = min(cb), max(cb)
    out = {}
    for key, value in metrics.items():
        if key.endswith(".length"):
            method = key[: -len(".length")]
            out[f"{method}.length_over_best_cb"] = value / best
            out[f"{method}.length_over_worst_cb"] = value / worst
    return out


def plot_bands(cfg: Config, path: Path) -> None:
    """Prediction sets over x for one replication of each simulated setting."""
    settings = {
        name: s
        for name, s in enabled_settings(cfg.settings).items()
        if s.source == "simulated" and not s.coverage_only
    }
    if not settings:
        return
    prior = NIGPrior(cfg.prior.g, cfg.prior.a0, cfg.prior.b0)
    fig, axes = plt.subplots(
        1, len(settings), figsize=(5.2 * len(settings), 4.0), dpi=120, squeeze=False
    )
    for ax, (name, setting) in zip(axes[0], settings.items(), strict=True):
        rng = np.random.default_rng(cfg.seeds[0])
        x_tr, y_tr, _, _ = draw_replication(setting, cfg, rng)
        models = candidate_specs(setting)
        grid = y_grid(y_tr, cfg)
        posteriors = [
            fit_nig(m.features(x_tr[:, None]), y_tr, m.variance_profile(x_tr[:, None]), prior)
            for m in models
        ]
        xs = np.linspace(setting.x_low, setting.x_high, cfg.plot_x_points)
        bands = {f"cb_{m.name}": [] for m in models} | {"cbma": []}
        for x_new in xs:
            out = conformal_set_by_model(
                models,
                prior,
                x_tr[:, None],
                y_tr,
                np.array([[x_new]]),
                grid,
                log_prior=log_model_prior(name, setting),
                posteriors=posteriors,
            )
            sets = {f"cb_{m.name}": out["cb_pvalues"][k] for k, m in enumerate(models)}
            sets["cbma"] = out["cbma_pvalues"]
            for method, pv in sets.items():
                inside = grid[pv > cfg.alpha]
                bands[method].append((inside.min(), inside.max()) if inside.size else (np.nan,) * 2)
        ax.scatter(x_tr, y_tr, s=6, color="0.3", label="training data", zorder=3)
        for method, band in bands.items():
            band = np.asarray(band)
            style = {"alpha": 0.35} if method == "cbma" else {"alpha": 0.0}
            (line,) = ax.plot(
                xs, band[:, 0], linewidth=1.2, label=LABELS.get(f"{name}/{method}", method)
            )
            ax.plot(xs, band[:, 1], linewidth=1.2, color=line.get_color())
            ax.fill_between(xs, band[:, 0], band[:, 1], color=line.get_color(), **style)
        ax.set_title(f"{name}: {1 - cfg.alpha:.0%} sets (hull), n = {cfg.n_train}")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def preflight(cfg: Config) -> list[str]:
    """Name every missing local file before any work (nothing is downloaded): California
    housing's cache under ``data_root`` and a csv setting's file. Settings on simulated data
    need nothing; ``diabetes`` is checked by its asset (``REAL_ASSETS``, scale=real)."""
    settings = enabled_settings(cfg.settings)
    problems = []
    for name, setting in settings.items():
        if setting.source == "csv":
            if not setting.path or not setting.target:
                problems.append(
                    f"settings.{name}: a csv source needs path (the file) and target (its "
                    f"response column), got path={setting.path!r}, target={setting.target!r}"
                )
            elif not Path(setting.path).expanduser().is_file():
                problems.append(f"settings.{name}.path={setting.path} does not exist")
    if "california_housing" not in {s.source for s in settings.values()}:
        return problems
    hint = (
        " (a local folder holding scikit-learn's California housing cache "
        f"{CALIFORNIA_CACHE}; nothing is downloaded, see configs/conformal_bma/paper.yaml)"
    )
    found = missing_paths({"data_root": cfg.data_root}, hint)
    if not found and not (Path(cfg.data_root).expanduser() / CALIFORNIA_CACHE).is_file():
        found.append(f"data_root={cfg.data_root} lacks {CALIFORNIA_CACHE}{hint}")
    return problems + found


real_preflight = preflight  # scale=real: the same local-file checks beside REAL_ASSETS'


def real_assets(cfg: Config) -> tuple[str, ...]:
    """The assets this config reads: diabetes only where a setting's source is diabetes."""
    sources = {s.source for s in enabled_settings(cfg.settings).values()}
    return REAL_ASSETS if "diabetes" in sources else ()


def user_files(cfg: Config) -> dict[str, str]:
    """Each csv setting's file, by its key (recorded with its sha256)."""
    return {
        f"settings.{name}.path": setting.path
        for name, setting in enabled_settings(cfg.settings).items()
        if setting.source == "csv" and setting.path
    }


def data_preflight(cfg: Config) -> list[str]:
    """Every scale, before the first replication: a csv setting's table is read (every cell
    numeric, its target present) and each candidate's ``columns`` checked against its header,
    so a misnamed column stops the run at start, naming the setting, the model and the file."""
    problems = []
    for name, setting in enabled_settings(cfg.settings).items():
        if setting.source != "csv" or not setting.path or not setting.target:
            continue
        if not Path(setting.path).expanduser().is_file():
            problems.append(f"settings.{name}.path={setting.path} does not exist")
            continue
        try:
            candidate_specs(setting, load_real(setting, cfg.data_root))
        except RealDataError as err:
            problems.append(f"settings.{name}: {err}")
    return problems


def plot_real(cfg: Config, results: Results, path: Path) -> None:
    """The real settings' coverage and mean length per method, and CBMA's mean weight on each
    candidate at the true y (one row of panels per real setting)."""
    settings = {
        name: s for name, s in enabled_settings(cfg.settings).items() if s.source != "simulated"
    }
    if not settings:
        return
    fig, axes = plt.subplots(
        len(settings), 3, figsize=(14.0, 3.6 * len(settings)), dpi=120, squeeze=False
    )
    for row, (name, setting) in zip(axes, settings.items(), strict=True):
        methods = [
            m
            for m in method_names(setting, cfg.methods)
            if f"{name}/{m}" in results and "length" in results[f"{name}/{m}"]
        ]
        labels = [REAL_LABELS.get(f"{name}/{m}", m) for m in methods]
        ticks = np.arange(len(methods))
        for ax, metric in zip(row[:2], ("coverage", "length"), strict=True):
            values = [float(np.mean(results[f"{name}/{m}"][metric])) for m in methods]
            colors = ["C3" if m == "cbma" else "C0" for m in methods]
            ax.bar(ticks, values, color=colors)
            for t, v in zip(ticks, values, strict=True):
                ax.text(t, v, f"{v:.3f}", ha="center", va="bottom", fontsize=7)
            ax.set_xticks(ticks, labels, rotation=30, ha="right", fontsize=7)
            ax.set_title(f"{name}: mean {metric}", fontsize=9)
        row[0].axhline(1.0 - cfg.alpha, color="k", linestyle="--", linewidth=1.0, label="1 - α")
        lowest = min(float(np.mean(results[f"{name}/{m}"]["coverage"])) for m in methods)
        row[0].set_ylim(min(0.8, lowest - 0.05), 1.0)
        row[0].legend(frameon=False, fontsize=7)
        row[1].set_ylabel("set size (training sd of y)" if cfg.standardise else "set size")
        weights = [
            float(np.mean(results[f"{name}/cbma"].get(f"weight_{m.name}", [np.nan])))
            for m in setting.models
        ]
        row[2].bar(np.arange(len(weights)), weights, color="C2")
        row[2].set_xticks(np.arange(len(weights)), [m.name for m in setting.models], fontsize=7)
        row[2].set_ylim(0.0, 1.0)
        row[2].set_title(f"{name}: CBMA's mean weight ω_k(Y_true)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(cfg: Config, out_dir: Path) -> Results:
    """Every setting (with resume), the bands plot, and the per-method results."""
    check_names("methods", cfg.methods, METHODS)
    settings = enabled_settings(cfg.settings)
    for name, setting in settings.items():
        log_model_prior(name, setting)  # a bad model prior fails before any replication
    logger = MetricsLogger(Path(out_dir) / "metrics.jsonl")
    per_setting, _ = run_grid(
        list(settings),
        cfg.seeds,
        out_dir,
        lambda name, seed, run_dir: run_setting(name, settings[name], seed, run_dir, cfg, logger),
        progress=cfg.runtime.progress,
    )
    results = by_setting(per_setting)
    plot_bands(cfg, Path(out_dir) / "prediction_bands.png")
    plot_real(cfg, results, Path(out_dir) / REAL_PLOT)
    return results


if __name__ == "__main__":
    main("conformal_bma")
