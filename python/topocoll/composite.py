"""Run a compositing schedule on real images, in one process, and check it.

:func:`composite` builds one of the six compositing schedules
(:mod:`topocoll.schedules.compositing`), executes it with the reference
executor (:func:`topocoll.verify.execute`) on the ranks' images with the over
operator, assembles the pieces the ranks end with, and compares the picture
with a serial over-composition of all images. ``topocoll composite`` is its
command line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .argtypes import MAX_SEED, bounded_int
from .outputs import check_outputs
from .errors import SpecError

#: command-line limits: every rank's image lives in this one process
MAX_COMPOSITE_P = 4096
MAX_SIDE = 1 << 16
MAX_IMAGES_BYTES = 1 << 30
IMAGE_PIXEL_BYTES = 16     # premultiplied RGBA, float32

#: relative error the check accepts: float64 images reach it with margin; float32 images are
#: judged against float32 rounding (see :func:`tolerance_for`).
TOLERANCE = 1e-6


def tolerance_for(dtype, p: int) -> float:
    """Accepted relative error for ``p`` images of ``dtype``.

    1e-6 for float64 (the issue's bound). A float32 composite rounds at every
    over, about ε = 2^-24 relative each, along a chain of up to ``p − 1`` of
    them in an order other than the serial fold; we accept
    ``max(1e-6, 4·p·ε)``.
    """
    if np.dtype(dtype) == np.float64:
        return TOLERANCE
    return max(TOLERANCE, 4 * p * 2.0**-24)


@dataclass(frozen=True)
class CompositeResult:
    """What :func:`composite` produced and how it compares.

    Attributes
    ----------
    image : ndarray
        The composited picture, shape of one input image.
    schedule : Schedule
        The schedule that was executed.
    reference : ndarray or None
        The serial over-composition in float64 (None if not checked).
    relative_error : float or None
        ``max |image − reference| / max |reference|`` over all pixels and
        channels (0 when the reference is all zero and the image too).
    tolerance : float
        What the check accepts (:func:`tolerance_for`).
    """

    image: np.ndarray
    schedule: object
    reference: np.ndarray | None
    relative_error: float | None
    tolerance: float

    @property
    def ok(self) -> bool | None:
        """True/False after a check, None without one."""
        if self.relative_error is None:
            return None
        return self.relative_error <= self.tolerance


def _pixels(images) -> tuple[list[np.ndarray], tuple]:
    from .imaging import check_pixels

    if isinstance(images, np.ndarray) and images.ndim in (3, 4):
        images = list(images)
    try:
        images = list(images)
    except TypeError:
        raise SpecError("composite: images is not a sequence, expected one RGBA image per rank") from None
    if not images:
        raise SpecError("composite: no images, expected one per rank")
    first = check_pixels(images[0], name="images[0]", where="composite", dtype=None)
    if first.dtype not in (np.float32, np.float64):
        raise SpecError(f"composite: images[0] has dtype {first.dtype}, expected float32 or float64")
    flat = []
    for i, image in enumerate(images):
        image = check_pixels(image, name=f"images[{i}]", where="composite", dtype=first.dtype)
        if image.shape != first.shape:
            raise SpecError(f"composite: images[{i}] has shape {image.shape}, expected {first.shape} "
                            "like images[0]")
        flat.append(np.ascontiguousarray(image.reshape(-1, 4)))
    return flat, first.shape


def _over_operator(dtype, threads):
    """``op(front, back)`` for the reference executor: the Rust kernel for
    float32, the NumPy reference for float64."""
    from .imaging import over, over_numpy

    if np.dtype(dtype) == np.float32:
        return lambda front, back: over(front, back, threads=threads)
    return lambda front, back: over_numpy(front, back)


OPERATORS = ("over", "zbuffer")


def _with_depth(flat, shape, depths):
    """RGBA pixels plus their depth as a fifth channel, so a block of pixels
    carries its depths through the schedule."""
    if depths is None:
        raise SpecError("composite: operator='zbuffer' without depths, expected one depth map per rank")
    depths = list(depths)
    if len(depths) != len(flat):
        raise SpecError(f"composite: {len(depths)} depth maps, expected one per image ({len(flat)})")
    out = []
    for rank, (pixels, depth) in enumerate(zip(flat, depths)):
        depth = np.asarray(depth)
        if depth.shape != tuple(shape[:-1]):
            raise SpecError(f"composite: depth map of rank {rank} has shape {depth.shape}, "
                            f"expected {tuple(shape[:-1])}")
        out.append(np.concatenate([pixels, depth.reshape(-1, 1).astype(pixels.dtype)], axis=1))
    return out


def _zbuffer_pixels(a, b):
    """z-buffer on (n, 5) RGBA + depth pixels (commutative, associative)."""
    from .imaging import zbuffer_numpy

    color, depth = zbuffer_numpy(a[:, :4], a[:, 4], b[:, :4], b[:, 4])
    return np.concatenate([color, depth[:, None]], axis=1)


def composite(images, algorithm: str, k=None, order=None, threads=None, *, check: bool = True,
              gather_root: int | None = None, operator: str = "over", depths=None) -> CompositeResult:
    """Composite ``images`` (one per rank) with a compositing schedule.

    Parameters
    ----------
    images : sequence of ndarray, or ndarray of shape (p, ...)
        One premultiplied RGBA image per rank, ``(height, width, 4)`` or a
        flat ``(n, 4)`` pixel vector, all of one shape and dtype (float32 runs
        the Rust over kernel, float64 the NumPy reference).
    algorithm : str
        One of ``direct_send``, ``binary_swap``, ``two_three_swap``,
        ``parallel_pipeline``, ``radix_k``, ``shift_based``.
    k : list of int or str, optional
        Radix-k's k-vector or rule (radix_k only; default ``"eights"``).
    order : sequence of int, optional
        Ranks front to back (default rank order).
    threads : int, optional
        Threads for the Rust kernel (float32 only).
    check : bool
        Compare with a serial over-composition in float64.
    gather_root : int, optional
        Run the schedule with its final gather to this rank (an ordered
        reduce) and take the picture from there.
    operator : {"over", "zbuffer"}
        ``"zbuffer"`` keeps the nearest fragment per pixel
        (:func:`topocoll.imaging.zbuffer_numpy`, commutative); it needs
        ``depths``, and ``order`` does not apply.
    depths : sequence of ndarray, optional
        With ``"zbuffer"``: one depth map per rank, shaped like an image
        without its channel axis (smaller is nearer).

    Returns
    -------
    CompositeResult

    Raises
    ------
    SpecError
        Bad images, algorithm, k, order or threads (one line).

    Notes
    -----
    The schedule's blocks split the ``n`` pixels into ``p`` near-equal
    contiguous pieces; each rank ends with one (``result_blocks``), and the
    picture is their union — the reduce-scatter of radix-k §1.2 ("each process
    ends with a contiguous subset of all of the finished pixels"). The serial
    reference folds over from the back (:func:`topocoll.imaging.serial_composite`),
    as the radix-k paper cross-checked its runs (§4).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> images = rng.random((12, 7, 5, 4))
    >>> images[..., :3] *= images[..., 3:]
    >>> result = composite(images, "radix_k", k=[4, 3])
    >>> result.ok, result.image.shape
    (True, (7, 5, 4))
    """
    from .imaging import serial_composite
    from .imaging.kernel import check_threads
    from .schedules.compositing import ALGORITHMS, PIXEL_BYTES
    from .schedules.registry import lookup
    from .verify import execute

    flat, shape = _pixels(images)
    p, n, dtype = len(flat), flat[0].shape[0], flat[0].dtype
    if operator not in OPERATORS:
        raise SpecError(f"composite: operator={operator!r}, expected one of {', '.join(OPERATORS)}")
    if operator == "zbuffer":
        if order is not None:
            raise SpecError("composite: order given with operator='zbuffer', expected no depth order "
                            "(the depth maps decide)")
        flat = _with_depth(flat, shape, depths)
    elif depths is not None:
        raise SpecError("composite: depths given with operator='over', expected depths only with 'zbuffer'")
    if algorithm not in ALGORITHMS:
        raise SpecError(f"composite: algorithm={algorithm!r}, expected one of {', '.join(ALGORITHMS)}")
    if k is not None and algorithm != "radix_k":
        raise SpecError(f"composite: k={k!r} given for {algorithm}, expected k only with radix_k")
    threads = check_threads(threads, where="composite")
    params = {"depth_order": None if order is None else list(order), "gather_root": gather_root}
    if k is not None:
        params["k"] = k
    if n == 0:
        raise SpecError("composite: images have 0 pixels, expected at least 1")
    pixel_bytes = PIXEL_BYTES if operator == "over" else flat[0].shape[1] * flat[0].itemsize
    schedule = lookup("reduce_scatter", algorithm).func(p, count=n, itemsize=pixel_bytes, **params)
    op = _over_operator(dtype, threads) if operator == "over" else _zbuffer_pixels
    outputs = execute(schedule, flat, op=op)
    picture = np.empty_like(flat[0])
    bounds = schedule.bounds
    if gather_root is not None:
        picture[:] = outputs[gather_root]
    else:
        for rank in range(p):
            for block in schedule.result_blocks(rank):
                lo, hi = bounds[block], bounds[block + 1]
                picture[lo:hi] = outputs[rank][lo:hi]
    if operator == "zbuffer":
        picture = picture[:, :4]
    picture = picture.reshape(shape)
    reference = error = None
    if check and operator == "zbuffer":
        acc = flat[0]
        for f in flat[1:]:
            acc = _zbuffer_pixels(acc, f)
        reference = acc[:, :4].astype(np.float64).reshape(shape)
    elif check:
        reference = serial_composite([f.reshape(shape) for f in flat], order, dtype=np.float64)
    if check:
        scale = float(np.abs(reference).max()) if reference.size else 0.0
        diff = float(np.abs(picture.astype(np.float64) - reference).max()) if reference.size else 0.0
        error = diff / scale if scale > 0 else diff
    return CompositeResult(picture, schedule, reference, error, tolerance_for(dtype, p))


# ---- command line ------------------------------------------------------------------------------

def _parse_k(text: str | None):
    if text is None:
        return None
    from .schedules.compositing import K_RULES

    if text.strip() in K_RULES:
        return text.strip()
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise SpecError(f"--k {text!r}, expected radices such as 8,8 or one of {', '.join(K_RULES)}") from None


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def cmd_composite(args) -> int:
    """``topocoll composite``: run one compositing schedule on test images."""
    from .imaging import make_pattern, read_depth_order, save_png
    from .schedules.compositing import table1_costs
    from .schedules.metrics import report

    p = args.procs
    if p * args.width * args.height * IMAGE_PIXEL_BYTES > MAX_IMAGES_BYTES:
        raise SpecError(f"-P {p} --width {args.width} --height {args.height}: {p} images of "
                        f"{args.width}x{args.height} pixels need {p * args.width * args.height * IMAGE_PIXEL_BYTES} "
                        f"bytes, expected at most {MAX_IMAGES_BYTES} (1 GiB) in one process")
    check_outputs([("--save", args.save)], [("--order", args.order)])
    k = _parse_k(args.k)
    if k is not None and args.algorithm != "radix_k":
        raise SpecError(f"--k given for {args.algorithm}, expected --k only with --algorithm radix_k")
    seed = args.seed
    if not 0 <= seed <= MAX_SEED:
        raise SpecError(f"--seed {seed}, expected a non-negative integer below 2^64")
    order = None if args.order is None else [int(r) for r in read_depth_order(args.order, p)]
    images = [make_pattern(args.pattern, rank, p, args.width, args.height, seed=seed) for rank in range(p)]
    depths = None
    if args.operator == "zbuffer":
        # each rank's fragments at seeded random depths; transparent pixels are background
        depths = [np.where(image[..., 3] > 0,
                           np.random.default_rng([seed, rank]).random(image.shape[:-1]), np.inf)
                  for rank, image in enumerate(images)]
    result = composite(images, args.algorithm, k=k, order=order, threads=args.threads, check=args.check,
                       operator=args.operator, depths=depths)
    sched = result.schedule
    rep = report(sched)
    n_bytes = sched.count * sched.itemsize   # 16 B/pixel for over, 20 with the z-buffer's depth
    row = table1_costs(p, n_bytes, k=sched.params.get("k"))[args.algorithm]
    shown = ", ".join(f"{key}={value}" for key, value in sched.params.items())
    depth_text = ("z-buffer (seeded random depths)" if args.operator == "zbuffer"
                  else f"over, depth order: {'file ' + str(args.order) if order else 'rank order'}")
    print(f"composite: {args.algorithm}{f'({shown})' if shown else ''} on P={p}, {args.width}x{args.height} "
          f"{args.pattern} images, seed {seed}, {depth_text}")
    print(f"schedule: {rep.rounds} steps, {rep.messages} messages, at most {_bytes(rep.max_bytes_per_rank)} "
          f"sent by a rank; α-β-γ model {rep.cost}")
    print(f"Table 1: latency {row.latency:g}·α, bandwidth {_bytes(row.bandwidth)}·β, overlap {row.overlap}")
    status = 0
    if args.check:
        verdict = "OK" if result.ok else "WRONG"
        print(f"check: {verdict}, relative error {result.relative_error:.3g} against a serial "
              f"{args.operator}-composition in float64 (tolerance {result.tolerance:.3g})")
        status = 0 if result.ok else 1
    if args.save:
        path = save_png(result.image, args.save)
        print(f"saved {path}")
    return status


def add_composite_parser(subparsers) -> None:
    """Register ``topocoll composite`` on the CLI's subparsers."""
    from .imaging import PATTERNS
    from .schedules.compositing import ALGORITHMS

    p = subparsers.add_parser(
        "composite", help="composite test images with a compositing schedule and check the picture",
        description=("Run one image-compositing schedule (an ordered reduce-scatter with the over "
                     "operator) on P test images in one process; --check compares the picture with a "
                     "serial over-composition, --save writes it as PNG."))
    p.add_argument("-P", "--procs", type=bounded_int(1, MAX_COMPOSITE_P, what="ranks"), required=True,
                   help=f"number of ranks (images), at most {MAX_COMPOSITE_P}")
    p.add_argument("--algorithm", required=True, choices=ALGORITHMS, help="compositing algorithm")
    p.add_argument("--k", help="radix_k only: radices such as 8,8 (product P) or a rule: eights, primes")
    p.add_argument("--order", metavar="FILE", help="depth order: ranks front to back (default rank order)")
    p.add_argument("--width", type=bounded_int(1, MAX_SIDE, what="pixels"), required=True,
                   help=f"image width in pixels (at most {MAX_SIDE})")
    p.add_argument("--height", type=bounded_int(1, MAX_SIDE, what="pixels"), required=True,
                   help=f"image height in pixels (at most {MAX_SIDE})")
    p.add_argument("--pattern", choices=PATTERNS, default="checker",
                   help="test images: checker (radix-k §4), random, sphere (default checker)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random pattern (default 0)")
    p.add_argument("--threads", type=bounded_int(1, 1024, what="threads"),
                   help="threads for the over kernel (default 1)")
    p.add_argument("--save", metavar="PNG", help="write the composited picture here")
    p.add_argument("--operator", choices=OPERATORS, default="over",
                   help="over (ordered, default) or zbuffer (nearest fragment per pixel, seeded random depths)")
    p.add_argument("--check", action="store_true", help="compare with a serial composition; exit 1 if wrong")
    p.set_defaults(func=cmd_composite)


__all__ = ["CompositeResult", "composite", "add_composite_parser", "tolerance_for", "TOLERANCE", "OPERATORS"]
