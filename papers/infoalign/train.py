"""InfoAlign experiment: ``python -m papers.infoalign.train [scale=smoke|toy|paper] [key=...]``.

Per (method, seed): pre-train a molecular encoder (InfoAlign's walk objective, its walk-length-0
ablation, or the contrastive baseline; the random baseline skips this), freeze it, fit an MLP
probe on mu for the downstream tasks (brief Sec. 3.6) and read the test ROC-AUC at the best
validation epoch; then the zero-shot molecule -> cell-profile retrieval. Pre-training goes
through the shared minibatch loop (checkpoints, resume); every batch is a pure function of
(seed, step), so a resumed run draws the same molecules and walks.
"""

from __future__ import annotations

import functools
import math
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from torch_geometric.data import Batch, Data

from papers.infoalign import data as D
from papers.infoalign.claims import BOUNDS, LABELS
from papers.infoalign.config import Config
from papers.infoalign.method import info_nce, infoalign_loss, random_walks, walk_targets
from papers.infoalign.mi_bounds import barber_agakov_bound, infonce_estimate, true_mi
from papers.infoalign.model import InfoAlignModel, ProjectionMLP, freeze, mlp_head
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.preflight import missing_paths
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import seed_everything

METHODS = ("infoalign", "structure_only", "random", "contrastive")


