"""Type stubs of ``topocoll._core``, the Rust core (``src/bindings``).

Arrays are one-dimensional NumPy arrays of the dtype named; times are
integer picoseconds (``*_ps``). The engine's configuration crosses as the
Python dataclasses themselves (``src/bindings/config.rs``).
"""

from collections.abc import Iterator
from enum import Enum

import numpy as np
from numpy.typing import NDArray

from .sim.engine import EngineConfig as _EngineConfig
from .sim.model import Platform as _Platform
from .sim.wiring import PacketWiring as _PacketWiring

U8 = NDArray[np.uint8]
U32 = NDArray[np.uint32]
U64 = NDArray[np.uint64]
I64 = NDArray[np.int64]
F32 = NDArray[np.float32]
F64 = NDArray[np.float64]

# --- engine (src/bindings/engine.rs, config.rs) ---

class EngineProgram:
    def __init__(self, n_ranks: int, rank: U32, kind: U8, peer: U32, tag: I64, nbytes: U64,
                 dep_ptr: U64, dep_idx: U32, round_ptr: U64) -> None: ...
    @property
    def n_ops(self) -> int: ...
    @property
    def bytes_sent(self) -> int: ...
    @property
    def bytes_all(self) -> int: ...
    @property
    def n_messages(self) -> int: ...
    def messages(self) -> tuple[U32, U32]: ...

class EngineConfig:
    def __init__(self, config: _EngineConfig, platform: _Platform, *, wiring: _PacketWiring | None = None,
                 background: U32 | None = None) -> None: ...

class EngineOutcome:
    time_ps: int
    rank_done_ps: U64
    op_start_ps: U64
    op_end_ps: U64
    msg_inject_ps: U64
    msg_arrive_ps: U64
    msg_send: U64
    msg_recv: U64
    link_bytes: F64
    app_messages: int
    bg_messages: int
    events: int
    os_stolen_ps: int
    congestion: F32 | None
    max_congestion: float | None
    packet_hops: int
    max_buffer_packets: int
    buffer_max: U32 | None
    buffer_mean: F64 | None

Chunk = tuple[U32, U8, U32, I64, U64, U64, U64]

def engine_run(program: EngineProgram, router: RoutingEngine, bandwidth: F64, latency_ps: U64, order: U32,
               config: EngineConfig) -> EngineOutcome: ...
def engine_run_streamed(chunks: Iterator[Chunk], n_ranks: int, router: RoutingEngine, bandwidth: F64,
                        latency_ps: U64, order: U32, config: EngineConfig
                        ) -> tuple[EngineOutcome | None, str | None, tuple[int, int, int, int]]: ...
def engine_lockstep(router: RoutingEngine, bandwidth: F64, latency_ps: U64, order: U32, xor: bool,
                    message: NDArray[np.bool_], send_off: U32, nbytes: U64, send_at: U64, recv_at: U64,
                    local_end: U64, post: U64, *, eager: int = ..., barrier: bool = False,
                    bg_endpoints: U32 | None = None, bg_seed: int = 0) -> dict: ...

# --- synthetic traffic (src/bindings/traffic.rs) ---

class Pattern(Enum):
    Uniform = ...
    Transpose = ...
    BitComplement = ...
    Tornado = ...
    HotSpot = ...

class TrafficResult:
    offered: float
    accepted: float
    created: int
    delivered: int
    measured: int
    backlog: int
    packets_created: int
    packet_hops: int
    mean_latency_ps: float
    p99_latency_ps: float
    max_buffer_packets: int
    saturated: bool
    saturated_by: str
    cycle_ps: int
    latency_threshold_ps: int
    slot_ps: int
    drain_slots: int
    drain_error: str | None

def traffic_run(router: RoutingEngine, bandwidth: F64, latency_ps: U64, config: EngineConfig, pattern: Pattern,
                load: float, *, hot_fraction: float = 0.0, hot_node: int = 0, dims: list[int] | None = None,
                warmup_slots: int = 1000, measure_slots: int = 10000, drain_slots: int = 11000,
                seed: int = 0, latency_thres: float = 0.0,
                alt_router: RoutingEngine | None = None) -> TrafficResult: ...

# --- routing (src/bindings/routing.rs) ---

class RoutingEngine:
    @staticmethod
    def fat_tree(src: U32, dst: U32, m: list[int], w: list[int], p: list[int], rule: str,
                 seed: int = 0) -> RoutingEngine: ...
    @staticmethod
    def torus(src: U32, dst: U32, k: list[int], wrap: list[bool], order: list[int], tie_rule: str,
              adaptive: bool) -> RoutingEngine: ...
    @staticmethod
    def dragonfly(src: U32, dst: U32, a: int, p: int, h: int, g: int,
                  valiant_seed: int | None = None) -> RoutingEngine: ...
    @staticmethod
    def table(n_nodes: int, n_endpoints: int, src: U32, dst: U32, entries: U32) -> RoutingEngine: ...
    @staticmethod
    def minhop(n_nodes: int, n_endpoints: int, src: U32, dst: U32, order: U32 | None = None) -> RoutingEngine: ...
    @staticmethod
    def updown(n_nodes: int, n_endpoints: int, src: U32, dst: U32, roots: list[int]) -> RoutingEngine: ...
    @staticmethod
    def nodes(fabric: RoutingEngine, n_nodes: int, src: U32, dst: U32, ppn: int) -> RoutingEngine: ...
    @property
    def multipath(self) -> bool: ...
    def table_entries(self) -> U32 | None: ...
    def route(self, src: U32, dst: U32) -> tuple[U64, U32, F64]: ...
    def loads(self, src: U32, dst: U32) -> F64: ...
    def ebb(self, src: U32, dst: U32, per_pattern: int, bandwidth: F64) -> F64: ...

def routing_endpoint_diameter(n_nodes: int, n_endpoints: int, src: U32, dst: U32) -> int: ...
def routing_torus_links(k: list[int], wrap: list[bool]) -> tuple[U32, U32]: ...
def routing_xgft_links(m: list[int], w: list[int], p: list[int]) -> tuple[U32, U32]: ...
def routing_dragonfly_links(a: int, p: int, h: int, g: int) -> tuple[U32, U32]: ...

# --- pixel kernels (src/bindings/kernels.rs) ---

def kernels_over(front: NDArray, back: NDArray, out: NDArray, threads: int = 1) -> None: ...
def kernels_over_into_back(front: NDArray, back: NDArray, threads: int = 1) -> None: ...
def kernels_over_into_front(front: NDArray, back: NDArray, threads: int = 1) -> None: ...
def kernels_active_encode(pixels: NDArray) -> tuple[NDArray, NDArray]: ...
def kernels_active_decode(runs: NDArray, pixels: NDArray, out: NDArray) -> None: ...
def kernels_active_over(front_runs: NDArray, front_pixels: NDArray, back_runs: NDArray, back_pixels: NDArray,
                        n_pixels: int) -> tuple[NDArray, NDArray]: ...
def kernels_active_over_into_back(front_runs: NDArray, front_pixels: NDArray, back: NDArray) -> None: ...
def kernels_active_over_into_front(front: NDArray, back_runs: NDArray, back_pixels: NDArray) -> None: ...
