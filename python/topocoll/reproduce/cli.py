"""``topocoll reproduce NAME | --all [--quick] [--out DIR]``: run the papers'
experiments in simulation and write their pages (:mod:`topocoll.reproduce`)."""

from __future__ import annotations

import sys

from ..errors import SpecError
from ..outputs import check_output_dir
from . import EXPERIMENTS

__all__ = ["add_reproduce_parser", "cmd_reproduce"]


def add_reproduce_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="reproduce the papers' results in simulation: pages, CSV, plots",
                       description="Run a paper's experiments on its configuration in simulation and write a "
                                   "page in Markdown and HTML (the paper's numbers beside topocoll's, ratio, whether "
                                   "each conclusion holds), CSV files and plots. With --out report/reproduce the "
                                   "pages sit beside `topocoll demo`'s report, linked both ways.")
    p.add_argument("name", nargs="?", help=f"experiment: {', '.join(EXPERIMENTS)}")
    p.add_argument("--all", action="store_true", help="run every experiment")
    p.add_argument("--quick", action="store_true", help="reduced sizes (all five in about a minute on 2 cores)")
    p.add_argument("--out", default="out/reproduce", metavar="DIR",
                   help="directory of the pages (default out/reproduce; one subdirectory per experiment)")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.set_defaults(func=cmd_reproduce)


def cmd_reproduce(args) -> int:
    from . import module, reproduce, write_index
    if args.list:
        for name in EXPERIMENTS:
            print(f"{name:<14} {module(name).TITLE}")
        return 0
    if args.all == bool(args.name):
        raise SpecError("reproduce needs one experiment NAME or --all, expected e.g. `reproduce radix-k` or "
                        "`reproduce --all --quick`")
    names = list(EXPERIMENTS) if args.all else [args.name]
    for name in names:
        module(name)                          # unknown names fail before any work
    out = check_output_dir("--out", args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SpecError(f"--out {args.out!r}: {e.strerror or e}, expected a writable directory") from None
    from tqdm import tqdm
    results = []
    for name in names:
        bar = tqdm(desc=name, unit="step", file=sys.stderr, disable=None, leave=False)

        def step(what, bar=bar):
            bar.set_postfix_str(what, refresh=False)
            bar.update(1)

        try:
            result, page = reproduce(name, out, quick=args.quick, progress=step)
        finally:
            bar.close()
        print(f"{name}: results that hold: {result.holding_text()} ({'quick' if args.quick else 'full'}, "
              f"{result.seconds:.1f} s): {page}")
        results.append((result, page))
    if args.all:
        print(f"index: {write_index(results, out)}")
    return 0