# ----------------------------------------------------------------------------------------
# Data: molecules, labels, splits (seed-independent) and the context graph (per seed)
# ----------------------------------------------------------------------------------------
class PackedGraphs:
    """A list of molecular graphs concatenated once, so that a minibatch is a few index
    operations instead of ``Batch.from_data_list``'s per-graph Python loop (the same integer
    tensors: x, edge_index shifted by each graph's node offset, edge_attr, batch, ptr; the
    per-step collation cost most of the data side of pre-training)."""

    def __init__(self, graphs: list[Data]):
        self.num_nodes = torch.tensor([g.num_nodes for g in graphs], dtype=torch.long)
        self.num_edges = torch.tensor([g.edge_index.size(1) for g in graphs], dtype=torch.long)
        self.node_start = torch.cumsum(self.num_nodes, 0) - self.num_nodes
        self.edge_start = torch.cumsum(self.num_edges, 0) - self.num_edges
        self.x = torch.cat([g.x for g in graphs])
        self.edge_attr = torch.cat([g.edge_attr for g in graphs])
        self.edge_index = torch.cat([g.edge_index for g in graphs], dim=1)  # graph-local ids

    def __len__(self) -> int:
        return len(self.num_nodes)

    @staticmethod
    def _ranges(starts: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The concatenation of ``arange(s, s + n)`` over the pairs (s, n)."""
        before = torch.cumsum(lengths, 0) - lengths  # position of each range in the output
        return torch.repeat_interleave(starts - before, lengths) + torch.arange(int(lengths.sum()))

    def batch(self, ids: np.ndarray | torch.Tensor) -> Batch:
        """The graphs ``ids`` as one disjoint-union ``Batch``, as ``from_data_list`` makes it."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        n_nodes, n_edges = self.num_nodes[ids], self.num_edges[ids]
        nodes = self._ranges(self.node_start[ids], n_nodes)
        edges = self._ranges(self.edge_start[ids], n_edges)
        ptr = torch.zeros(len(ids) + 1, dtype=torch.long)
        torch.cumsum(n_nodes, 0, out=ptr[1:])
        return Batch(
            x=self.x[nodes],
            edge_index=self.edge_index[:, edges] + torch.repeat_interleave(ptr[:-1], n_edges),
            edge_attr=self.edge_attr[edges],
            batch=torch.repeat_interleave(torch.arange(len(ids)), n_nodes),
            ptr=ptr,
        )


@dataclass
class World:
    context_graphs: list[Data]  # molecular graphs of the context (pre-training) molecules
    context_smiles: list[str]
    context_cell: np.ndarray | None  # toy: hidden cell / expression features of context mols
    context_expr: np.ndarray | None
    downstream_graphs: list[Data]
    labels: np.ndarray  # (n_downstream, n_tasks), NaN = unlabelled
    splits: dict[str, np.ndarray]  # train / valid / test indices into the downstream set
    regression: bool
    cell_truth: np.ndarray | None  # toy: downstream cell profiles, for zero-shot retrieval
    graph: D.ContextGraph | None = None  # paper scale: one fixed graph for all seeds
    skipped_smiles: int = 0  # unparseable or filtered input lines (logged, never fatal)

    @functools.cached_property
    def packed_context(self) -> PackedGraphs:
        return PackedGraphs(self.context_graphs)

    @functools.cached_property
    def packed_downstream(self) -> PackedGraphs:
        return PackedGraphs(self.downstream_graphs)


# The last world loaded, by its data section: data_preflight loads the toy's world to check its
# splits, and run() reuses it instead of featurising the molecules a second time.
_LOADED_WORLD: dict[str, World] = {}


def load_world(cfg: Config) -> World:
    """The world of ``cfg.data``, loaded once for the preflight and the run (``build_world``)."""
    key = repr(cfg.data)
    if key not in _LOADED_WORLD:
        _LOADED_WORLD.clear()  # one world at a time: a process may run several configs
        _LOADED_WORLD[key] = build_world(cfg)
    return _LOADED_WORLD[key]


def build_world(cfg: Config) -> World:
    """Toy: NCI molecules, hidden biology and scaffold splits (brief Sec. 5); paper: the
    official pre-training folder and one downstream assay table (brief Sec. 6)."""
    d = cfg.data
    down_fractions = tuple(d.downstream_fractions)
    if d.source == "toy":
        mols = D.load_nci_molecules(d.max_molecules, d.min_atoms, d.max_atoms)
        bio = D.hidden_biology(mols.smiles, seed=d.biology_seed)
        context, downstream = D.scaffold_split(
            mols.smiles,
            (d.context_fraction, 1 - d.context_fraction),
            d.context_split_seed,
            whole_groups=d.whole_scaffold_groups,
        )
        down_smiles = [mols.smiles[i] for i in downstream]
        parts = D.scaffold_split(
            down_smiles,
            down_fractions,
            d.downstream_split_seed,
            whole_groups=d.whole_scaffold_groups,
        )
        return World(
            context_graphs=[mols.graphs[i] for i in context],
            context_smiles=[mols.smiles[i] for i in context],
            context_cell=bio.cell[context],
            context_expr=bio.expr[context],
            downstream_graphs=[mols.graphs[i] for i in downstream],
            labels=bio.labels[downstream],
            splits=dict(zip(("train", "valid", "test"), parts, strict=True)),
            regression=False,
            cell_truth=bio.cell[downstream],
            skipped_smiles=mols.n_skipped,
        )
    if d.root is None or d.downstream_path is None:
        raise ValueError("scale=paper needs data.root and data.downstream_path (local files)")
    graph, smiles = D.load_context_graph(
        d.root,
        fp_radius=d.fp_radius,
        fp_bits=d.fp_bits,
        sim_fp_radius=d.sim_fp_radius,
        threshold=d.threshold,
        target_sparsity=d.target_sparsity,
        top_compound_gene_express=d.top_compound_gene_express,
        kmeans_clusters=d.kmeans_clusters,
    )
    context = [D.featurise(s) for s in smiles]
    if any(g is None for g in context):
        raise ValueError("some context-graph SMILES did not parse; fix the input files")
    raw_smiles, raw_labels = D.load_assays(d.downstream_path, D.DOWNSTREAM[d.downstream_name])
    parsed = [(i, g) for i, g in enumerate(map(D.featurise, raw_smiles)) if g is not None]
    if len(parsed) < len(raw_smiles):  # bad input is skipped and counted, never fatal
        print(f"skipped {len(raw_smiles) - len(parsed)} unparseable downstream SMILES")
    keep = [i for i, _ in parsed]
    down_smiles = [raw_smiles[i] for i in keep]
    parts = D.scaffold_split(
        down_smiles, down_fractions, d.downstream_split_seed, whole_groups=d.whole_scaffold_groups
    )
    return World(
        context_graphs=context,
        context_smiles=smiles,
        context_cell=None,
        context_expr=None,
        downstream_graphs=[g for _, g in parsed],
        labels=raw_labels[keep],
        splits=dict(zip(("train", "valid", "test"), parts, strict=True)),
        regression=d.downstream_name in D.REGRESSION,
        cell_truth=None,
        graph=graph,
        skipped_smiles=len(raw_smiles) - len(parsed),
    )


def context_graph(world: World, cfg: Config, seed: int) -> D.ContextGraph:
    """The seed's context graph (toy: random cell / expression coverage per seed)."""
    if world.graph is not None:
        return world.graph
    d = cfg.data
    return D.build_toy_context_graph(
        world.context_smiles,
        world.context_cell,
        world.context_expr,
        seed,
        p_cell=d.p_cell,
        p_expr=d.p_expr,
        mol_threshold=d.mol_threshold,
        feature_top_fraction=d.feature_top_fraction,
        feature_min_threshold=d.feature_min_threshold,
        fp_radius=d.fp_radius,
        fp_bits=d.fp_bits,
    )


# ----------------------------------------------------------------------------------------
# Models and pre-training
# ----------------------------------------------------------------------------------------
def build_model(cfg: Config, decoder_dims: dict[str, int]) -> InfoAlignModel:
    e = cfg.encoder
    return InfoAlignModel(
        num_layers=e.num_layers,
        emb_dim=e.emb_dim,
        dropout=e.dropout,
        virtual_node=e.virtual_node,
        residual=e.residual,
        readout=e.readout,
        decoder_dims=decoder_dims,
        decoder_hidden=cfg.decoder.hidden_mult * e.emb_dim,
        decoder_dropout=cfg.decoder.dropout,
    )


def cosine_multiplier(step: int, total: int, num_cycles: float) -> float:
    """Official schedule: max(0, cos(pi * num_cycles * progress)); 7/16 ends at ~0.195."""
    return max(0.0, math.cos(math.pi * num_cycles * min(step / max(total, 1), 1.0)))


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """A seeded permutation of ``range(n)`` cut into batches; a last batch of one molecule
    is dropped (BatchNorm cannot normalise a single graph, brief Sec. 3.5 step 2)."""
    order = np.random.default_rng([seed, epoch]).permutation(n)
    batches = [order[i : i + batch_size] for i in range(0, n, batch_size)]
    return [b for b in batches if len(b) > 1]


def attached_rows(graph: D.ContextGraph, node_type: int) -> np.ndarray:
    """For every context molecule, the node of type ``node_type`` linked to it, or -1."""
    rows = np.full(len(graph.molecule_node), -1, dtype=np.int64)
    for i, node in enumerate(graph.molecule_node):
        neighbours = graph.indices[graph.indptr[node] : graph.indptr[node + 1]]
        linked = neighbours[graph.node_type[neighbours] == node_type]
        if linked.size:
            rows[i] = linked[0]
    return rows


def pretrain(
    method: str,
    seed: int,
    run_dir: Path,
    cfg: Config,
    world: World,
    graph: D.ContextGraph,
    accelerator: Accelerator,
    logger: MetricsLogger,
) -> torch.nn.ModuleDict:
    """Pre-train the encoder of ``method`` (brief Sec. 3.5; contrastive: Sec. 4); returns
    ``{"model": InfoAlignModel}`` plus the contrastive baseline's profile encoders."""
    p = cfg.pretrain
    seed_everything(seed)
    targets = {m: t for m, t in graph.targets.items() if np.isfinite(t).any()}
    if method == "infoalign":
        decoder_dims = {m: t.shape[1] for m, t in targets.items()}
    elif method == "structure_only":
        decoder_dims = {"mol": targets["mol"].shape[1]}
    else:
        decoder_dims = {}
    targets = {m: targets[m] for m in decoder_dims}  # what this method's decoders read
    model = build_model(cfg, decoder_dims)
    modules = torch.nn.ModuleDict({"model": model})
    if method == "random":
        return modules
    device = accelerator.device
    pairs: dict[str, np.ndarray] = {}
    if method == "contrastive":
        for modality, code in (("cell", D.CELL), ("expr", D.EXPR)):
            rows = attached_rows(graph, code)
            if (rows >= 0).sum() > 1:
                pairs[modality] = rows
                modules[modality] = ProjectionMLP(
                    graph.targets[modality].shape[1], cfg.contrastive.hidden, cfg.encoder.emb_dim
                )
        if not pairs:
            raise ValueError("contrastive alignment needs molecules with cell or expression data")
    optimizer = torch.optim.Adam(
        modules.parameters(), lr=p.lr, weight_decay=p.weight_decay, foreach=True
    )

    n_context = len(world.context_graphs)
    if method == "contrastive":  # one pass over cell pairs, then one over expression pairs
        plan = [(m, np.flatnonzero(rows >= 0)) for m, rows in pairs.items()]
        per_epoch = [(m, len(epoch_batches(len(ids), p.batch_size, 0, 0))) for m, ids in plan]
    else:
        per_epoch = [("walk", len(epoch_batches(n_context, p.batch_size, 0, 0)))]
    steps_per_epoch = sum(n for _, n in per_epoch)
    total = p.epochs * steps_per_epoch
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, functools.partial(cosine_multiplier, total=total, num_cycles=p.num_cycles)
    )
    modules, optimizer = accelerator.prepare(modules, optimizer)
    walk_length = p.walk_length if method == "infoalign" else 0

    def next_batch(step: int) -> dict:
        epoch, j = divmod(step - 1, steps_per_epoch)
        if method != "contrastive":
            ids = epoch_batches(n_context, p.batch_size, seed, epoch)[j]
            rng = np.random.default_rng([seed, step, 1])
            starts = graph.molecule_node[ids]
            nodes, weights = random_walks(
                graph.indptr, graph.indices, graph.weights, starts, walk_length, rng
            )
            return {
                "graphs": world.packed_context.batch(ids).to(device),
                "targets": {m: t.to(device) for m, t in walk_targets(targets, nodes).items()},
                "path_weights": torch.as_tensor(weights, device=device),
            }
        for modality, n_batches in per_epoch:
            if j < n_batches:
                molecules = np.flatnonzero(pairs[modality] >= 0)
                ids = molecules[epoch_batches(len(molecules), p.batch_size, seed, epoch)[j]]
                # a profile block missing for this node (paper scale: Bray or JUMP) is NaN;
                # the baseline's encoder reads it as the feature minimum, 0
                features = np.nan_to_num(graph.targets[modality][pairs[modality][ids]], nan=0.0)
                return {
                    "graphs": world.packed_context.batch(ids).to(device),
                    "modality": modality,
                    "features": torch.as_tensor(features, device=device),
                }
            j -= n_batches
        raise IndexError(step)

    def compute_loss(modules, batch):
        model = modules["model"]
        if method == "contrastive":
            mu = model.embed(batch["graphs"])
            other = modules[batch["modality"]](batch["features"])
            return info_nce(mu, other, cfg.contrastive.temperature), {}
        mu, sigma, decoded = model(batch["graphs"])
        loss, parts = infoalign_loss(
            mu, sigma, decoded, batch["targets"], batch["path_weights"], p.beta
        )
        return loss, parts

    start = time.perf_counter()
    fit(
        model=modules,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=total,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        after_step=lambda step, batch, aux: schedule.step(),
        stateful={"schedule": schedule},
        logger=logger,
        tags={"method": method, "seed": seed},
        progress=cfg.runtime.progress,
        desc=f"{method} s{seed}",
    )
    accelerator.free_memory()
    seconds = time.perf_counter() - start  # console only: wall times are not metrics
    print(
        f"{method} s{seed}: {total} steps in {seconds:.1f} s, "
        f"{total * p.batch_size / seconds:.0f} molecules/s (resumed runs count only new steps)"
    )
    return accelerator.unwrap_model(modules)


