"""Geometry of toy solids: an occupancy grid and its surface points (brief Sec. 5).

The grid spans the solid's bounding box with cubic cells, ``cells_long`` of them along the
longest extent; each primitive is an implicit test at the cell centres. Surface points are the
centres of occupied cells with an empty 6-neighbour. Identical programs give identical grids,
and the same sampler seed gives identical clouds, so a correct program scores D = 0 exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from papers.cadcodeverify.toycad import Solid


@dataclass(frozen=True)
class Grid:
    """Boolean occupancy ``occ`` of shape (nx, ny, nz) and the cell centres' coordinates."""

    occ: np.ndarray  # (nx, ny, nz) bool
    x: np.ndarray  # (nx,) cell-centre coordinates
    y: np.ndarray  # (ny,)
    z: np.ndarray  # (nz,)
    cell: float  # edge length of the cubic cells


def _axis_centres(low: float, high: float, cell: float) -> np.ndarray:
    """Cubic cells covering [low, high], centred on the interval (at least one cell)."""
    extent = high - low
    n = max(1, int(np.ceil(extent / cell - 1e-9)))
    start = low + (extent - n * cell) / 2
    return start + (np.arange(n) + 0.5) * cell


def occupancy(solid: Solid, cells_long: int) -> Grid:
    """The occupancy grid of a toy solid (base, boss on top, hole through both)."""
    if cells_long < 2:
        raise ValueError(f"cells_long must be >= 2, got {cells_long}")
    hx, hy = solid.half_widths
    top = solid.height
    cell = max(2 * hx, 2 * hy, top) / cells_long
    x = _axis_centres(-hx, hx, cell)
    y = _axis_centres(-hy, hy, cell)
    z = _axis_centres(0.0, top, cell)
    X, Y = np.meshgrid(x, y, indexing="ij")  # (nx, ny)
    R2 = X**2 + Y**2

    def footprint(kind: str, half_x: float, half_y: float) -> np.ndarray:
        if kind == "box":
            return (np.abs(X) <= half_x) & (np.abs(Y) <= half_y)
        return R2 <= half_x**2

    base = solid.base
    base_xy = footprint(base.kind, *base.half_widths)
    base_z = z <= base.height
    occ = base_xy[:, :, None] & base_z[None, None, :]
    if solid.boss is not None:
        b = solid.boss
        boss_xy = footprint(b.kind, b.size, b.size)
        boss_z = (z > base.height) & (z <= base.height + b.height)
        occ |= boss_xy[:, :, None] & boss_z[None, None, :]
    if solid.hole is not None:
        occ &= ~(R2 < solid.hole.r**2)[:, :, None]
    return Grid(occ, x, y, z, cell)


def surface_cells(occ: np.ndarray) -> np.ndarray:
    """Occupied cells with at least one empty 6-neighbour (the grid is padded first, so the
    grid's border counts as outside). Returns a boolean mask of ``occ``'s shape."""
    padded = np.pad(occ, 1, constant_values=False)
    inner = padded[1:-1, 1:-1, 1:-1]
    all_neighbours_full = (
        padded[:-2, 1:-1, 1:-1]
        & padded[2:, 1:-1, 1:-1]
        & padded[1:-1, :-2, 1:-1]
        & padded[1:-1, 2:, 1:-1]
        & padded[1:-1, 1:-1, :-2]
        & padded[1:-1, 1:-1, 2:]
    )
    return inner & ~all_neighbours_full


def surface_points(grid: Grid, n_points: int, sampler_seed: int) -> np.ndarray:
    """``n_points`` surface-cell centres (n_points, 3), drawn with a fixed sampler seed.

    With fewer surface cells than ``n_points`` the draw is with replacement. The seed is the
    same for generated and ground-truth solids (brief Sec. 5), so equal grids give equal clouds.
    """
    i, j, k = np.nonzero(surface_cells(grid.occ))
    if i.size == 0:
        raise ValueError("the solid has no occupied cell (empty occupancy grid)")
    points = np.stack([grid.x[i], grid.y[j], grid.z[k]], axis=1)  # (n_surface, 3)
    rng = np.random.default_rng(sampler_seed)
    pick = rng.choice(len(points), size=n_points, replace=len(points) < n_points)
    return points[pick]
