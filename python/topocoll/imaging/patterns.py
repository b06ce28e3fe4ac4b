"""Test images, one per rank: checkerboard, random and sphere patterns."""

from __future__ import annotations

import numpy as np

from ..errors import SpecError

PATTERNS = ("checker", "random", "sphere")
GOLDEN = 0.6180339887498949


def _positive_int(value, *, name: str, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise SpecError(f"make_pattern: {name}={value!r}, expected an integer >= {minimum}")
    return int(value)


def rank_color(rank: int) -> np.ndarray:
    """A saturated colour per rank (hues spaced by the golden ratio), RGB in [0, 1]."""
    hue = (rank * GOLDEN) % 1.0
    k = (np.array([5.0, 3.0, 1.0]) + hue * 6.0) % 6.0
    # HSV → RGB with s = 0.8, v = 1.
    return (1.0 - 0.8 * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)).astype(np.float32)


def make_pattern(name: str, rank: int, p: int, width: int, height: int, seed: int = 0):
    """Rank `rank`'s image of a test pattern, premultiplied RGBA float32.

    Parameters
    ----------
    name : {"checker", "random", "sphere"}
        ``"checker"``: the radix-k paper's test image, a checkerboard "where
        each process contained a slightly different pattern offset from the
        previous one" (Peterka et al. 2009, §4): squares of side
        ``min(width, height) // 8`` (at least 1) in the rank's colour, alpha
        0.5 and 0.25 alternately, shifted by ``rank · max(1, side // 4)``
        pixels along both axes; every pixel is active (the paper's worst
        case). ``"random"``: independent uniform colours and alphas in
        [0, 1), premultiplied. ``"sphere"``: a shaded disc, alpha 0.6, on a
        transparent background, centres spread on a circle by rank, for
        pictures and for active-pixel tests.
    rank, p : int
        This image's rank, ``0 <= rank < p``.
    width, height : int
        Image size in pixels (≥ 1).
    seed : int
        Seed of ``"random"`` (with `rank`: ``default_rng([seed, rank])``);
        the other patterns are deterministic and ignore it.

    Returns
    -------
    ndarray of float32, shape (height, width, 4)

    Raises
    ------
    SpecError
        If `name` is unknown or a number is out of range.

    References
    ----------
    .. [1] Peterka, Goodell, Ross, Shen & Thakur, Radix-k image compositing,
       SC 2009, §4 — ``../shared/seeds/radix-k-compositing.txt``.

    Examples
    --------
    >>> image = make_pattern("checker", 1, 4, width=16, height=8)
    >>> image.shape, image.dtype.name, float(image[..., 3].min())
    ((8, 16, 4), 'float32', 0.25)
    """
    if name not in PATTERNS:
        raise SpecError(f"make_pattern: name={name!r}, expected one of {', '.join(PATTERNS)}")
    p = _positive_int(p, name="p", minimum=1)
    rank = _positive_int(rank, name="rank", minimum=0)
    if rank >= p:
        raise SpecError(f"make_pattern: rank={rank}, expected 0 <= rank < p={p}")
    width = _positive_int(width, name="width", minimum=1)
    height = _positive_int(height, name="height", minimum=1)
    seed = _positive_int(seed, name="seed", minimum=0)
    if name == "random":
        rng = np.random.default_rng([seed, rank])
        image = rng.random((height, width, 4), dtype=np.float32)
        image[..., :3] *= image[..., 3:]
        return image
    y, x = np.mgrid[0:height, 0:width]
    color = rank_color(rank)
    if name == "checker":
        side = max(1, min(width, height) // 8)
        shift = rank * max(1, side // 4)
        on = ((x + shift) // side + (y + shift) // side) % 2 == 0
        alpha = np.where(on, np.float32(0.5), np.float32(0.25))
        shade = np.ones_like(alpha)
    else:
        angle = 2.0 * np.pi * rank / p
        radius = 0.3 * min(width, height)
        cx = width / 2 + (0.2 * width * np.cos(angle) if p > 1 else 0.0)
        cy = height / 2 + (0.2 * height * np.sin(angle) if p > 1 else 0.0)
        dx, dy = (x + 0.5 - cx) / radius, (y + 0.5 - cy) / radius
        r2 = dx * dx + dy * dy
        inside = r2 < 1.0
        nz = np.sqrt(np.clip(1.0 - r2, 0.0, 1.0))
        light = np.array([-0.4, -0.4, 0.8]) / np.sqrt(0.96)
        lambert = np.clip(dx * light[0] + dy * light[1] + nz * light[2], 0.0, 1.0)
        shade = np.where(inside, 0.25 + 0.75 * lambert, 0.0).astype(np.float32)
        alpha = np.where(inside, np.float32(0.6), np.float32(0.0))
    image = np.empty((height, width, 4), dtype=np.float32)
    image[..., :3] = color * (shade * alpha)[..., None]
    image[..., 3] = alpha
    return image