# ----------------------------------------------------------------------------------------
# Frozen-encoder probe and zero-shot retrieval
# ----------------------------------------------------------------------------------------
@torch.no_grad()
def embed(model: InfoAlignModel, graphs: PackedGraphs, chunk: int = 512) -> torch.Tensor:
    """mu of every molecule, encoder in eval mode (brief Sec. 3.6)."""
    model.eval()
    return torch.cat(
        [
            model.embed(graphs.batch(torch.arange(i, min(i + chunk, len(graphs)))))
            for i in range(0, len(graphs), chunk)
        ]
    )


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """``sklearn.metrics.roc_auc_score`` of one binary task, the same float operations without
    its input validation, which cost ~50x the computation: the probe calls it for 8 tasks after
    every one of its 120 epochs (tests/papers/infoalign checks the two agree bit for bit).

    Scores sorted descending, one ROC point per distinct score (ties together), collinear
    points dropped (sklearn's ``drop_intermediate``), then the trapezoidal area."""
    order = np.argsort(scores, kind="stable")[::-1]
    ranked = scores[order]
    positive = (labels[order] == labels.max()).astype(np.float64)
    last = np.concatenate([np.flatnonzero(np.diff(ranked)), [ranked.size - 1]])
    tps = np.cumsum(positive)[last]  # true / false positives above each distinct threshold
    fps = 1 + last.astype(np.float64) - tps
    if fps.size > 2:
        corner = np.diff(fps, 2) != 0
        corner |= np.diff(tps, 2) != 0
        keep = np.concatenate([[True], corner, [True]])
        fps, tps = fps[keep], tps[keep]
    fpr = np.concatenate([[0.0], fps]) / fps[-1]
    tpr = np.concatenate([[0.0], tps]) / tps[-1]
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


