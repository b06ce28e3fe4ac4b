"""What every generator parameter accepts, bounded by P or by a documented limit.

A parameter name means one thing across the catalogue (``n`` is always the
ports of an n-port algorithm, ``root`` always a rank), so its specification
lives here once, keyed by name: :data:`SPECS`. The registry checks every
parameter against its spec *before* a generator runs, so a huge value fails
at once with one line instead of building for minutes:

==============  ===============================================================
name            accepted values
==============  ===============================================================
``n``           ports: an integer ``1 .. max(1, P − 1)``, or ``"auto"``
``k``           ports (Bruck): an integer ``1 .. P``; radix-k: radices
                ``1 .. P`` (at most ``bit_length(P)`` of them) or a rule name
``root``        a rank ``0 .. P − 1``
``gather_root`` ``None`` or a rank ``0 .. P − 1``
``leftover``    ``"neighbours"`` or ``"last"``
``order``       ``"rank"`` or ``"relative"``
``seed``        an integer ``0 .. 2^64 − 1``
``packets``     an integer ``1 .. ⌊2^24 / P⌋``: at most :data:`MAX_BLOCKS` blocks
``burst``       ``None`` or an integer ``1 .. packets``
``shape``       ``None``, sizes such as ``"8x4x2"``, ``"3x2"``, ``"6"`` (also
                ``"6x"``, ``6`` or ``[6]``): at most 3 sizes
``dims``        as ``shape`` (a virtual mesh): at most :data:`MAX_MESH_DIMS` sizes
``d``           an integer ``1 .. 20`` (:data:`MAX_MESH_DIMS`)
``linear``      ``None``, ``"x"``, ``"y"``, ``"z"`` or an axis ``0 .. 2``
``mapping``     an axis order such as ``"xyz"`` (default: as many axes as the
                shape has sizes) or ``P`` node indices ``0 .. P − 1``
``depth_order`` ``None`` or ``P`` ranks ``0 .. P − 1``
``ppn``         ranks per node: an integer ``1 ..`` :data:`MAX_PPN`, or ``None``
                (from the platform: a comparison's value, refused by the
                generator until a platform gives it)
``leaders``     leaders (groups) per node: an integer ``1 ..`` :data:`MAX_PPN`
                (the generator bounds it by ``ppn``)
``inter``       the leaders' algorithm of a hierarchical schedule: a name, or
                ``name:param=value[:param=value]`` (``"bruck:n=2"``,
                ``"radix_k:k=4,3"``), at most :data:`MAX_INTER_PARAMS`
                parameters, :data:`MAX_INTER_TEXT` characters; or a dict
                ``{"algorithm": name, param: value, ...}``
``nodes``       ``None`` or ``P`` node indices ``0 .. P − 1`` (the node of
                every rank)
``file``        ``None`` or the path of a schedule written by ``topocoll
                synthesize`` (at most :data:`MAX_TEXT` characters)
``topology``    ``None`` or a topology spec to synthesize for (at most
                :data:`MAX_TEXT` characters; ``crossbar``: ``crossbar:P``)
==============  ===============================================================

Finer conditions (a shape's product equals P, radices multiply to P, a
mapping is a permutation) are the generator's to check; what is checked here
is that nothing is larger than P allows.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import SpecError

#: blocks of the largest schedule vector (``P·packets``): 2^24
MAX_BLOCKS = 1 << 24
#: dimensions of the largest virtual mesh: log2 of the largest P
MAX_MESH_DIMS = 20
#: largest seed (NumPy's generators take 64-bit seeds here)
MAX_SEED = (1 << 64) - 1
#: sizes of a torus or mesh partition (Kumar & Heidelberger's X×Y×Z)
MAX_SHAPE_DIMS = 3
AXES = "xyz"
#: ranks per node of a hierarchical schedule (the largest nodes have a few hundred cores)
MAX_PPN = 1 << 12
#: parameters and characters of a hierarchical schedule's ``inter=`` value
MAX_INTER_PARAMS = 8
MAX_INTER_TEXT = 256
#: characters of a ``file`` path or ``topology`` spec parameter
MAX_TEXT = 4096

__all__ = ["MAX_BLOCKS", "MAX_INTER_PARAMS", "MAX_INTER_TEXT", "MAX_MESH_DIMS", "MAX_PPN", "MAX_SEED", "ParamSpec",
           "SPECS", "check_params", "format_inter", "parse_inter"]


def _is_int(value) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def _bounded_int(where, name, value, low, high, also="") -> int:
    if not _is_int(value) or not low <= value <= high:
        raise SpecError(f"{where}: {name}={value!r}, expected an integer in {low}..{high}{also}")
    return int(value)


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: what it means and how its value is checked.

    ``check(where, p, value, params, default)`` returns the value to hand the
    generator (normalised, e.g. ``6`` → ``"6"`` for a shape) or raises
    :class:`~topocoll.errors.SpecError`; ``params`` holds the call's other
    parameters (``burst`` is bounded by ``packets``), ``default`` the
    algorithm's default (``k`` names a rule only where the default does). ``resolve(p, params,
    default)``, where given, computes the value to pass when the caller gave
    none (``mapping`` follows the shape's dimension count).
    """

    doc: str
    check: Callable[[str, int, Any, dict, Any], Any]
    resolve: Callable[[int, dict, Any], Any] | None = None


