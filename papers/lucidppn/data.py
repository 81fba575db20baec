"""Data of the LucidPPN experiment.

* Toy (brief Sec. 5): synthetic iso-luminant "birds", 32 x 32 RGB, K = 3 parts (head, body,
  tail) with exact part masks, M = 8 classes = 4 shape configurations x 2 body colours of the
  same luma. Pure numpy, a function of the seed.
* Paper scale (brief Sec. 6): ImageFolder trees ``<root>/{train,test}/<class>/<image>`` with
  the official part-map layout ``<root>_<K>parts/{train,test}/<k>/<class>/<image>`` (one
  grayscale map per part, e.g. from PDiscoNet), read from local disk only. The geometric
  augmentation (brief 3.5) is one affine warp applied to the image and its masks stacked
  together, so they cannot be misaligned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from papers.lucidppn.method import LUMA_WEIGHTS

PART_NAMES = ("head", "body", "tail")
BODY = PART_NAMES.index("body")

# ---------------------------------------------------------------- toy "birds" (brief Sec. 5)
# Shape configurations (head, body, tail); class = 2 * configuration + body colour.
SHAPE_CONFIGS = ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1))
# Part colours: a base RGB rescaled to a target luma, so both body colours have the same luma.
HEAD_COLOUR = ((0.2, 0.4, 0.1), 0.30)
BODY_COLOURS = (((0.8, 0.3, 0.25), 0.45), ((0.25, 0.45, 0.8), 0.45))  # "A", "B"
TAIL_COLOUR = ((0.75, 0.55, 0.7), 0.60)
BRIGHTNESS = (0.9, 1.1)  # per-image factor on all object colours
CLIP_GUARD = 0.97  # no object colour times the largest brightness may exceed this
BACKGROUND = (0.05, 0.2)  # grey level range
BACKGROUND_NOISE = 0.03  # per-pixel grey noise std (same in all channels)
RGB_NOISE = 0.01  # per-pixel, per-channel noise std
CENTRE = (15.0, 18.0)  # object centre (x, y) before jitter
CENTRE_JITTER = 2.0  # +- per axis
SCALE = (0.9, 1.1)
BODY_RADII = (9.0, 6.0)  # ellipse radii (x, y); the rectangle's half-sides are 0.85 x these
HEAD_OFFSET = (-6.0, -9.5)  # head centre relative to the body centre, times s
HEAD_RADIUS = 4.5
SQUARE_FACTOR = 0.85  # a square/rectangle's half-side relative to the round shape's radius
TAIL_LENGTH = 7.0  # times s; the tail starts at x = cx + 9 s - 1
TAIL_SLOPE = 0.7  # triangle tail: half-height grows 0.7 px per px
TAIL_BAR_HALF_HEIGHT = 1.2  # bar tail: half-height 1.2 s


def iso_luminant(base: tuple[float, float, float], target_luma: float) -> np.ndarray:
    """The base RGB colour rescaled so its ITU-R 601 luma equals ``target_luma``."""
    base_arr = np.asarray(base, dtype=np.float64)
    return base_arr * target_luma / float(base_arr @ np.asarray(LUMA_WEIGHTS))


def toy_colours() -> dict[str, np.ndarray]:
    """The toy's part colours; fails if any could be clipped (brief Sec. 5: clipping breaks
    iso-luminance and leaks colour into the grayscale branch)."""
    colours = {
        "head": iso_luminant(*HEAD_COLOUR),
        "body_a": iso_luminant(*BODY_COLOURS[0]),
        "body_b": iso_luminant(*BODY_COLOURS[1]),
        "tail": iso_luminant(*TAIL_COLOUR),
    }
    for name, colour in colours.items():
        if colour.max() * BRIGHTNESS[1] > CLIP_GUARD:
            raise ValueError(
                f"toy colour {name}={colour.round(3)} times {BRIGHTNESS[1]} exceeds {CLIP_GUARD}"
            )
    return colours


@dataclass
class ImageSet:
    """Images, labels and part masks held in memory."""

    x: torch.Tensor  # (N, 3, H, W) RGB in [0, 1] (hue-shifted copies may leave it)
    y: torch.Tensor  # (N,) int64
    masks: torch.Tensor  # (N, K, H, W) in [0, 1]


def make_toy_birds(n: int, seed: int, size: int = 32) -> ImageSet:
    """``n`` synthetic birds, classes drawn uniformly; a pure function of ``seed``.

    Brief Sec. 5: head/body/tail shapes, iso-luminant part colours, body pixels take
    precedence over head and tail, masks are the part pixel sets.
    """
    rng = np.random.default_rng(seed)
    colours = toy_colours()
    y = rng.integers(0, 2 * len(SHAPE_CONFIGS), size=n)
    shapes = np.asarray(SHAPE_CONFIGS)[y // 2]  # (N, 3): head, body, tail shape
    colour_b = (y % 2).astype(bool)

    cx = CENTRE[0] + rng.uniform(-CENTRE_JITTER, CENTRE_JITTER, n)
    cy = CENTRE[1] + rng.uniform(-CENTRE_JITTER, CENTRE_JITTER, n)
    s = rng.uniform(*SCALE, n)
    brightness = rng.uniform(*BRIGHTNESS, n)
    background = rng.uniform(*BACKGROUND, n)
    grey_noise = rng.normal(0.0, BACKGROUND_NOISE, (n, size, size))
    rgb_noise = rng.normal(0.0, RGB_NOISE, (n, 3, size, size))

    centres = np.arange(size) + 0.5  # pixel centres
    px = centres[None, None, :]  # (1, 1, W): x = column
    py = centres[None, :, None]  # (1, H, 1): y = row
    cx, cy, s = cx[:, None, None], cy[:, None, None], s[:, None, None]

    # Body: ellipse (shape 0) or axis-aligned rectangle (shape 1).
    rx, ry = BODY_RADII[0] * s, BODY_RADII[1] * s
    ellipse = ((px - cx) / rx) ** 2 + ((py - cy) / ry) ** 2 <= 1.0
    rectangle = (np.abs(px - cx) <= SQUARE_FACTOR * rx) & (np.abs(py - cy) <= SQUARE_FACTOR * ry)
    body = np.where(shapes[:, 1, None, None] == 0, ellipse, rectangle)

    # Head: disc (0) or square (1) at (cx - 6 s, cy - 9.5 s).
    hx, hy, hr = cx + HEAD_OFFSET[0] * s, cy + HEAD_OFFSET[1] * s, HEAD_RADIUS * s
    disc = (px - hx) ** 2 + (py - hy) ** 2 <= hr**2
    square = (np.abs(px - hx) <= SQUARE_FACTOR * hr) & (np.abs(py - hy) <= SQUARE_FACTOR * hr)
    head = np.where(shapes[:, 0, None, None] == 0, disc, square) & ~body

    # Tail from x0 = cx + 9 s - 1, length 7 s: triangle (0) or bar (1).
    x0 = cx + BODY_RADII[0] * s - 1.0
    along = px - x0
    in_length = (along >= 0) & (along <= TAIL_LENGTH * s)
    triangle = in_length & (np.abs(py - cy) <= TAIL_SLOPE * along)
    bar = in_length & (np.abs(py - cy) <= TAIL_BAR_HALF_HEIGHT * s)
    tail = np.where(shapes[:, 2, None, None] == 0, triangle, bar) & ~body & ~head

    image = np.broadcast_to((background[:, None, None] + grey_noise)[:, None], (n, 3, size, size))
    image = image.copy()
    body_colour = np.where(colour_b[:, None], colours["body_b"], colours["body_a"])  # (N, 3)
    for mask, colour in (
        (head, np.broadcast_to(colours["head"], (n, 3))),
        (body, body_colour),
        (tail, np.broadcast_to(colours["tail"], (n, 3))),
    ):
        value = (colour * brightness[:, None])[:, :, None, None]  # (N, 3, 1, 1)
        image = np.where(mask[:, None], value, image)
    image = np.clip(image + rgb_noise, 0.0, 1.0)

    masks = np.stack([head, body, tail], axis=1).astype(np.float32)  # (N, K, H, W)
    return ImageSet(
        torch.from_numpy(image.astype(np.float32)),
        torch.from_numpy(y.astype(np.int64)),
        torch.from_numpy(masks),
    )


def toy_splits(n_train: int, n_test: int, seed: int, test_seed_offset: int, size: int):
    """Train set from ``seed``, test set from ``test_seed_offset + seed`` (brief: 999 + seed)."""
    return make_toy_birds(n_train, seed, size), make_toy_birds(
        n_test, test_seed_offset + seed, size
    )


# ------------------------------------------------------- paper scale: local ImageFolder trees
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


def part_root(root: str | Path, num_parts: int) -> Path:
    """The official part-map folder next to the images: ``<root>_<K>parts``."""
    root = Path(root).expanduser()
    return root.parent / f"{root.name}_{num_parts}parts"


@dataclass
class Sample:
    image: Path
    masks: list[Path]  # one per part
    label: int


def _find_mask(folder: Path, image: Path) -> Path | None:
    """The part map of ``image`` in ``folder``: the same file name, or the same stem with an
    image suffix (PDiscoNet writes PNGs)."""
    exact = folder / image.name
    if exact.is_file():
        return exact
    for suffix in IMAGE_SUFFIXES:
        candidate = folder / (image.stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def index_image_folder(
    root: str | Path, split: str, num_parts: int
) -> tuple[list[Sample], list[str]]:
    """List ``<root>/<split>/<class>/<image>`` with each image's K part maps, checking every
    file's header: an image must have three channels, a part map be grayscale (one channel, or
    three read as grey) at the image's size. Part maps are matched to images by file name.

    Raises:
        FileNotFoundError / ValueError naming the folder or file at fault.
    """
    from PIL import Image

    split_dir = Path(root).expanduser() / split
    if not split_dir.is_dir():
        raise FileNotFoundError(
            f"{split_dir} does not exist (expected <root>/{split}/<class>/<image>)"
        )
    classes = sorted(p.name for p in split_dir.iterdir() if p.is_dir())
    if not classes:
        raise FileNotFoundError(f"{split_dir} has no class folders")
    masks_dir = part_root(root, num_parts) / split
    samples = []
    for label, name in enumerate(classes):
        for image in sorted((split_dir / name).iterdir()):
            if image.suffix.lower() not in IMAGE_SUFFIXES:
                continue
            with Image.open(image) as im:
                bands, size = len(im.getbands()), im.size
            if bands != 3:
                raise ValueError(
                    f"{image}: {bands} channel(s), LucidPPN needs RGB images (3 channels); "
                    "convert it, e.g. with PIL's .convert('RGB')"
                )
            masks = []
            for k in range(num_parts):
                mask = _find_mask(masks_dir / str(k) / name, image)
                if mask is None:
                    raise FileNotFoundError(
                        f"no part map {k} for {image}: expected "
                        f"{masks_dir / str(k) / name / image.name} (layout <root>_{num_parts}parts/"
                        f"{split}/<k>/<class>/<image>)"
                    )
                with Image.open(mask) as m:
                    m_bands, m_size = len(m.getbands()), m.size
                if m_bands not in (1, 3) or m_size != size:
                    raise ValueError(
                        f"part map {mask} ({m_bands} channel(s), {m_size[0]}x{m_size[1]}) does not "
                        f"match its image {image} (needs a grayscale map at {size[0]}x{size[1]})"
                    )
                masks.append(mask)
            samples.append(Sample(image, masks, label))
    if not samples:
        raise FileNotFoundError(f"{split_dir} holds no images ({', '.join(IMAGE_SUFFIXES)})")
    return samples, classes


def load_sample(sample: Sample, size: int) -> torch.Tensor:
    """Image and masks stacked as one tensor (3 + K, size, size) in [0, 1], resized with an
    anti-aliased bilinear filter (torchvision's ``Resize`` to a square)."""
    from PIL import Image

    planes = []
    with Image.open(sample.image) as im:
        planes.append(
            torch.from_numpy(np.asarray(im.convert("RGB"), dtype=np.float32) / 255.0).permute(
                2, 0, 1
            )
        )
    for path in sample.masks:
        with Image.open(path) as m:
            gray = m.convert("L")  # maps saved as RGB are read as their grey value
            planes.append(torch.from_numpy(np.asarray(gray, dtype=np.float32) / 255.0)[None])
    stacked = torch.cat(planes)  # (3 + K, H, W)
    return F.interpolate(
        stacked[None], size=(size, size), mode="bilinear", antialias=True, align_corners=False
    )[0]


# Geometric operations of TrivialAugmentWide with the colour operations removed (brief 3.5) and
# their largest magnitudes as the official TrivialAugmentWideNoColor sets them: shear 0.5,
# translation 16 px, rotation 60 degrees; a magnitude is one of 31 evenly spaced bins.
GEOMETRIC_OPS = ("identity", "shear_x", "shear_y", "translate_x", "translate_y", "rotate")
MAX_SHEAR, MAX_TRANSLATE_PX, MAX_ROTATE_DEG = 0.5, 16.0, 60.0
TRIVIAL_AUGMENT_BINS = 31


def augmentation_matrix(
    rng: np.random.Generator, size: int, out_size: int, crop_scale: tuple[float, float]
) -> np.ndarray:
    """One random geometric augmentation as a 3x3 matrix mapping output pixel coordinates
    (centred, in pixels of the ``size`` image) to input coordinates.

    TrivialAugmentWide's geometric ops (one, uniformly; random sign and magnitude bin),
    horizontal flip (p = 0.5), RandomResizedCrop(out_size, scale=crop_scale, ratio 3/4-4/3).
    """
    op = GEOMETRIC_OPS[rng.integers(len(GEOMETRIC_OPS))]
    level = rng.integers(TRIVIAL_AUGMENT_BINS) / (TRIVIAL_AUGMENT_BINS - 1)
    sign = 1.0 if rng.random() < 0.5 else -1.0
    warp = np.eye(3)
    if op == "shear_x":
        warp[0, 1] = sign * level * MAX_SHEAR
    elif op == "shear_y":
        warp[1, 0] = sign * level * MAX_SHEAR
    elif op == "translate_x":
        warp[0, 2] = sign * level * MAX_TRANSLATE_PX
    elif op == "translate_y":
        warp[1, 2] = sign * level * MAX_TRANSLATE_PX
    elif op == "rotate":
        a = math.radians(sign * level * MAX_ROTATE_DEG)
        warp[:2, :2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    flip = np.diag([-1.0 if rng.random() < 0.5 else 1.0, 1.0, 1.0])
    # RandomResizedCrop: area fraction and aspect ratio (log-uniform), a random position.
    area = size * size * rng.uniform(*crop_scale)
    ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
    w = min(size, math.sqrt(area * ratio))
    h = min(size, math.sqrt(area / ratio))
    ox = rng.uniform(-(size - w) / 2, (size - w) / 2)
    oy = rng.uniform(-(size - h) / 2, (size - h) / 2)
    crop = np.array([[w / out_size, 0, ox], [0, h / out_size, oy], [0, 0, 1]])
    # output -> crop window -> flip -> inverse of the augmentation warp (to sample the input)
    return np.linalg.inv(warp) @ flip @ crop


def apply_geometry(stacked: torch.Tensor, matrix: np.ndarray, out_size: int) -> torch.Tensor:
    """Warp (C, S, S) with one affine ``matrix`` (output pixels -> input pixels, centred) to
    (C, out_size, out_size); outside the image is filled with zeros. The image and its masks
    travel in the same tensor, so they get the identical transform (brief 3.8 item 6)."""
    size = stacked.shape[-1]
    # normalised output coords -> output pixels -> input pixels -> normalised input coords
    to_pixels = np.diag([out_size / 2, out_size / 2, 1.0])
    to_normalised = np.diag([2 / size, 2 / size, 1.0])
    theta = (to_normalised @ matrix @ to_pixels)[:2]
    grid = F.affine_grid(
        torch.tensor(theta, dtype=torch.float32)[None],
        [1, stacked.shape[0], out_size, out_size],
        align_corners=False,
    )
    return F.grid_sample(
        stacked[None], grid, mode="bilinear", padding_mode="zeros", align_corners=False
    )[0]


class ImageFolderParts(torch.utils.data.Dataset):
    """A paper-scale split: (image (3, S, S) in [0, 1], masks (K, S, S), label) per index.

    With ``augment``, item ``i`` of epoch ``e`` is warped with a generator seeded by
    (seed, e, i), so batches are a pure function of the step (resume, any worker count).
    """

    def __init__(
        self,
        samples: list[Sample],
        image_size: int,
        resize_to: int,
        augment: bool,
        crop_scale: tuple[float, float],
        seed: int,
    ) -> None:
        self.samples, self.image_size, self.resize_to = samples, image_size, resize_to
        self.augment, self.crop_scale, self.seed = augment, crop_scale, seed
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        sample = self.samples[i]
        if self.augment:
            stacked = load_sample(sample, self.resize_to)
            rng = np.random.default_rng([self.seed, self.epoch, i])
            matrix = augmentation_matrix(rng, self.resize_to, self.image_size, self.crop_scale)
            stacked = apply_geometry(stacked, matrix, self.image_size)
        else:
            stacked = load_sample(sample, self.image_size)
        return stacked[:3].clamp(0, 1), stacked[3:].clamp(0, 1), sample.label