def task_metric(scores: np.ndarray, labels: np.ndarray, regression: bool) -> float:
    """Mean ROC-AUC over tasks with both classes among the labelled entries, or mean MAE."""
    values = []
    for t in range(labels.shape[1]):
        known = np.isfinite(labels[:, t])
        y, s = labels[known, t], scores[known, t]
        if regression and known.any():
            values.append(float(np.abs(s - y).mean()))
        elif not regression and len(np.unique(y)) == 2:
            values.append(roc_auc(y, s))
    return float(np.mean(values)) if values else float("nan")


def probe(mu: torch.Tensor, world: World, cfg: Config, seed: int) -> dict[str, float]:
    """Fit an MLP on frozen mu; the test metric at the best validation epoch (Sec. 3.6)."""
    q = cfg.probe
    split = {k: torch.as_tensor(v, dtype=torch.long) for k, v in world.splits.items()}
    x = mu.detach().clone()
    if q.standardise:
        mean, std = x[split["train"]].mean(0), x[split["train"]].std(0).clamp_min(1e-6)
        x = (x - mean) / std
    y = torch.as_tensor(world.labels, dtype=torch.float32)
    torch.manual_seed(seed)
    head = mlp_head(x.shape[1], q.hidden_mult * x.shape[1], y.shape[1], q.dropout)
    optimizer = torch.optim.Adam(
        head.parameters(), lr=q.lr, weight_decay=q.weight_decay, foreach=True
    )
    generator = torch.Generator().manual_seed(seed)
    better = (lambda a, b: a < b) if world.regression else (lambda a, b: a > b)
    best = {"valid": math.nan, "test": math.nan, "epoch": -1}
    train_idx = split["train"]
    for epoch in range(q.epochs):
        head.train()
        order = train_idx[torch.randperm(len(train_idx), generator=generator)]
        for start in range(0, len(order), q.batch_size):
            ids = order[start : start + q.batch_size]
            if len(ids) < 2:
                continue
            out, target = head(x[ids]), y[ids]
            known = torch.isfinite(target)
            if world.regression:
                loss = (out - target.nan_to_num())[known].abs().mean()
            else:
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    out[known], target[known]
                )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        head.eval()
        with torch.no_grad():
            scores = head(x).numpy()
        valid = task_metric(scores[split["valid"]], world.labels[split["valid"]], world.regression)
        if best["epoch"] < 0 or better(valid, best["valid"]):
            test = task_metric(scores[split["test"]], world.labels[split["test"]], world.regression)
            best = {"valid": valid, "test": test, "epoch": epoch}
        elif q.patience is not None and epoch - best["epoch"] >= q.patience:
            break
    name = "mae" if world.regression else "auc"
    return {f"test_{name}": best["test"], f"valid_{name}": best["valid"]}