def _ports(where, p, value, params, default=None):
    if isinstance(value, str) and value == "auto":
        return value
    return _bounded_int(where, "n", value, 1, max(1, p - 1), " (at most P − 1 ports) or 'auto'")


def _k(where, p, value, params, default=None):
    if isinstance(value, str):
        if not isinstance(default, str):      # Bruck's k counts ports; radix-k's may name a rule
            raise SpecError(f"{where}: k={value!r}, expected an integer in 1..{p} (at most P)")
        return value
    if _is_int(value):
        return _bounded_int(where, "k", value, 1, p, " (at most P)")
    if isinstance(value, (list, tuple)):
        if len(value) > max(1, p.bit_length()):
            raise SpecError(f"{where}: k has {len(value)} radices, expected at most {max(1, p.bit_length())} "
                            f"with product p={p}")
        return [_bounded_int(where, "k entry", x, 1, p, f" (radices with product p={p})") for x in value]
    raise SpecError(f"{where}: k={value!r}, expected an integer, a list of radices or a rule name")


def _rank(where, p, value, params, default=None, *, name="root", optional=False):
    if optional and value is None:
        return None
    if not _is_int(value) or not 0 <= value < p:
        raise SpecError(f"{where}: {name}={value!r}, expected a rank in 0..{p - 1}" + (" or None" if optional else ""))
    return int(value)


def _choice(name, *choices):
    def check(where, p, value, params, default=None):
        if not isinstance(value, str) or value not in choices:
            raise SpecError(f"{where}: {name}={value!r}, expected one of {', '.join(map(repr, choices))}")
        return value
    return check


def _seed(where, p, value, params, default=None):
    return _bounded_int(where, "seed", value, 0, MAX_SEED)


