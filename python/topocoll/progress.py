"""Long commands say so first: one line on stderr with the size of the work and
how long it is expected to take, before the work starts.

Every command whose estimate passes :data:`SAY_FIRST_S` prints it
(``topocoll: <what>: expected about <time>``); estimates come from measured
rates (messages, routes or links per second, written beside the code that
uses them), never from a guess. Nothing is printed for a quick command, so
transcripts and scripts see the same output as before.
"""

from __future__ import annotations

import sys

__all__ = ["SAY_FIRST_S", "bar", "duration_text", "say_first", "wall_seconds"]

#: commands expected to run longer than this many seconds print a line first
SAY_FIRST_S = 30.0


def wall_seconds(cpu_seconds: float, processes: int = 1) -> float:
    """Wall-clock seconds for ``cpu_seconds`` of work spread evenly over ``processes`` on this
    machine as loaded now: each runnable process gets ``cores / (load + processes)`` of a core
    where that is below one (the 1-minute load average counts the other users' runnable
    processes). The rates behind ``cpu_seconds`` are measured in CPU time, so that the estimate
    follows the load instead of the load at the time of measuring."""
    import os
    processes = max(1, processes)
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    throughput = min(processes * min(1.0, cores / max(1.0, load + processes)), cores)
    return cpu_seconds / throughput


def duration_text(seconds: float) -> str:
    """``42`` → ``42 s``, ``185`` → ``3.1 min``, ``7300`` → ``2.0 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def say_first(what: str, seconds: float, *, file=None) -> bool:
    """Print ``topocoll: <what>: expected about <time>`` on stderr when ``seconds`` exceeds
    :data:`SAY_FIRST_S`; returns whether it did."""
    if not seconds > SAY_FIRST_S:
        return False
    print(f"topocoll: {what}: expected about {duration_text(seconds)}", file=file or sys.stderr, flush=True)
    return True


def bar(total: int, label: str, *, unit: str = "it", force: bool = False):
    """A tqdm progress bar on stderr when it is a terminal (or ``force``), else None.
    It appears after half a second, so a quick command draws none."""
    if not (force or sys.stderr.isatty()):
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=label, unit=unit, file=sys.stderr, delay=0.5, leave=False, dynamic_ncols=True)
