"""Typed config of the InfoAlign experiment (schema for configs/infoalign/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it; every
number's range and every name's known set are declared beside its default (``checked``), and
:meth:`Config.validate` adds the constraints between keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    TrainLoopConfig,
    checked,
    require,
    require_at_most,
)

DATA_SOURCES = ("toy", "paper")
# the official downstream sets: the keys of data.DOWNSTREAM and data.DOWNSTREAM_TASKS (config
# imports no rdkit; tests/papers/infoalign/test_config_names.py checks the keys)
DOWNSTREAM_NAMES = ("chembl2k", "broad6k", "biogenadme", "moltoxcast")
READOUTS = ("sum", "mean", "max")  # graph pooling: the keys of model.READOUTS (a test checks)
SPLIT_PARTS = ("train", "valid", "test")  # one downstream fraction each


@dataclass
class DataConfig:
    """Molecules, the context graph and the downstream split (brief Sec. 3.1, 5, 6)."""

    # toy (NCI molecules + hidden biology) | paper (official files)
    source: str = checked("toy", choices=DATA_SOURCES)
    root: str | None = None  # paper: local folder with the official pre-training files
    downstream_path: str | None = None  # paper: a local official assays.csv.gz
    # chembl2k | broad6k | biogenadme | moltoxcast
    downstream_name: str = checked("chembl2k", choices=DOWNSTREAM_NAMES)
    # toy molecules (brief Sec. 5): rdkit's bundled NCI first_5K.smi
    max_molecules: int = checked(2400, ge=1)
    min_atoms: int = checked(6, ge=0)  # heavy atoms, inclusive (empty molecules always skipped)
    max_atoms: int = checked(40, ge=1)
    biology_seed: int = checked(1234, ge=0)  # the hidden biology stays fixed across run seeds
    # scaffold split: context (pre-training) vs downstream; both parts must be non-empty
    context_fraction: float = checked(0.6, gt=0, lt=1)
    context_split_seed: int = checked(0, ge=0)
    # train / valid / test fractions of the downstream molecules (they sum to 1)
    downstream_fractions: list[float] = checked(factory=lambda: [0.6, 0.15, 0.25], ge=0, le=1)
    downstream_split_seed: int = checked(3, ge=0)  # official scaffold split shuffle seed
    # True: no scaffold in two partitions (brief Sec. 7.9); False: the official fill rule,
    # which cuts the scaffold group that straddles a boundary
    whole_scaffold_groups: bool = True
    # toy context graph (brief Sec. 5, per run seed)
    p_cell: float = checked(0.6, ge=0, le=1)  # probability a molecule gets a cell node
    p_expr: float = checked(0.4, ge=0, le=1)  # probability a molecule gets an expression node
    mol_threshold: float = checked(0.6, ge=0, le=1)  # Tanimoto of a molecule-molecule edge
    # cell-cell / expression-expression edges: the top fraction of pairs (at least one) ...
    feature_top_fraction: float = checked(0.005, ge=0, le=1)
    # ... whose cosine is at least this
    feature_min_threshold: float = checked(0.6, ge=-1, le=1)
    # fingerprints and the paper-scale graph (brief Sec. 3.1)
    fp_radius: int = checked(4, ge=0)  # fingerprint targets of molecule nodes
    fp_bits: int = checked(1024, ge=1)
    sim_fp_radius: int = checked(2, ge=0)  # Tanimoto similarity edges
    # minimum similarity threshold (Tanimoto or cosine), the bisection's lower end
    threshold: float = checked(0.8, ge=-1, le=1)
    target_sparsity: float = checked(0.995, ge=0, le=1)
    # fraction of |expression| entries (at least 1000) that add molecule-gene edges
    top_compound_gene_express: float = checked(0.01, ge=0, le=1)
    kmeans_clusters: int = checked(100, ge=1)


@dataclass
class EncoderConfig:
    """GIN with a virtual node and the Gaussian head (brief Sec. 3.2)."""

    num_layers: int = checked(5, ge=1)
    emb_dim: int = checked(300, ge=1)
    dropout: float = checked(0.5, ge=0, lt=1)
    virtual_node: bool = True
    residual: bool = True
    readout: str = checked("sum", choices=READOUTS)


@dataclass
class DecoderConfig:
    """Decoder MLPs d -> hidden_mult * d -> out from mu (brief Sec. 3.3)."""

    hidden_mult: int = checked(4, ge=1)
    dropout: float = checked(0.5, ge=0, lt=1)


@dataclass
class PretrainConfig:
    """Pre-training (brief Sec. 3.5, 3.7)."""

    epochs: int = checked(300, ge=1)
    # a batch of one molecule is dropped (BatchNorm), so 1 would never train
    batch_size: int = checked(3072, ge=2)
    lr: float = checked(1e-4, gt=0)
    weight_decay: float = checked(1e-8, ge=0)
    beta: float = checked(1e-9, ge=0)  # prior weight
    walk_length: int = checked(4, ge=0)  # 0: the structure-only ablation
    # cosine schedule multiplier max(0, cos(pi * 7/16 * progress)); 0: a constant rate
    num_cycles: float = checked(0.4375, ge=0)


@dataclass
class ContrastiveConfig:
    """The molecule-cell InfoNCE baseline (brief Sec. 4)."""

    temperature: float = checked(0.1, gt=0)
    # cell / expression encoders: MLP(dim -> hidden -> emb_dim)
    hidden: int = checked(128, ge=1)


@dataclass
class ProbeConfig:
    """Frozen-encoder fine-tuning: an MLP on mu (brief Sec. 3.6)."""

    epochs: int = checked(300, ge=1)
    # a batch of one example is skipped (BatchNorm), so 1 would never train
    batch_size: int = checked(5120, ge=2)
    lr: float = checked(1e-3, gt=0)
    weight_decay: float = checked(1e-5, ge=0)
    hidden_mult: int = checked(4, ge=1)
    dropout: float = checked(0.5, ge=0, lt=1)
    # early stopping on the validation metric; None: all epochs
    patience: int | None = checked(50, ge=1)
    standardise: bool = False  # z-score mu with train statistics (brief Sec. 5 toy probe)


@dataclass
class BoundsConfig:
    """The secondary claim: decoder (Barber-Agakov) bound vs InfoNCE (brief Sec. 5.2)."""

    dim: int = checked(8, ge=1)
    noise: float = checked(0.3, gt=0)  # Y = X + noise * N(0, I); true MI has 1 / noise^2
    steps: int = checked(1500, ge=1)
    lr: float = checked(1e-2, gt=0)
    batch_size: int = checked(256, ge=1)
    n_eval: int = checked(20000, ge=1)
    infonce_batch: int = checked(128, ge=1)
    infonce_batches: int = checked(20, ge=1)


@dataclass
class Config(ExperimentConfig):
    # infoalign | structure_only (walk length 0) | random (untrained) | contrastive (InfoNCE)
    methods: list[str] = field(
        default_factory=lambda: ["infoalign", "structure_only", "random", "contrastive"]
    )
    seeds: list[int] = checked(factory=lambda: [0, 1, 2, 3, 4], ge=0)
    data: DataConfig = field(default_factory=DataConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    decoder: DecoderConfig = field(default_factory=DecoderConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    contrastive: ContrastiveConfig = field(default_factory=ContrastiveConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    bounds: BoundsConfig | None = field(default_factory=BoundsConfig)  # null: skip
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        d = self.data
        # the split is zipped with train / valid / test and scaffold_split needs a partition
        fractions = d.downstream_fractions
        require(
            len(fractions) == len(SPLIT_PARTS),
            "data.downstream_fractions",
            fractions,
            f"give {len(SPLIT_PARTS)} fractions ({' / '.join(SPLIT_PARTS)})",
        )
        require(
            abs(sum(fractions) - 1.0) <= 1e-6,
            "data.downstream_fractions",
            fractions,
            "must sum to 1",
        )
        # the toy keeps min_atoms..max_atoms heavy atoms: an empty range keeps no molecule
        if d.source == "toy":
            require_at_most(
                "data.min_atoms", d.min_atoms, d.max_atoms, f"data.max_atoms ({d.max_atoms})"
            )
