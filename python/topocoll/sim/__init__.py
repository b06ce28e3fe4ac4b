"""Schedules on modelled machines, behind one seam: ``Model.estimate(schedule,
platform) -> Estimate`` (:mod:`.model`). Models: the α-β-γ model, the static
round-synchronous contention model (:mod:`.static`), and the event-driven
``loggops``, ``flow``, ``congestion`` and ``packet`` (:mod:`.packet`)
models on the Rust engine (:mod:`.engine`, docs/simulator.md), with network
and OS noise (:mod:`.noise`), sweeps (:mod:`.sweep`) and synthetic traffic
(:mod:`.traffic`)."""

from .engine import (
    EVENT_MODELS, EngineConfig, EngineOptions, EventModel, NetworkNoise, OsNoise, Simulation, compile_program, simulate,
)
from .model import (
    MODELS, AlphaBetaGamma, Estimate, Model, Network, Platform, StaticContention, make_network, model_named,
)
from .noise import NoiseRuns, noise_runs
from .static import RoundCost, StaticEstimate, static_contention

__all__ = [
    "Model", "Estimate", "Platform", "Network", "AlphaBetaGamma", "StaticContention", "MODELS",
    "make_network", "model_named", "static_contention", "StaticEstimate", "RoundCost",
    "simulate", "Simulation", "EngineConfig", "EngineOptions", "NetworkNoise", "OsNoise", "EventModel", "EVENT_MODELS",
    "compile_program", "noise_runs", "NoiseRuns",
]
