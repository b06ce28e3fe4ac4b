"""The one-shot cache's assumptions that need no MPI (:mod:`topocoll.mpi.cache`)."""

import pytest

from topocoll.mpi.cache import digest
from topocoll.mpi.compile import SEND, compile_rank
from topocoll.schedules import catalogue, generate

ALLREDUCE_AT_2 = [info for info in catalogue().values()
                  if info.collective == "allreduce" and info.supports(2, info.sweep[0])]


@pytest.mark.parametrize("info", ALLREDUCE_AT_2, ids=lambda info: info.name)
def test_at_p2_rank_1_sends_before_it_waits_in_every_allreduce(info):
    """What makes every mismatch of two allreduce calls at P = 2 visible to
    the guard: rank 1 starts a send that depends on nothing, so rank 0,
    waiting for its own call's message, finds a message of another call."""
    program = compile_rank(generate("allreduce", info.name, 2, count=16, **info.sweep[0]), 1)
    assert any(kind == SEND and not deps for kind, deps in zip(program.kind, program.deps))


def test_the_signature_digest_is_the_same_in_every_process_and_tells_fields_apart():
    signature = (("call", "allreduce"), ("count", 8), ("operator", "sum"))
    # no per-process salt (Python's hash() of str has one): a fixed value, so two processes agree
    assert digest(signature) == digest(tuple(signature))
    assert digest(signature) == 922664020655510124   # sha1, not hash(): the same in every process
    assert digest((("call", "allreduce"), ("count", 7), ("operator", "sum"))) != digest(signature)
    assert 0 <= digest(signature) < 1 << 62
