"""Images and compositing kernels for sort-last parallel rendering.

Premultiplied RGBA float32 images ``(height, width, 4)`` or pixel vectors
``(n, 4)``; the over operator (NumPy reference and Rust kernel), z-buffer
compositing, depth orders, active-pixel run-length encoding, test patterns
and PNG output. The compositing schedules (``topocoll.schedules``) and the
CLI use these; see ``docs/imaging.md``.
"""

from .active import SparseImage, decode_active, encode_active, over_sparse
from .images import (CHANNELS, PIXEL_BYTES, check_pixels, depth_order, depth_positions,
                     over_numpy, read_depth_order, serial_composite, zbuffer_numpy)
from .kernel import over
from .patterns import PATTERNS, make_pattern
from .png import save_png, to_rgba8

__all__ = [
    "CHANNELS", "PATTERNS", "PIXEL_BYTES", "SparseImage", "check_pixels", "decode_active",
    "depth_order", "depth_positions", "encode_active", "make_pattern", "over", "over_numpy",
    "over_sparse", "read_depth_order", "save_png", "serial_composite", "to_rgba8",
    "zbuffer_numpy",
]
