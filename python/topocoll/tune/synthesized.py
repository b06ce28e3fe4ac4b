"""``tune --synthesize DIR``: synthesized schedules ranked beside the fixed algorithms (issue 29).

A synthesized schedule is made for one collective, one P and one network
(its routes and rank placement, fingerprinted in the file:
``docs/synthesis.md``, "The file"), so the tuner takes a file from ``DIR``
only at the grid P it was made for and only in the node order whose routes
it was made for: :func:`candidates` reads each file's header and compares
its ``routes_sha256`` with the tuner's network at each (P, order). Files
that fit nowhere are named in the table's notes with why, not silently
dropped.

With a synthesis budget, :func:`synthesize_missing` first writes the files
that are missing: one per (collective, P, size) of the grid, synthesized for
the tuner's network in its first node order, with the tuner's model and
platform, without the fixed fallback (the tuner ranks the fixed algorithms
itself), named ``COLLECTIVE-pP-SIZEB-ROUTES.json`` (the first 8 hex digits of the routes' fingerprint); a file already there for the
same point and routes is reused (synthesize once, tune many times).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError
from ..synth.fileformat import read_header
from ..synth.plan import COLLECTIVES as SYNTH_COLLECTIVES
from ..synth.routes import pair_routes

__all__ = ["SynthFile", "candidates", "scan", "synthesize_missing"]

#: most schedule files one tune run reads from DIR (each is evaluated at every size of the grid)
MAX_FILES = 256


@dataclass(frozen=True)
class SynthFile:
    """One schedule file's header: where it is, what it is for, and whether a fixed algorithm won
    when it was made (then the file holds no synthesized schedule to rank)."""

    path: str
    collective: str
    p: int
    size: int | None
    routes_sha256: str
    fixed: str | None


def _files(directory: Path) -> list[Path]:
    return sorted(x for x in directory.iterdir() if x.is_file() and x.name.endswith((".json", ".json.gz")))


def scan(directory, notes: list[str]) -> list[SynthFile]:
    """The schedule files of ``directory`` (``*.json``, ``*.json.gz``); other JSON files are named in
    ``notes`` and left out. A directory that does not exist is a one-line SpecError."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SpecError(f"tune --synthesize {directory}: not a directory, expected a directory of files written "
                        "by `topocoll synthesize --out` (or one to write them into, with --synth-budget)")
    out = []
    for path in _files(directory):
        try:
            doc = read_header(path)
        except SpecError as exc:
            notes.append(f"--synthesize: {exc} (left out)")
            continue
        fixed = doc.get("fixed")
        out.append(SynthFile(str(path.resolve()), doc["collective"], doc["p"], doc.get("size"),
                             doc["network"]["routes_sha256"],
                             fixed.get("algorithm") if isinstance(fixed, dict) else None))
        if len(out) > MAX_FILES:
            raise SpecError(f"tune --synthesize {directory}: more than {MAX_FILES} schedule files, expected at most "
                            f"{MAX_FILES} (each is evaluated at every size of the grid)")
    return out


def _fingerprints(groups: dict) -> dict:
    """``(P, order) → routes_sha256`` of the tuner's network at each placement it searches."""
    return {key: pair_routes(setting.platform.network, key[0]).sha256 for key, setting in groups.items()}


def candidates(files: list[SynthFile], collectives, procs, groups: dict, notes: list[str]) -> list[tuple]:
    """``(collective, P, order, path)`` for every file that fits a grid P and a placement of the
    tuner's network; the others go to ``notes`` with why."""
    prints = _fingerprints({k: v for k, v in groups.items() if k[0] in {f.p for f in files}})
    out = []
    for f in files:
        name = os.path.basename(f.path)
        if f.collective not in collectives:
            notes.append(f"--synthesize: {name} is a {f.collective} schedule, not tuned here (left out)")
            continue
        if f.p not in procs:
            notes.append(f"--synthesize: {name} was made for P={f.p}, not on the grid "
                         f"(P = {', '.join(map(str, procs))}; left out)")
            continue
        if f.fixed is not None:
            notes.append(f"--synthesize: {name} holds the fixed {f.fixed} (it won when synthesized), "
                         "which the tuner ranks itself (left out)")
            continue
        orders = [order for (p, order), sha in prints.items() if p == f.p and sha == f.routes_sha256]
        if not orders:
            notes.append(f"--synthesize: {name} was made for other routes or another placement than the tuner's "
                         f"network at P={f.p} in any order searched (routes {f.routes_sha256[:12]}; left out)")
            continue
        out.extend((f.collective, f.p, order, f.path) for order in orders)
    return out


def synthesize_missing(directory, collectives, procs, sizes, groups: dict, model, *, budget: float, seed: int,
                       itemsize: int, notes: list[str], on_point=None) -> int:
    """Write into ``directory`` a schedule for every (collective, P, size) of the grid that has none
    for the tuner's network (module doc); returns how many were synthesized."""
    from ..synth import synthesize
    directory = Path(directory)
    if not isinstance(budget, (int, float)) or isinstance(budget, bool) or not math.isfinite(budget) or budget < 0:
        raise SpecError(f"tune: --synth-budget {budget!r}, expected seconds >= 0")
    directory.mkdir(parents=True, exist_ok=True)
    have = {(f.collective, f.p, f.size, f.routes_sha256) for f in scan(directory, [])}
    made = 0
    for p in procs:
        order = next(o for (q, o) in groups if q == p)
        setting = groups[p, order]
        sha = pair_routes(setting.platform.network, p).sha256
        for coll in collectives:
            if coll not in SYNTH_COLLECTIVES:
                continue
            for size in sizes:
                if (coll, p, size, sha) in have:
                    continue
                res = synthesize(coll, setting.platform.network, p, size, budget=budget, seed=seed, model=model,
                                 platform=setting.platform, compare_fixed=False, itemsize=itemsize, progress=False)
                res.save(directory / f"{coll}-p{p}-{size}B-{sha[:8]}.json")   # routes in the name: another network's file stays
                made += 1
                if on_point is not None:
                    on_point(coll, p, size, res)
    if made:
        notes.append(f"--synthesize: {made} schedule{'s' if made != 1 else ''} synthesized into {directory} "
                     f"(--synth-budget {budget:g} s each, seed {seed}, {getattr(model, 'name', model)} model)")
    return made