@torch.no_grad()
def retrieval(modules: torch.nn.ModuleDict, mu: torch.Tensor, world: World) -> dict[str, float]:
    """Zero-shot molecule -> cell-profile matching on the test molecules (brief Sec. 3.6):
    rank all test molecules' measured profiles by cosine similarity to the prediction."""
    if world.cell_truth is None:
        return {}
    test = world.splits["test"]
    truth = torch.as_tensor(D.minmax_normalise(world.cell_truth[test]), dtype=torch.float32)
    model = modules["model"]
    if "cell" in model.decoders:  # InfoAlign: decode the profile from mu
        query, keys = torch.sigmoid(model.decoders["cell"](mu[test])), truth
    elif "cell" in modules:  # contrastive: embed the candidate profiles instead
        query, keys = mu[test], modules["cell"](truth)
    else:  # no profile model: retrieval is undefined for this method
        return {}
    sim = torch.nn.functional.normalize(query, dim=1) @ torch.nn.functional.normalize(keys, dim=1).T
    rank = (sim > sim.diagonal()[:, None]).sum(1)  # 0 = the true profile ranks first
    return {
        "retrieval_top5": float((rank < 5).float().mean()),
        "retrieval_mrr": float((1.0 / (rank + 1).float()).mean()),
    }


# ----------------------------------------------------------------------------------------
# The experiment
# ----------------------------------------------------------------------------------------
def mutual_information_check(cfg: Config, seed: int) -> dict[str, float]:
    """Brief Sec. 5.2: the decoder bound vs InfoNCE where the truth is known."""
    b = cfg.bounds
    truth = true_mi(b.dim, b.noise)
    ba = barber_agakov_bound(
        b.dim, b.noise, steps=b.steps, lr=b.lr, batch=b.batch_size, n_eval=b.n_eval, seed=seed
    )
    nce = infonce_estimate(
        dim=b.dim, noise=b.noise, batch=b.infonce_batch, n_batches=b.infonce_batches, seed=seed
    )
    return {"ba_bound": ba, "ba_fraction": ba / truth, "infonce_estimate": nce, "true_mi": truth}


