"""``synthesized``: schedules made for a network (issue 29; :mod:`topocoll.synth`, ``docs/synthesis.md``).

One algorithm name per collective topocoll synthesizes (allgather,
reduce_scatter, allreduce, bcast, alltoall), with one of two parameters:

- ``file=PATH``: the schedule ``topocoll synthesize`` wrote (its routes are
  checked against the network the file names; ``simulate`` and ``compare``
  check them against theirs), for any vector: ``count``/``itemsize`` as
  given, else the ones it was made for;
- ``topology=SPEC``: synthesized here for ``SPEC`` with its default routing
  and order, one chunk per rank and per message, cheapest routes first,
  judged by the plan alone (no model, no budget; its messages do not depend
  on the vector's size): ``topology=crossbar`` (the default) is a crossbar
  of ``P`` endpoints.

Comparisons pass ``topology=None`` (:attr:`AlgorithmInfo.compare`), for which
it does not exist (``supports``): ``compare`` and ``tune`` leave it out unless
asked (``compare --synthesize`` synthesizes for their network).
"""

from __future__ import annotations

import os
from functools import lru_cache

from ..errors import SpecError
from .ir import Schedule
from .registry import algorithm, closed_form

PAPER = ("TACOS (Won et al., MICRO 2024) greedy link–chunk matching, with routes and link bandwidths "
         "(docs/synthesis.md)")
ROUNDS = "as planned for the network"


def _given(p: int, params: dict) -> bool:
    """file= or topology= given; with file=, P must be the file's (a schedule is made for one P and one
    network): the tuner's rules and ``algorithm="auto"`` then name it for that P only."""
    if params.get("file") is not None:
        header = file_header(params["file"])
        return header is not None and header[1] == int(p)
    return params.get("topology") is not None


@lru_cache(maxsize=256)
def _header(path: str, mtime_ns: int, size: int) -> tuple[str, int] | None:
    try:
        from ..synth.fileformat import read_header
        doc = read_header(path)
    except SpecError:
        return None
    return doc["collective"], doc["p"]


def file_header(path) -> tuple[str, int] | None:
    """``(collective, P)`` a schedule file was made for, read once per path and version of the file
    (None: not a readable schedule file). ``supports`` is asked for many P (the tuner probes a range
    of them), so the file is not parsed again each time."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _header(path, st.st_mtime_ns, st.st_size)


def _make(collective: str, p: int, file, topology, seed: int, count: int, itemsize: int, root: int = 0) -> Schedule:
    where = f"{collective}/synthesized"
    if file is not None and topology is not None:
        raise SpecError(f"{where}: file={file!r}, topology={topology!r}, expected one of them "
                        "(a file written by `topocoll synthesize`, or a topology spec to synthesize for)")
    if file is None and topology is None:
        topology = "crossbar"
    if file is not None:
        from ..synth.fileformat import load_schedule
        sched = load_schedule(file, count=count, itemsize=itemsize)
        if sched.collective != collective or sched.p != p:
            raise SpecError(f"{where}: {file} holds {sched.collective} for P={sched.p}, expected {collective} "
                            f"for P={p}")
        if collective == "bcast" and sched.root != root:
            raise SpecError(f"{where}: {file} broadcasts from root {sched.root}, root={root} given, expected "
                            f"root={sched.root}")
        return sched
    return _on_the_fly(collective, p, topology, seed, count, itemsize, root)


def _on_the_fly(collective, p, topology, seed, count, itemsize, root) -> Schedule:
    import numpy as np

    from ..sim.model import make_network
    from ..synth.plan import make_plan
    from ..synth.routes import pair_routes
    from ..synth.schedule import to_schedule
    from ..synth.search import Variant, block_bytes
    spec = f"crossbar:{max(p, 2)}" if topology == "crossbar" else topology
    net = make_network(spec, p)
    routes = pair_routes(net, p)
    v = Variant(1, 1, "near", seed)       # one chunk per rank and per message: messages independent of the size
    plan = make_plan(collective, routes, c=v.c, block_bytes=max(1.0, block_bytes(collective, p, count, itemsize, v.c)),
                     alpha=1e-6, gamma=0.25e-9 if collective in ("reduce_scatter", "allreduce") else 0.0,
                     agg=(1 << 62) if v.agg == 0 else v.agg, order=v.order,
                     rng=np.random.default_rng(v.seed), root=root)
    return to_schedule(plan, count, itemsize, {"topology": topology, "seed": seed,
                                               **({"root": root} if collective == "bcast" else {})})


_COMMON = dict(params={"file": None, "topology": "crossbar", "seed": 0}, rounds=ROUNDS, paper=PAPER, supports=_given,
               supports_text="file= (its own P only) or topology= (compare: --synthesize)", sweep=({"topology": "crossbar"},),
               compare={"topology": None})


@algorithm(collective="allgather", name="synthesized", needs="associative", **_COMMON)
def synthesized_allgather(p: int, *, file=None, topology=None, seed: int = 0, count: int = 1,
                          itemsize: int = 8) -> Schedule:
    """An all-gather synthesized for a network (module doc)."""
    return _make("allgather", p, file, topology, seed, count, itemsize)


@algorithm(collective="reduce_scatter", name="synthesized", needs="commutative", **_COMMON)
def synthesized_reduce_scatter(p: int, *, file=None, topology=None, seed: int = 0, count: int = 1,
                               itemsize: int = 8) -> Schedule:
    """A reduce-scatter synthesized for a network: the time reversal of an
    all-gather (module doc); partial sums combine in the order they arrive."""
    return _make("reduce_scatter", p, file, topology, seed, count, itemsize)


@algorithm(collective="allreduce", name="synthesized", needs="commutative", **_COMMON)
def synthesized_allreduce(p: int, *, file=None, topology=None, seed: int = 0, count: int = 1,
                          itemsize: int = 8) -> Schedule:
    """An allreduce synthesized for a network: reduce-scatter, then all-gather."""
    return _make("allreduce", p, file, topology, seed, count, itemsize)


@algorithm(collective="alltoall", name="synthesized", needs="associative", **_COMMON)
def synthesized_alltoall(p: int, *, file=None, topology=None, seed: int = 0, count: int | None = None,
                         itemsize: int = 8) -> Schedule:
    """An all-to-all synthesized for a network: every message on its route,
    in steps whose routes fit the links (``count``: the whole per-rank
    vector, a multiple of P; default P)."""
    return _make("alltoall", p, file, topology, seed, p if count is None else count, itemsize)


@algorithm(collective="bcast", name="synthesized", needs="associative",
           **{**_COMMON, "params": {**_COMMON["params"], "root": 0}})
def synthesized_bcast(p: int, *, file=None, topology=None, seed: int = 0, root: int = 0, count: int = 1,
                      itemsize: int = 8) -> Schedule:
    """A broadcast synthesized for a network: chunks pipelined from the root."""
    return _make("bcast", p, file, topology, seed, count, itemsize, root)


def _counted(p, params, count, itemsize):
    return None


for _collective in ("allgather", "reduce_scatter", "allreduce", "alltoall", "bcast"):
    closed_form(_collective, "synthesized", "counted from the planned transfers (no closed form: the plan depends "
                "on the network)")(_counted)