def _packets(where, p, value, params, default=None):
    return _bounded_int(where, "packets", value, 1, max(1, MAX_BLOCKS // p),
                        f" (P·packets at most {MAX_BLOCKS} blocks)")


def _burst(where, p, value, params, default=None):
    if value is None:
        return None
    packets = params.get("packets", 1)
    high = packets if _is_int(packets) else max(1, MAX_BLOCKS // p)
    return _bounded_int(where, "burst", value, 1, high, " (at most packets) or None")


def _sizes(where, name, value, max_dims):
    """A shape as the generators take it: ``None``, a string or a tuple."""
    if value is None:
        return None
    if _is_int(value):
        value = str(int(value))
    if isinstance(value, (list, tuple)):
        if not all(_is_int(v) for v in value):
            raise SpecError(f"{where}: {name}={value!r}, expected sizes such as 8x4x2")
        value = "x".join(str(int(v)) for v in value)
    if not isinstance(value, str):
        raise SpecError(f"{where}: {name}={value!r}, expected sizes such as 8x4x2")
    text = value.strip().rstrip("x×*,").strip()     # "6x": a 1-D shape written as one
    parts = [s for s in re.split(r"[x×*,]", text)]
    if not text or len(parts) > max_dims or not all(re.fullmatch(r"\s*\d{1,7}[mM]?\s*", s) for s in parts):
        raise SpecError(f"{where}: {name}={value!r}, expected 1 to {max_dims} sizes such as 8x4x2 "
                        "(suffix M for a mesh dimension)")
    return text


def _shape(where, p, value, params, default=None):
    return _sizes(where, "shape", value, MAX_SHAPE_DIMS)


def _dims(where, p, value, params, default=None):
    return _sizes(where, "dims", value, MAX_MESH_DIMS)


def _mesh_d(where, p, value, params, default=None):
    return _bounded_int(where, "d", value, 1, MAX_MESH_DIMS)


def _linear(where, p, value, params, default=None):
    if value is None or (isinstance(value, str) and value.lower() in AXES):
        return value
    if _is_int(value):
        return _bounded_int(where, "linear", value, 0, MAX_SHAPE_DIMS - 1)
    raise SpecError(f"{where}: linear={value!r}, expected x, y, z, an axis 0..2 or None")


def _ranks(where, name, p, value):
    """A list of ``p`` ranks ``0 .. p-1`` (the generator checks it is a permutation)."""
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != p:
        shown = f"{len(value)} entries" if isinstance(value, (list, tuple, np.ndarray)) else repr(value)
        raise SpecError(f"{where}: {name} has {shown}, expected p={p} ranks in 0..{p - 1}")
    return [_bounded_int(where, f"{name} entry", v, 0, p - 1) for v in value]


def _mapping(where, p, value, params, default=None):
    if isinstance(value, str):
        if not 1 <= len(value) <= MAX_SHAPE_DIMS:
            raise SpecError(f"{where}: mapping={value!r}, expected an axis order such as 'xyz'")
        return value
    return _ranks(where, "mapping", p, value)


def _mapping_default(p, params, default):
    """The axis order as long as the shape: ``"xy"`` for ``shape="3x2"``."""
    shape = params.get("shape")
    if not isinstance(shape, str) or not isinstance(default, str):
        return default
    return default[:len(re.split(r"[x×*,]", shape))]


def _depth_order(where, p, value, params, default=None):
    if value is None:
        return None
    return _ranks(where, "depth_order", p, value)


def _inter_scalar(text: str):
    """A value inside ``inter=``: ``2`` -> 2, ``4,3`` -> [4, 3], else the text."""
    text = text.strip()
    if "," in text:
        return [_inter_scalar(t) for t in text.split(",") if t.strip()]
    return int(text) if re.fullmatch(r"[+-]?\d{1,19}", text) else text


def _inter_text(value) -> str:
    """One value of ``inter=`` as text (lists joined with commas, as the CLI splits them)."""
    if isinstance(value, (list, tuple)):
        return ",".join(_inter_text(v) for v in value)
    return str(value)


def parse_inter(where: str, value) -> tuple[str, dict]:
    """``inter=`` as ``(algorithm name, its parameters)``.

    >>> parse_inter("x", "radix_k:k=4,3")
    ('radix_k', {'k': [4, 3]})
    >>> parse_inter("x", ["radix_k:k=4", 3])      # what the CLI makes of --param inter=radix_k:k=4,3
    ('radix_k', {'k': [4, 3]})
    """
    expected = ("expected an algorithm name or name:param=value[:param=value] (e.g. bruck:n=2), "
                f"at most {MAX_INTER_PARAMS} parameters and {MAX_INTER_TEXT} characters")
    if isinstance(value, dict):
        params = dict(value)
        name = params.pop("algorithm", None)
        if not isinstance(name, str):
            raise SpecError(f"{where}: inter={value!r} has no 'algorithm' name, {expected}")
        text = name + "".join(f":{k}={_inter_text(v)}" for k, v in params.items())
    elif isinstance(value, (str, list, tuple)):
        text = _inter_text(value)
    else:
        raise SpecError(f"{where}: inter={value!r}, {expected}")
    parts = text.split(":")
    if len(text) > MAX_INTER_TEXT or len(parts) > MAX_INTER_PARAMS + 1 \
            or not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", parts[0].strip()):
        raise SpecError(f"{where}: inter={text[:80]!r}, {expected}")
    params = {}
    for part in parts[1:]:
        key, sep, raw = part.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", key) or key in params:
            raise SpecError(f"{where}: inter={text[:80]!r}: {part!r} is not a new param=value, {expected}")
        params[key] = _inter_scalar(raw)
    return parts[0].strip(), params


def format_inter(value) -> str:
    """``inter=`` as the canonical text ``name[:param=value]`` (labels, tables).

    >>> format_inter({"algorithm": "bruck", "n": 2})
    'bruck:n=2'
    """
    name, params = parse_inter("inter", value)
    return name + "".join(f":{k}={_inter_text(v)}" for k, v in params.items())


def _inter(where, p, value, params, default=None):
    parse_inter(where, value)
    return format_inter(value)


def _ppn(where, p, value, params, default=None):
    if value is None:
        return None
    return _bounded_int(where, "ppn", value, 1, MAX_PPN, " ranks per node")


def _leaders(where, p, value, params, default=None):
    return _bounded_int(where, "leaders", value, 1, MAX_PPN, " leaders per node (at most ppn)")


def _text(name: str, what: str):
    def check(where, p, value, params, default=None):
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
            shown = value if not isinstance(value, str) else value[:80]
            raise SpecError(f"{where}: {name}={shown!r}, expected {what} of at most {MAX_TEXT} characters, or None")
        return value.strip()
    return check


def _nodes(where, p, value, params, default=None):
    if value is None:
        return None
    return _ranks(where, "nodes", p, value)


SPECS: dict[str, ParamSpec] = {
    "n": ParamSpec("ports: messages per rank and round, 1..P−1, or 'auto'", _ports),
    "k": ParamSpec("ports 1..P (Bruck) or radices with product P (radix-k)", _k),
    "root": ParamSpec("the root rank, 0..P−1", _rank),
    "gather_root": ParamSpec("rank that gathers the pieces (None: no gather)",
                             lambda w, p, v, params, default=None: _rank(w, p, v, params, name="gather_root",
                                                                            optional=True)),
    "leftover": ParamSpec("which ranks fold away for P ≠ 2^k", _choice("leftover", "neighbours", "last")),
    "order": ParamSpec("reduction order", _choice("order", "rank", "relative")),
    "seed": ParamSpec("seed of the random permutations, 0..2^64−1", _seed),
    "packets": ParamSpec("packets per destination, P·packets ≤ 2^24", _packets),
    "burst": ParamSpec("packets sent per peer visit, 1..packets", _burst),
    "shape": ParamSpec("torus or mesh partition such as 8x4x2 (product P)", _shape),
    "dims": ParamSpec("virtual mesh such as 32x16 (product P)", _dims),
    "d": ParamSpec("virtual mesh dimensions, 1..20", _mesh_d),
    "linear": ParamSpec("the linear (phase-1) dimension", _linear),
    "mapping": ParamSpec("rank to coordinates: axis order or P node indices", _mapping,
                         resolve=_mapping_default),
    "depth_order": ParamSpec("ranks front to back (None: rank order)", _depth_order),
    "ppn": ParamSpec("ranks per node (node-major numbering), 1..4096; None: from the platform", _ppn),
    "leaders": ParamSpec("leaders per node: one per socket or rail, 1..ppn", _leaders),
    "inter": ParamSpec("the leaders' algorithm: name or name:param=value[:param=value]", _inter),
    "nodes": ParamSpec("node index of every rank (None: ppn per node, node-major)", _nodes),
    "file": ParamSpec("a schedule file written by `topocoll synthesize`", _text("file", "a path")),
    "topology": ParamSpec("a topology spec to synthesize for (crossbar: crossbar:P)",
                          _text("topology", "a topology spec such as torus:4x4")),
}


def check_params(where: str, p: int, params: dict, defaults: dict) -> dict:
    """Check ``params`` against :data:`SPECS`; add resolved defaults.

    Returns the parameters to hand the generator: those given, normalised,
    plus the defaults a spec resolves from the others (``mapping``).
    """
    out = {}
    for name, value in params.items():
        spec = SPECS.get(name)
        out[name] = value if spec is None else spec.check(where, p, value, params, defaults.get(name))
    for name, default in defaults.items():
        spec = SPECS.get(name)
        if name not in out and spec is not None and spec.resolve is not None:
            resolved = spec.resolve(p, out, default)
            if resolved != default:
                out[name] = resolved
    return out