def preflight(cfg: Config) -> list[str]:
    """Paper scale reads the official pre-training folder and one assays table (nothing is
    downloaded): name the unset or absent ones, and each missing file of the folder."""
    d = cfg.data
    hint = " (local files, see configs/infoalign/paper.yaml)"
    problems = missing_paths({"data.root": d.root, "data.downstream_path": d.downstream_path}, hint)
    if d.root is not None and Path(d.root).expanduser().is_dir():
        absent = [f for f in D.CONTEXT_FILES.values() if not (Path(d.root) / f).is_file()]
        if absent:
            problems.append(f"data.root={d.root} lacks {', '.join(absent)}")
    return problems


def unscorable_splits(world: World) -> list[str]:
    """The downstream splits the probe cannot score: ``task_metric`` averages the ROC-AUC of the
    tasks with both classes among a split's labelled molecules, so a split without one has no
    metric (a one-molecule split also broke its indexing)."""
    unscorable = []
    for part, rows in world.splits.items():
        labels = world.labels[rows]  # (n, n_tasks), NaN = unlabelled
        if not any(len(np.unique(task[np.isfinite(task)])) == 2 for task in labels.T):
            unscorable.append(f"{part} ({len(rows)} molecule(s))")
    return unscorable


def data_preflight(cfg: Config) -> list[str]:
    """Every scale, before any pre-training: the toy's molecules are loaded and split once
    (``load_world``, reused by the run), and a data section that leaves the context set empty
    or a downstream split unscorable is refused naming the keys that size them."""
    d = cfg.data
    if d.source != "toy":  # paper scale: preflight() names the official files it lacks
        return []
    world = load_world(cfg)
    sizes = (
        f"with data.context_fraction={d.context_fraction} and data.downstream_fractions="
        f"{d.downstream_fractions}; keep more molecules or change the fractions"
    )
    problems = []
    if not world.context_graphs:
        problems.append(f"data.max_molecules={d.max_molecules} leaves no context molecule {sizes}")
    unscorable = unscorable_splits(world)
    if unscorable:
        problems.append(
            f"data.max_molecules={d.max_molecules} ({len(world.downstream_graphs)} downstream "
            f"molecules) leaves no task with both classes in the downstream split(s) "
            f"{', '.join(unscorable)}, whose ROC-AUC is then undefined, {sizes}"
        )
    return problems


