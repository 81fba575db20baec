"""Typed config of the InfoAlign experiment (schema for configs/infoalign/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, TrainLoopConfig


@dataclass
class DataConfig:
    """Molecules, the context graph and the downstream split (brief Sec. 3.1, 5, 6)."""

    source: str = "toy"  # toy (NCI molecules + hidden biology) | paper (official files)
    root: str | None = None  # paper: local folder with the official pre-training files
    downstream_path: str | None = None  # paper: a local official assays.csv.gz
    downstream_name: str = "chembl2k"  # chembl2k | broad6k | biogenadme | moltoxcast
    # toy molecules (brief Sec. 5): rdkit's bundled NCI first_5K.smi
    max_molecules: int = 2400
    min_atoms: int = 6
    max_atoms: int = 40
    biology_seed: int = 1234  # the hidden biology stays fixed across run seeds
    context_fraction: float = 0.6  # scaffold split: context (pre-training) vs downstream
    context_split_seed: int = 0
    downstream_fractions: list[float] = field(default_factory=lambda: [0.6, 0.15, 0.25])
    downstream_split_seed: int = 3  # official scaffold split shuffle seed
    # True: no scaffold in two partitions (brief Sec. 7.9); False: the official fill rule,
    # which cuts the scaffold group that straddles a boundary
    whole_scaffold_groups: bool = True
    # toy context graph (brief Sec. 5, per run seed)
    p_cell: float = 0.6
    p_expr: float = 0.4
    mol_threshold: float = 0.6
    feature_top_fraction: float = 0.005
    feature_min_threshold: float = 0.6
    # fingerprints and the paper-scale graph (brief Sec. 3.1)
    fp_radius: int = 4  # fingerprint targets of molecule nodes
    fp_bits: int = 1024
    sim_fp_radius: int = 2  # Tanimoto similarity edges
    threshold: float = 0.8  # minimum similarity threshold
    target_sparsity: float = 0.995
    top_compound_gene_express: float = 0.01
    kmeans_clusters: int = 100


@dataclass
class EncoderConfig:
    """GIN with a virtual node and the Gaussian head (brief Sec. 3.2)."""

    num_layers: int = 5
    emb_dim: int = 300
    dropout: float = 0.5
    virtual_node: bool = True
    residual: bool = True
    readout: str = "sum"


@dataclass
class DecoderConfig:
    """Decoder MLPs d -> hidden_mult * d -> out from mu (brief Sec. 3.3)."""

    hidden_mult: int = 4
    dropout: float = 0.5


@dataclass
class PretrainConfig:
    """Pre-training (brief Sec. 3.5, 3.7)."""

    epochs: int = 300
    batch_size: int = 3072
    lr: float = 1e-4
    weight_decay: float = 1e-8
    beta: float = 1e-9  # prior weight
    walk_length: int = 4
    num_cycles: float = 0.4375  # cosine schedule multiplier max(0, cos(pi * 7/16 * progress))


@dataclass
class ContrastiveConfig:
    """The molecule-cell InfoNCE baseline (brief Sec. 4)."""

    temperature: float = 0.1
    hidden: int = 128  # cell / expression encoders: MLP(dim -> hidden -> emb_dim)


@dataclass
class ProbeConfig:
    """Frozen-encoder fine-tuning: an MLP on mu (brief Sec. 3.6)."""

    epochs: int = 300
    batch_size: int = 5120
    lr: float = 1e-3
    weight_decay: float = 1e-5
    hidden_mult: int = 4
    dropout: float = 0.5
    patience: int | None = 50  # early stopping on the validation metric; None: all epochs
    standardise: bool = False  # z-score mu with train statistics (brief Sec. 5 toy probe)


@dataclass
class BoundsConfig:
    """The secondary claim: decoder (Barber-Agakov) bound vs InfoNCE (brief Sec. 5.2)."""

    dim: int = 8
    noise: float = 0.3
    steps: int = 1500
    lr: float = 1e-2
    batch_size: int = 256
    n_eval: int = 20000
    infonce_batch: int = 128
    infonce_batches: int = 20


@dataclass
class Config(ExperimentConfig):
    # infoalign | structure_only (walk length 0) | random (untrained) | contrastive (InfoNCE)
    methods: list[str] = field(
        default_factory=lambda: ["infoalign", "structure_only", "random", "contrastive"]
    )
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4])
    data: DataConfig = field(default_factory=DataConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    decoder: DecoderConfig = field(default_factory=DecoderConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    contrastive: ContrastiveConfig = field(default_factory=ContrastiveConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    bounds: BoundsConfig | None = field(default_factory=BoundsConfig)  # null: skip
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)
