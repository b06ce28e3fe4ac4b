"""Write a composited image as PNG (Pillow, imported only when needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import SpecError
from ..outputs import atomic
from .images import check_pixels


def to_rgba8(image, *, background=None) -> np.ndarray:
    """Premultiplied float RGBA → 8-bit straight-alpha RGBA, or RGB over `background`.

    Parameters
    ----------
    image : ndarray, shape (height, width, 4)
        Premultiplied RGBA (any floating dtype); values are clipped to [0, 1].
    background : sequence of 3 floats in [0, 1], optional
        Composite over this opaque colour and return RGB (as a viewer that
        shows the final frame would); by default keep the alpha channel.

    Returns
    -------
    ndarray of uint8, shape (height, width, 4) or (height, width, 3)
    """
    image = check_pixels(image, name="image", where="save_png", dtype=None)
    if image.ndim != 3:
        raise SpecError(f"save_png: image has shape {image.shape}, expected (height, width, 4)")
    image = np.clip(image.astype(np.float64), 0.0, 1.0)
    alpha = image[..., 3:]
    if background is not None:
        bg = np.asarray(background, dtype=np.float64)
        if bg.shape != (3,) or not ((bg >= 0) & (bg <= 1)).all():
            raise SpecError(f"save_png: background={background!r}, expected 3 floats in [0, 1]")
        rgb = np.clip(image[..., :3] + (1.0 - alpha) * bg, 0.0, 1.0)
        return np.rint(rgb * 255.0).astype(np.uint8)
    # PNG stores straight (non-premultiplied) alpha.
    straight = np.divide(image[..., :3], alpha, out=np.zeros_like(image[..., :3]),
                         where=alpha > 0)
    rgba = np.concatenate([np.clip(straight, 0.0, 1.0), alpha], axis=-1)
    return np.rint(rgba * 255.0).astype(np.uint8)


def save_png(image, path, *, background=None) -> Path:
    """Save a premultiplied RGBA image as PNG so a person can look at it.

    Parameters
    ----------
    image : ndarray, shape (height, width, 4)
        Premultiplied RGBA, e.g. the result of :func:`serial_composite`.
    path : str or Path
        File to write.
    background : sequence of 3 floats in [0, 1], optional
        See :func:`to_rgba8`.

    Returns
    -------
    Path

    Raises
    ------
    SpecError
        If the image has the wrong shape, or Pillow is not installed.
    """
    pixels = to_rgba8(image, background=background)
    try:
        from PIL import Image
    except ImportError:
        raise SpecError("save_png: Pillow is not installed, expected `pip install pillow` "
                        "(the viz extra)") from None
    path = Path(path)
    with atomic(path, option="--save", binary=True) as out:      # whole or not at all
        Image.fromarray(pixels).save(out, format="PNG")          # mode inferred: RGBA or RGB
    return path
