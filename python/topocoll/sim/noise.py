"""Ensembles of noisy runs: the slowdown distribution of the network-noise
paper (§2, Figs 3–5 and 10: perturbed over unperturbed time, per run).

Every run draws new background endpoints (and, in ``loggops``/``flow``, new
random peers) from ``seed + run``; the clean time is simulated once. The
summary is what a boxplot with notches shows: mean, median, quartiles and the
95% confidence notch of the median, ``median ± 1.57·IQR/√n`` (McGill, Tukey &
Larsen, "Variations of box plots", 1978).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from ..errors import SpecError
from ..schedules.ir import Schedule
from .engine import EngineConfig, EngineOptions, NetworkNoise, compile_program, lockstep_applies, simulate
from .model import Platform

__all__ = ["NoiseRuns", "noise_runs"]


@dataclass(frozen=True)
class NoiseRuns:
    """Slowdowns of ``runs`` perturbed runs over the clean run."""

    clean: float
    times: np.ndarray
    seeds: tuple[int, ...]
    model: str
    ratio: float

    @property
    def slowdowns(self) -> np.ndarray:
        return self.times / self.clean if self.clean > 0 else np.ones_like(self.times)

    @property
    def mean(self) -> float:
        return float(self.slowdowns.mean())

    @property
    def median(self) -> float:
        return float(np.median(self.slowdowns))

    @property
    def quartiles(self) -> tuple[float, float]:
        q1, q3 = np.percentile(self.slowdowns, [25, 75])
        return float(q1), float(q3)

    @property
    def notch(self) -> tuple[float, float]:
        """95% confidence interval of the median."""
        q1, q3 = self.quartiles
        half = 1.57 * (q3 - q1) / np.sqrt(len(self.times))
        return self.median - half, self.median + half

    def as_dict(self) -> dict:
        q1, q3 = self.quartiles
        lo, hi = self.notch
        return {"model": self.model, "ratio": self.ratio, "runs": len(self.times), "clean_s": self.clean,
                "slowdown": {"mean": self.mean, "median": self.median, "q1": q1, "q3": q3,
                             "notch": [lo, hi], "min": float(self.slowdowns.min()),
                             "max": float(self.slowdowns.max())},
                "seeds": list(self.seeds)}


#: most noise runs one call makes (each is a whole simulation)
MAX_RUNS = 10_000

def noise_runs(schedule: Schedule, platform: Platform, *, model: str, noise: NetworkNoise, runs: int,
               options: EngineOptions = EngineOptions(), workers: int | None = None,
               progress=None) -> NoiseRuns:
    """Simulate ``schedule`` once clean and ``runs`` times with ``noise``
    (seeds ``noise.seed``, ``noise.seed + 1``, ...). Runs go to ``workers``
    threads (default: one per core; the engine releases the interpreter, and
    the op program is compiled once and shared). ``progress(done, total)`` is
    called after each run; the times do not depend on ``workers``."""
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or not 1 <= runs <= MAX_RUNS:
        raise SpecError(f"runs={runs!r}, expected an integer in 1..{MAX_RUNS}")
    program = None if lockstep_applies(schedule, model, options) else compile_program(schedule)
    clean = simulate(schedule, platform, EngineConfig(model, options), program=program).time
    seeds = tuple(noise.seed + i for i in range(runs))

    def one(s: int) -> float:
        return simulate(schedule, platform, EngineConfig(model, options, replace(noise, seed=s)),
                        program=program).time

    times = np.empty(runs)
    from concurrent.futures import ThreadPoolExecutor   # only for a series: start-up of every command
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        for i, t in enumerate(pool.map(one, seeds)):
            times[i] = t
            if progress is not None:
                progress(i + 1, runs)
    return NoiseRuns(clean, times, seeds, model, noise.ratio)
