"""Renders of the *generated* object, the only thing the answerer sees (paper Sec. 3, step 3).

* Toy (brief Sec. 5): three orthographic views of the occupancy grid: top (an occupancy mask
  plus a height map over (x, y)), front (a silhouette over (x, z)) and side (a silhouette over
  (y, z)).
* Paper scale (brief Sec. 6): our own numpy z-buffer rasteriser over mesh triangles,
  orthographic, azimuth 0/90/180/270 at elevation 30 degrees, Lambert shading, PNG via Pillow.
  No OpenGL, so it runs on machines without a display.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from papers.cadcodeverify.geometry import Grid, occupancy
from papers.cadcodeverify.toycad import Solid


@dataclass(frozen=True)
class ToyViews:
    """The toy's 'images': arrays indexed [x, y], [x, z] and [y, z] (one pixel per cell)."""

    top_mask: np.ndarray  # (nx, ny) bool: any occupied cell above (x, y)
    height_map: np.ndarray  # (nx, ny) int: cells up to the highest occupied one, 0 if none
    front: np.ndarray  # (nx, nz) bool: silhouette seen along y
    side: np.ndarray  # (ny, nz) bool: silhouette seen along x


def views_of_grid(grid: Grid) -> ToyViews:
    occ = grid.occ
    nz = occ.shape[2]
    top_mask = occ.any(axis=2)
    # index of the highest occupied cell + 1 (argmax over the z-reversed column)
    highest = nz - np.argmax(occ[:, :, ::-1], axis=2)
    height_map = np.where(top_mask, highest, 0)
    return ToyViews(top_mask, height_map, occ.any(axis=1), occ.any(axis=0))


class ToyRenderer:
    """Renders a compiled toy solid (the toy's O = C(y)) from its occupancy grid."""

    def __init__(self, cells_long: int):
        self.cells_long = cells_long

    def render(self, solid: Solid) -> ToyViews:
        return views_of_grid(occupancy(solid, self.cells_long))


def views_image(views: ToyViews) -> np.ndarray:
    """The three toy views side by side as one grey image (for figures), z pointing up."""
    top = views.height_map.T[::-1] / max(1, views.height_map.max())
    front = views.front.T[::-1].astype(float)
    side = views.side.T[::-1].astype(float)
    rows = max(top.shape[0], front.shape[0], side.shape[0])
    gap = np.full((rows, 2), np.nan)

    def pad(a: np.ndarray) -> np.ndarray:
        out = np.full((rows, a.shape[1]), np.nan)
        out[rows - a.shape[0] :] = a
        return out

    return np.concatenate([pad(top), gap, pad(front), gap, pad(side)], axis=1)


# --------------------------------------------------------------------------- paper scale


def _camera_rotation(azimuth_deg: float, elevation_deg: float) -> np.ndarray:
    """Rows: the image's right, up and towards-viewer axes in world coordinates (z up)."""
    a, e = np.radians(azimuth_deg), np.radians(elevation_deg)
    towards = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
    right = np.array([-np.sin(a), np.cos(a), 0.0])
    up = np.cross(towards, right)
    return np.stack([right, up, towards])


def rasterise(
    vertices: np.ndarray,
    faces: np.ndarray,
    azimuth_deg: float,
    elevation_deg: float,
    size: int,
    margin: float = 0.05,
) -> np.ndarray:
    """Orthographic z-buffer render of a triangle mesh with Lambert shading.

    Args:
        vertices: (V, 3) float; faces: (F, 3) int.
    Returns:
        (size, size) uint8 grey image: background white, shade = |n . view| (two-sided).
    """
    R = _camera_rotation(azimuth_deg, elevation_deg)
    cam = np.asarray(vertices, float) @ R.T  # (V, 3): u (right), v (up), depth (towards viewer)
    lo, hi = cam[:, :2].min(axis=0), cam[:, :2].max(axis=0)
    scale = (1 - 2 * margin) * size / max(float((hi - lo).max()), 1e-12)
    centre = (lo + hi) / 2
    px = (cam[:, 0] - centre[0]) * scale + size / 2  # column
    py = size / 2 - (cam[:, 1] - centre[1]) * scale  # row (image y down)
    depth = cam[:, 2]
    tri = np.asarray(faces, int)
    normals = np.cross(cam[tri[:, 1]] - cam[tri[:, 0]], cam[tri[:, 2]] - cam[tri[:, 0]])
    lengths = np.linalg.norm(normals, axis=1)
    shade = np.where(lengths > 0, np.abs(normals[:, 2]) / np.maximum(lengths, 1e-30), 0.0)

    zbuf = np.full((size, size), -np.inf)
    image = np.ones((size, size))
    for f, (i0, i1, i2) in enumerate(tri):
        x = px[[i0, i1, i2]]
        y = py[[i0, i1, i2]]
        c0, c1 = max(int(np.floor(x.min())), 0), min(int(np.ceil(x.max())), size - 1)
        r0, r1 = max(int(np.floor(y.min())), 0), min(int(np.ceil(y.max())), size - 1)
        if c0 > c1 or r0 > r1:
            continue
        cols, rows = np.meshgrid(np.arange(c0, c1 + 1) + 0.5, np.arange(r0, r1 + 1) + 0.5)
        det = (y[1] - y[2]) * (x[0] - x[2]) + (x[2] - x[1]) * (y[0] - y[2])
        if abs(det) < 1e-12:
            continue  # edge-on triangle: no area on screen
        w0 = ((y[1] - y[2]) * (cols - x[2]) + (x[2] - x[1]) * (rows - y[2])) / det
        w1 = ((y[2] - y[0]) * (cols - x[2]) + (x[0] - x[2]) * (rows - y[2])) / det
        w2 = 1 - w0 - w1
        inside = (w0 >= 0) & (w1 >= 0) & (w2 >= 0)
        if not inside.any():
            continue
        z = w0 * depth[i0] + w1 * depth[i1] + w2 * depth[i2]
        window = zbuf[r0 : r1 + 1, c0 : c1 + 1]
        nearer = inside & (z > window)
        window[nearer] = z[nearer]
        image[r0 : r1 + 1, c0 : c1 + 1][nearer] = 0.15 + 0.8 * shade[f]
    return (np.clip(image, 0, 1) * 255).astype(np.uint8)


def png_bytes(image: np.ndarray) -> bytes:
    """Encode a grey uint8 image as PNG (Pillow)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


class MeshRenderer:
    """Paper-scale renderer: four views of a trimesh mesh as PNG bytes (brief Sec. 6)."""

    def __init__(self, azimuths: list[float], elevation: float, size: int):
        self.azimuths = list(azimuths)
        self.elevation = elevation
        self.size = size

    def render(self, mesh) -> list[bytes]:
        return [
            png_bytes(rasterise(mesh.vertices, mesh.faces, a, self.elevation, self.size))
            for a in self.azimuths
        ]
