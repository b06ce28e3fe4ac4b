"""Schedules on modelled networks. For now: the static, round-synchronous
contention model (:mod:`.static`); the event-driven engine comes with the
simulator issue."""

from .static import RoundCost, StaticEstimate, static_contention

__all__ = ["static_contention", "StaticEstimate", "RoundCost"]
