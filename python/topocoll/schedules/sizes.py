"""Message sizes: one convention for every collective, MPI's.

A *message size* given to topocoll (``compare --sizes``, :func:`topocoll.tune.rank`,
:meth:`AlgorithmInfo.cost <topocoll.schedules.registry.AlgorithmInfo.cost>`) means
what the ``count`` argument of the MPI call means (MPI-3.1 §5), times the
datatype's size:

============================  ==================  ===========================================
collective                    size is             MPI call and its argument
============================  ==================  ===========================================
``alltoall``                  per destination     ``MPI_Alltoall(sendcount)``: bytes a rank sends to *each* rank
``allgather``, ``gather``     per rank            ``MPI_Allgather(sendcount)``: one rank's contribution
``allreduce``, ``reduce``     whole vector        ``MPI_Allreduce(count)``
``reduce_scatter``            whole vector        the vector every rank contributes (``P·recvcount``
                                                  of ``MPI_Reduce_scatter_block``)
``bcast``                     whole vector        ``MPI_Bcast(count)``
``barrier``                   none                a token of no bytes
============================  ==================  ===========================================

The generators take ``count`` as the length of the vector their schedule
moves (``count`` elements of ``itemsize`` bytes): the whole per-rank vector
of ``P`` blocks for alltoall, the gathered vector for allgather.
:func:`schedule_args` maps an MPI ``(count, datatype)`` to those arguments,
:func:`from_bytes` a size in bytes, :func:`message_bytes` goes back.

Limits (documented, checked before anything is built): a schedule's vector
holds at most :data:`MAX_BYTES` bytes (1 TiB, more than any rank's memory)
and at most :data:`MAX_COUNT` elements.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import SpecError

#: bytes of the largest vector a schedule may describe (1 TiB)
MAX_BYTES = 1 << 40
#: elements of the largest vector a schedule may describe
MAX_COUNT = 1 << 40
#: bytes of the largest element (a datatype larger than 1 MiB is a mistake)
MAX_ITEMSIZE = 1 << 20

#: collective -> what a message size measures
CONVENTION = {
    "alltoall": "per destination",
    "allgather": "per rank",
    "gather": "per rank",
    "allreduce": "whole vector",
    "reduce": "whole vector",
    "reduce_scatter": "whole vector",
    "bcast": "whole vector",
    "barrier": "none",
}

__all__ = ["CONVENTION", "MAX_BYTES", "MAX_COUNT", "MAX_ITEMSIZE", "check_vector", "from_bytes",
           "itemsize_of", "message_bytes", "schedule_args"]


def _convention(collective: str) -> str:
    try:
        return CONVENTION[collective]
    except (KeyError, TypeError):
        raise SpecError(f"collective {collective!r}, expected one of {', '.join(sorted(CONVENTION))}") from None


def _whole(where: str, name: str, value, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        else:
            raise SpecError(f"{where}: {name}={value!r}, expected a whole number >= {minimum}")
    value = int(value)
    if value < minimum:
        raise SpecError(f"{where}: {name}={value}, expected a whole number >= {minimum}")
    return value


def itemsize_of(datatype) -> int:
    """Bytes per element of ``datatype``: an int, a NumPy dtype (or anything
    with ``itemsize``), or an mpi4py ``Datatype`` (its ``size``)."""
    if isinstance(datatype, numbers.Integral) and not isinstance(datatype, bool):
        size = int(datatype)
    elif isinstance(getattr(datatype, "itemsize", None), numbers.Integral):     # np.dtype, arrays
        size = int(datatype.itemsize)
    elif isinstance(getattr(datatype, "size", None), numbers.Integral) and not isinstance(datatype, type):
        size = int(datatype.size)                                              # mpi4py.MPI.Datatype
    else:
        try:
            size = int(np.dtype(datatype).itemsize)                            # np.float64, "f8"
        except TypeError:
            raise SpecError(f"datatype {datatype!r}, expected a byte count, a NumPy dtype or an MPI "
                            "datatype") from None
    if not 0 <= size <= MAX_ITEMSIZE:
        raise SpecError(f"datatype {datatype!r} has {size} bytes per element, expected 0..{MAX_ITEMSIZE}")
    return size


def check_vector(where: str, count, itemsize) -> tuple[int, int]:
    """``(count, itemsize)`` of a schedule's vector, within the documented limits.

    Raises
    ------
    SpecError
        ``count`` not a whole number in ``1 .. MAX_COUNT``, ``itemsize`` not in
        ``0 .. MAX_ITEMSIZE``, or a vector of more than ``MAX_BYTES`` bytes.
    """
    count = _whole(where, "count", count, minimum=1)
    itemsize = _whole(where, "itemsize", itemsize, minimum=0)
    if count > MAX_COUNT:
        raise SpecError(f"{where}: count={count}, expected at most {MAX_COUNT} elements (2^40)")
    if itemsize > MAX_ITEMSIZE:
        raise SpecError(f"{where}: itemsize={itemsize}, expected at most {MAX_ITEMSIZE} bytes per element")
    if count * itemsize > MAX_BYTES:
        raise SpecError(f"{where}: count={count} × itemsize={itemsize} = {count * itemsize} bytes, expected "
                        f"a vector of at most {MAX_BYTES} bytes (1 TiB)")
    return count, itemsize


def schedule_args(collective: str, p: int, count, datatype=1) -> dict:
    """The generator arguments ``{"count", "itemsize"}`` for an MPI call.

    Parameters
    ----------
    collective : str
        As in :data:`CONVENTION`.
    p : int
        Number of ranks.
    count : int
        The MPI call's count (see the module table): per destination for
        alltoall, per rank for allgather and gather, the whole vector otherwise;
        ignored for barrier.
    datatype : int, NumPy dtype or mpi4py Datatype
        Element type (its size in bytes); default 1 (bytes).

    Returns
    -------
    dict
        ``count`` (length of the vector the schedule moves) and ``itemsize``.

    Examples
    --------
    >>> schedule_args("alltoall", 4, 1024, 8)       # MPI_Alltoall(sendcount=1024, MPI_DOUBLE)
    {'count': 4096, 'itemsize': 8}
    >>> schedule_args("allreduce", 4, 1024, 8)
    {'count': 1024, 'itemsize': 8}
    >>> schedule_args("barrier", 4, 0)
    {'count': 1, 'itemsize': 0}
    """
    kind = _convention(collective)
    itemsize = itemsize_of(datatype)
    if kind == "none":
        return {"count": 1, "itemsize": 0}
    count = _whole(collective, "count", count, minimum=1)
    if count > MAX_COUNT:   # before multiplying by p
        raise SpecError(f"{collective}: count={count}, expected at most {MAX_COUNT} elements (2^40)")
    if kind in ("per destination", "per rank"):
        count *= p
    count, itemsize = check_vector(f"{collective} on P={p}", count, itemsize)
    return {"count": count, "itemsize": itemsize}


def from_bytes(collective: str, p: int, nbytes, *, itemsize: int = 1) -> dict:
    """Generator arguments for a message size of ``nbytes`` bytes (the
    module's convention) in elements of ``itemsize`` bytes.

    Examples
    --------
    >>> from_bytes("alltoall", 144, 4096)
    {'count': 589824, 'itemsize': 1}
    """
    if _convention(collective) == "none":
        return {"count": 1, "itemsize": 0}
    nbytes = _whole(collective, "message size", nbytes, minimum=1)
    itemsize = _whole(collective, "itemsize", itemsize, minimum=1)
    if nbytes % itemsize:
        raise SpecError(f"{collective}: message size {nbytes} B is not a multiple of itemsize={itemsize}, "
                        "expected whole elements")
    return schedule_args(collective, p, nbytes // itemsize, itemsize)


def message_bytes(collective: str, p: int, count: int, itemsize: int) -> int:
    """The message size (module convention) of a schedule's ``count`` and
    ``itemsize``: the inverse of :func:`from_bytes`."""
    kind = _convention(collective)
    if kind == "none":
        return 0
    if kind in ("per destination", "per rank"):
        return count // p * itemsize
    return count * itemsize
