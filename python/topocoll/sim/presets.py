"""Validated defaults: the engine options that reproduce a reference
(``--preset`` of ``simulate``, ``compare`` and ``tune``).

A preset is a small set of :class:`~topocoll.sim.engine.EngineOptions`
fields, each taken from the reference's source or documentation, never
fitted to the results it then reproduces. The profile keeps its costs
(o, g, G, L); precedence at the end.

=======  ==================================================================
``smpi`` SimGrid's SMPI with its defaults (SimGrid 3.32):
         ``sharing="cm02"`` (``network/model:CM02``);
         ``small_sends="detached"`` with ``eager=65535``: a send of fewer than
         ``smpi/send-is-detached-thresh`` = 65,536 B returns at once, its
         data moving once the receive is posted, since
         ``smpi/async-small-thresh`` = 0 sends every message to the
         receiver's mailbox, where it waits for the matching receive
         (``src/smpi/internals/smpi_config.cpp`` lines 92–97;
         ``src/smpi/mpi/smpi_request.cpp`` line 542 (``size_ <
         detached thresh``: detached), 585–587 (``size_ < async thresh``:
         the permanent-receive mailbox, i.e. eager));
         ``envelope_bytes=16`` (``smpi_request.cpp`` line 617:
         ``payload_size_ = size_ + 16; //MPI enveloppe size``);
         ``rendezvous="direct"`` (a large send starts when both sides are
         posted: SimGrid matches the two and starts the transfer, no
         control messages).
``mpi``  What MPI libraries over InfiniBand do: ``eager=12288`` (Open MPI's
         ob1 PML over the openib BTL, ``btl_eager_limit = 12 * 1024`` in
         ``opal/mca/btl/openib/btl_openib_mca.c``; MVAPICH2's
         ``MV2_IBA_EAGER_THRESHOLD`` is 12 KB on ConnectX too; MPICH's
         ch4/ofi native path leaves the switch to the provider, ``verbs;
         ofi_rxm``: eager below ``FI_OFI_RXM_BUFFER_SIZE`` = 16 KB less its
         header, libfabric ``prov/rxm/src/rxm_init.c``), sends up to it
         ``eager`` (the data leaves at once, buffered at the receiver),
         ``rendezvous="handshake"`` above it (RTS/CTS: a control round
         trip before the data), ``sharing="maxmin"`` (the engine's fair
         sharing; CM02's latency weighting is SimGrid's TCP model), no
         envelope (a profile's calibrated β already prices the library's
         headers). Not yet validated against a real cluster.
=======  ==================================================================

The ``smpi`` preset was checked against SMPI with its default thresholds on
the cases of ``benchmarks/bench_smpi.py`` (``--preset-check``): the flow
model within 1 % on 26 of 26 (largest error 0.02 %), the engine's defaults
within 1 % on 18 (docs/validation.md). The default stays no preset, so runs
without the option are bit for bit what they were.

Precedence: a flag given explicitly wins; then the preset; then a
``--profile``'s protocol fields, except its measured eager threshold, which
wins over the preset's.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import SpecError

__all__ = ["PRESETS", "DEFAULT_PRESET", "preset_options", "apply_preset", "describe_preset"]

#: name → EngineOptions fields (module doc: the source of each value)
PRESETS: dict[str, dict] = {
    "smpi": dict(sharing="cm02", small_sends="detached", eager=65535, envelope_bytes=16, rendezvous="direct"),
    "mpi": dict(sharing="maxmin", small_sends="eager", eager=12288, envelope_bytes=0, rendezvous="handshake"),
}
#: the preset a command line without ``--preset`` gets: none (the engine's own defaults, which are SMPI's
#: thresholds with eager sends, maxmin sharing and no envelope: what the tests and BENCHMARKS were made with)
DEFAULT_PRESET = None


def preset_options(name: str) -> dict:
    """The EngineOptions fields of preset ``name``; SpecError naming the choices."""
    if name not in PRESETS:
        raise SpecError(f"--preset {name!r}, expected one of {', '.join(PRESETS)}")
    return dict(PRESETS[name])


def apply_preset(options, name: str | None, *, keep: tuple = ()):
    """``options`` (an :class:`EngineOptions`) with preset ``name``'s fields,
    except those named in ``keep`` (given explicitly); ``name`` None: unchanged."""
    if name is None:
        return options
    return replace(options, **{k: v for k, v in preset_options(name).items() if k not in keep})


def describe_preset(name: str | None, options) -> str:
    """``preset smpi (its protocol as the run used it)`` or ``no preset``
    (the engine's defaults and the flags given): one phrase of the
    simulate/compare header line."""
    if not name:
        return "no preset"
    return (f"preset {name} (sharing {options.sharing}, {options.small_sends} sends up to {options.eager} B, "
            f"rendezvous {options.rendezvous}, envelope {options.envelope_bytes} B)")
