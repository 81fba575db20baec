"""Objects of the toy (brief Sec. 5.3), k-means representatives (Sec. 3.2) and the paper-scale
DexGraspNet layout (Sec. 6), read from a local directory only.

Toy objects: 12 training objects per grasp style with sizes ``s ~ U(0.6, 1.4)`` and 48 unseen
ones (fresh sizes and identity vectors). Their "point-cloud feature" mimics a PointNet feature
that encodes the grasp-relevant geometry plus object-specific nuisance detail:
``0.1 * (P [onehot(k), s - 1] + xi_obj)``, ``P`` a fixed random 64 x 5 matrix, ``xi_obj ~
N(0, I_64)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import yaml
from sklearn.cluster import KMeans

from papers.resdex.config import STYLES


@dataclass
class ObjectPool:
    """Objects an env samples from: grasp style, size and 64-D "point-cloud" feature."""

    style: torch.Tensor  # (M,) long
    size: torch.Tensor  # (M,)
    feature: torch.Tensor  # (M, F)

    def __post_init__(self) -> None:
        m = len(self.style)
        if m == 0 or len(self.size) != m or len(self.feature) != m:
            raise ValueError(
                f"ObjectPool needs matching non-empty style/size/feature, got "
                f"{len(self.style)}/{len(self.size)}/{len(self.feature)}"
            )

    def __len__(self) -> int:
        return len(self.style)

    def subset(self, index) -> ObjectPool:
        index = torch.as_tensor(index, dtype=torch.long).reshape(-1)
        return ObjectPool(self.style[index], self.size[index], self.feature[index])


@dataclass
class ObjectSet:
    """Training and unseen objects of one seed."""

    train: ObjectPool
    unseen: ObjectPool


def make_objects(
    seed: int,
    per_style: int = 12,
    feature_dim: int = 64,
    size_low: float = 0.6,
    size_high: float = 1.4,
    feature_scale: float = 0.1,
) -> ObjectSet:
    """The toy's training and unseen objects (brief Sec. 5.3), a pure function of ``seed``."""
    rng = np.random.default_rng([seed, 5309])
    n_styles = len(STYLES)
    projection = rng.normal(size=(feature_dim, n_styles + 1))  # P, (64, 5)

    def pool() -> ObjectPool:
        style = np.repeat(np.arange(n_styles), per_style)
        size = rng.uniform(size_low, size_high, size=style.size)
        identity = rng.normal(size=(style.size, feature_dim))  # xi_obj
        descriptor = np.concatenate([np.eye(n_styles)[style], (size - 1.0)[:, None]], axis=1)
        feature = feature_scale * (descriptor @ projection.T + identity)
        return ObjectPool(
            torch.as_tensor(style, dtype=torch.long),
            torch.as_tensor(size, dtype=torch.float32),
            torch.as_tensor(feature, dtype=torch.float32),
        )

    return ObjectSet(train=pool(), unseen=pool())


def representative_objects(features: np.ndarray, k: int, seed: int, n_init: int = 10) -> np.ndarray:
    """Indices of the K representative objects (Sec. 3.2): k-means (k-means++, ``n_init``
    restarts) on the geometry features, then, per centre, the training object *closest* to it.

    Returns:
        (K,) int indices into ``features``, one per cluster, in cluster order.
    """
    features = np.asarray(features, dtype=np.float64)
    if features.ndim != 2 or len(features) < k:
        raise ValueError(f"need a (M >= {k}, F) feature matrix, got shape {features.shape}")
    kmeans = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(features)
    distances = ((features[None, :, :] - kmeans.cluster_centers_[:, None, :]) ** 2).sum(-1)
    return distances.argmin(axis=1)  # (K,)


# ----------------------------------------------------------------------- paper scale (Sec. 6)
SPLIT_FILES = {
    "train": "train_set.yaml",
    "test_seen_cat": "test_set_seen_cat.yaml",
    "test_unseen_cat": "test_set_unseen_cat.yaml",
}
LAYOUT_HINT = (
    " (UniDexGrasp's DexGraspNet release: <root>/{datasetv4.1, meshdatav3_scaled, "
    "meshdatav3_pc_feat, train_set.yaml, test_set_seen_cat.yaml, test_set_unseen_cat.yaml}; "
    "nothing is downloaded)"
)


@dataclass
class DexGraspNetObject:
    """One (object, scale) of DexGraspNet: its 64-D PointNet feature and file locations."""

    code: str
    scale: float
    feature: np.ndarray  # (64,)
    grasp_file: Path
    mesh_dir: Path


def required_paths(root: str | Path) -> dict[str, Path]:
    """The folders and split files the paper scale reads (for the preflight check)."""
    root = Path(root)
    return {
        "grasp poses": root / "datasetv4.1",
        "meshes": root / "meshdatav3_scaled",
        "point-cloud features": root / "meshdatav3_pc_feat",
        **{f"{name} split": root / file for name, file in SPLIT_FILES.items()},
    }


def load_dexgraspnet(root: str | Path, split: str = "train") -> list[DexGraspNetObject]:
    """Objects of one split from a local DexGraspNet copy (Sec. 6).

    A split file maps each object code (``<category>/<code>``) to its list of scales; the
    feature of an (object, scale) is ``meshdatav3_pc_feat/<code>/pc_feat_<scale as 3 digits>.npy``
    (UniDexGrasp's naming: scale 0.06 -> ``pc_feat_006.npy``), its grasp poses
    ``datasetv4.1/<code>.npy``.
    """
    if split not in SPLIT_FILES:
        raise ValueError(f"unknown split {split!r}; choose from {sorted(SPLIT_FILES)}")
    root = Path(root)
    missing = [
        f"{what}: {path}" for what, path in required_paths(root).items() if not path.exists()
    ]
    if missing:
        raise FileNotFoundError("DexGraspNet data missing: " + "; ".join(missing) + LAYOUT_HINT)
    entries = yaml.safe_load((root / SPLIT_FILES[split]).read_text()) or {}
    if not isinstance(entries, dict):
        raise ValueError(f"{root / SPLIT_FILES[split]}: expected a mapping code -> [scales]")
    objects = []
    for code, scales in entries.items():
        for scale in scales:
            feature_file = (
                root / "meshdatav3_pc_feat" / code / f"pc_feat_{round(scale * 100):03d}.npy"
            )
            if not feature_file.is_file():
                raise FileNotFoundError(f"point-cloud feature missing: {feature_file}{LAYOUT_HINT}")
            feature = np.load(feature_file).reshape(-1).astype(np.float32)
            objects.append(
                DexGraspNetObject(
                    code=code,
                    scale=float(scale),
                    feature=feature,
                    grasp_file=root / "datasetv4.1" / f"{code}.npy",
                    mesh_dir=root / "meshdatav3_scaled" / code,
                )
            )
    if not objects:
        raise ValueError(f"{root / SPLIT_FILES[split]} lists no objects")
    return objects