def run(cfg: Config, out_dir: Path) -> Results:
    check_names("methods", cfg.methods, METHODS)
    out_dir = Path(out_dir)
    results: Results = {}
    if cfg.bounds is not None:
        per_seed = [mutual_information_check(cfg, seed) for seed in cfg.seeds]
        results[BOUNDS] = {k: [m[k] for m in per_seed] for k in per_seed[0]}
    world = load_world(cfg)
    graphs: dict[int, D.ContextGraph] = {}
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    print(  # the run's log (Hydra keeps it in the run folder); once per invocation
        f"molecules: {len(world.context_graphs)} context, {len(world.downstream_graphs)} "
        f"downstream, {world.skipped_smiles} input SMILES skipped (unparseable or filtered)"
    )

    def train_one(method: str, seed: int, run_dir: Path) -> RunOutput:
        if seed not in graphs:
            start = time.perf_counter()
            graphs[seed] = context_graph(world, cfg, seed)
            g = graphs[seed]
            print(
                f"context graph s{seed}: {g.n_nodes} nodes, {g.n_edges} edges, "
                f"built in {time.perf_counter() - start:.2f} s"
            )
        modules = pretrain(method, seed, run_dir, cfg, world, graphs[seed], accelerator, logger)
        freeze(modules)  # encoder and Gaussian head fixed, BatchNorm in eval mode (Sec. 3.8.10)
        mu = embed(modules["model"], world.packed_downstream)
        metrics = probe(mu, world, cfg, seed)
        metrics.update(retrieval(modules, mu, world))
        return RunOutput(metrics=metrics)

    study, _ = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        train_one,
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    results.update(study)
    if accelerator.is_main_process:
        plot_auc(study, cfg, out_dir / "test_auc.png", world.regression)
    return results


def plot_auc(study: Results, cfg: Config, path: Path, regression: bool) -> None:
    """Test metric per method (mean and the per-seed values)."""
    metric = "test_mae" if regression else "test_auc"
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for i, method in enumerate(cfg.methods):
        values = np.asarray(study[method][metric])
        ax.bar(i, values.mean(), color=f"C{i}", alpha=0.7)
        ax.scatter(np.full(len(values), i), values, color="k", s=12, zorder=3)
    ax.set_xticks(range(len(cfg.methods)))
    names = [textwrap.fill(LABELS.get(m, m).split(" (")[0], 18) for m in cfg.methods]
    ax.set_xticklabels(names, fontsize=8)  # wrapped: the long names would overlap
    ax.set_ylabel("test MAE" if regression else "mean test ROC-AUC (frozen encoder + MLP)")
    if not regression:
        ax.set_ylim(0.5, 1.0)
    ax.set_title(f"InfoAlign toy: frozen-encoder probe, seeds {list(cfg.seeds)}")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main("infoalign")
