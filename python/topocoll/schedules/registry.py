"""The catalogue of generators: every algorithm registers itself here.

``@algorithm(...)`` records a generator with what ``topocoll algorithms``
shows: collective, name, parameters, rounds formula, which P it supports,
whether it supports non-commutative operators, and the paper it follows.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from ..errors import SpecError

# modules holding generators; imported lazily by ``catalogue()``
GENERATOR_MODULES = (
    "tree", "pairwise", "dissemination", "bruck", "ring", "compositing", "alltoall",
)


@dataclass(frozen=True)
class AlgorithmInfo:
    collective: str
    name: str
    func: Callable
    params: dict = field(default_factory=dict)   # name -> default (shown in tables)
    rounds: str = ""
    any_p: bool = True
    noncommutative: bool = False
    operators: str = "any"                        # "any" or "idempotent"
    paper: str = ""
    cost: str = ""                                # closed-form α-β-γ cost
    valid_p: Callable[[int, dict], bool] | None = None   # beyond any_p: P this (params) supports
    sweep: tuple = ({},)                          # parameter sets the catalogue tests cover

    def supports(self, p: int, params: dict) -> bool:
        if self.valid_p is not None:
            return self.valid_p(p, params)
        return self.any_p or (p & (p - 1)) == 0


_REGISTRY: dict[tuple[str, str], AlgorithmInfo] = {}


def algorithm(*, collective: str, name: str, **info):
    """Decorator registering a generator under (collective, name)."""
    def wrap(func):
        _REGISTRY[(collective, name)] = AlgorithmInfo(collective, name, func, **info)
        return func
    return wrap


def catalogue() -> dict[tuple[str, str], AlgorithmInfo]:
    for mod in GENERATOR_MODULES:
        importlib.import_module(f"{__package__}.{mod}")
    return dict(sorted(_REGISTRY.items()))


def lookup(collective: str, name: str) -> AlgorithmInfo:
    cat = catalogue()
    if (collective, name) in cat:
        return cat[(collective, name)]
    collectives = sorted({c for c, _ in cat})
    if collective not in collectives:
        raise SpecError(f"collective {collective!r}, expected one of {', '.join(collectives)}")
    names = sorted(n for c, n in cat if c == collective)
    raise SpecError(f"algorithm {name!r} for {collective}, expected one of {', '.join(names)}")


def generate(collective: str, name: str, p: int, **params):
    """Build the schedule of ``collective``/``name`` over ``p`` ranks."""
    info = lookup(collective, name)
    unknown = sorted(set(params) - set(info.params) - {"count", "itemsize"})
    if unknown:
        accepted = ", ".join(sorted(set(info.params) | {"count", "itemsize"}))
        raise SpecError(f"{collective}/{name}: unknown parameter {unknown[0]!r}, expected one of {accepted}")
    return info.func(p, **params)
