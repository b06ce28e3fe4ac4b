"""Schedules on modelled machines, behind one seam: ``Model.estimate(schedule,
platform) -> Estimate`` (:mod:`.model`). Models: the α-β-γ model and the
static, round-synchronous contention model (:mod:`.static`); the event-driven
engine comes with the simulator issue."""

from .model import (
    MODELS, AlphaBetaGamma, Estimate, Model, Network, Platform, StaticContention, make_network, model_named,
)
from .static import RoundCost, StaticEstimate, static_contention

__all__ = [
    "Model", "Estimate", "Platform", "Network", "AlphaBetaGamma", "StaticContention", "MODELS",
    "make_network", "model_named", "static_contention", "StaticEstimate", "RoundCost",
]
