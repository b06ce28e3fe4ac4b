"""One tree of errors. Every message is one line: where, what, what was expected.

Example: ``radix_k: k=[4, 4] has product 16, expected p=12``.
The CLI catches :class:`TopocollError`, prints ``topocoll: error: <message>``
and exits with status 2; anything else is a bug and keeps its traceback.
"""


class TopocollError(Exception):
    """Base of every error topocoll raises on purpose."""


class SpecError(TopocollError, ValueError):
    """A user-given value (spec string, parameter, size) is invalid."""


class ScheduleError(TopocollError, ValueError):
    """A schedule cannot be generated for these parameters, or is malformed."""


class TopologyError(TopocollError, ValueError):
    """A topology or routing is inconsistent (dangling port, no route, ...)."""


class ParseError(TopocollError, ValueError):
    """A file does not parse; the message names file, line and expectation."""


class VerificationError(TopocollError):
    """A schedule failed symbolic verification; the message is the diagnosis."""


class StateError(TopocollError, RuntimeError):
    """A call made in the wrong state: a plan waited for before it started,
    started twice or used after ``free()``. Local to the calling rank."""
