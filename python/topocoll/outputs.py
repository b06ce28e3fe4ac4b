"""Every file topocoll writes, written one way: all of a command's outputs checked before any work,
each written whole or not at all.

- :func:`check_outputs` takes a command's outputs (option, path) and its input files, and refuses in
  one line, before anything is computed or written: a name that is no file name, a directory that
  does not exist or cannot be written, an existing file that cannot be overwritten, two outputs to
  one file, or an output that is one of the inputs (``calibrate --from-osu inter:F -o F`` would
  overwrite what it reads). Paths are compared resolved (``./a``, ``a`` and a symbolic link to it
  are one file).
- :func:`write_text`, :func:`write_bytes` and :func:`atomic` write through a temporary file in the
  same directory renamed into place (``os.replace``): an error or Ctrl-C part-way leaves the old
  file (or none), never a half-written one.
- :func:`input_files` lists the files a command line reads, from the options the verbs share.
- :func:`add_json_argument` and :func:`write_json`: ``--json [FILE]`` the same way on every verb:
  ``--json`` alone (or ``--json -``) prints the JSON on stdout instead of the text, ``--json FILE``
  writes it whole into FILE and the text is still printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Iterable, Iterator

from .errors import SpecError

__all__ = ["STDOUT", "check_output", "check_outputs", "check_output_dir", "atomic", "write_text", "write_bytes",
           "input_files", "add_json_argument", "json_to_stdout", "json_output", "write_json", "JSON_SWALLOW_HINT"]

#: the path that means standard output where an option allows it
STDOUT = "-"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _key(path: Path) -> str:
    """``path`` resolved (symbolic links followed; a missing file's directory resolved)."""
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return os.path.abspath(path)


def check_output(option: str, path, *, stdout: bool = False) -> Path | None:
    """``path`` as a file this command can write, checked now: a file name (not a directory, not
    empty), in a directory that exists and takes files, not an existing file it may not overwrite.
    ``None`` passes, and ``-`` where ``stdout`` allows it (both return None)."""
    if path is None:
        return None
    text = os.fspath(path)
    if text == STDOUT:
        if stdout:
            return None
        raise SpecError(f"{option} -, expected a file name (this output cannot go to stdout)")
    p = Path(text)
    parent = p.parent if str(p.parent) else Path(".")
    if not text.strip() or p.is_dir() or text.endswith(("/", os.sep)):
        raise SpecError(f"{option} {text!r}, expected a file name to write")
    if not parent.is_dir():
        raise SpecError(f"{option} {text!r}: directory {str(parent)!r} does not exist, expected an existing "
                        "directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(f"{option} {text!r}: directory {str(parent)!r} is not writable, expected a writable "
                        "directory")
    if p.exists() and not (p.is_file() and os.access(p, os.W_OK)):
        raise SpecError(f"{option} {text!r}: the file exists and cannot be replaced, expected a writable file")
    return p


def check_output_dir(option: str, path) -> Path:
    """``path`` as a directory this command can fill: an existing writable directory, or a name in
    one (created when written)."""
    text = os.fspath(path)
    p = Path(text)
    if not text.strip():
        raise SpecError(f"{option} {text!r}, expected a directory name")
    if p.exists():
        if not p.is_dir():
            raise SpecError(f"{option} {text!r} is a file, expected a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise SpecError(f"{option} {text!r}: the directory is not writable, expected a writable directory")
        return p
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise SpecError(f"{option} {text!r}: directory {str(parent)!r} does not exist, expected an existing "
                        "directory to create it in")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(f"{option} {text!r}: directory {str(parent)!r} is not writable, expected a writable "
                        "directory")
    return p


def check_outputs(outputs: Iterable[tuple[str, object]], inputs: Iterable[tuple[str, object]] = (), *,
                  stdout: Iterable[str] = ()) -> dict[str, Path]:
    """Check every output of a command before any is written (:func:`check_output` each), then that
    no two go to one file, at most one to stdout, and none to one of ``inputs`` ((what, path) of the
    files the command reads). ``stdout``: the options that may be ``-``. Returns {option: path} of
    the outputs given (stdout ones left out)."""
    allowed = set(stdout)
    out: dict[str, Path] = {}
    to_stdout = []
    for option, path in outputs:
        if path is not None and os.fspath(path) == STDOUT and option in allowed:
            to_stdout.append(option)
            continue
        p = check_output(option, path)
        if p is not None:
            out[option] = p
    if len(to_stdout) > 1:
        raise SpecError(f"{' and '.join(to_stdout)} all write to stdout (-), expected one at most")
    seen: dict[str, str] = {}
    for option, p in out.items():
        key = _key(p)
        if key in seen:
            raise SpecError(f"{seen[key]} and {option} both write {str(p)!r}, expected a file of its own for each")
        seen[key] = option
    for what, path in inputs:
        if path is None:
            continue
        key = _key(Path(os.fspath(path)))
        if key in seen:
            raise SpecError(f"{seen[key]} {str(out[seen[key]])!r} is also an input ({what}), expected an output "
                            "the command does not read (it would be overwritten)")
    return out


@contextlib.contextmanager
def atomic(path, *, option: str = "output", binary: bool = False, newline: str | None = None) -> Iterator[IO]:
    """A file object whose content replaces ``path`` when the ``with`` block ends without an error;
    on any error (Ctrl-C included) the temporary file goes and ``path`` is as it was. OSError is a
    one-line SpecError naming ``option``."""
    path = Path(os.fspath(path))
    parent = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise SpecError(f"{option} {str(path)!r}: cannot write there ({exc.strerror or exc}), expected a writable "
                        "directory") from None
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"newline": newline,
                                                                          "encoding": "utf-8"})) as fh:
            yield fh
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SpecError(f"{option} {str(path)!r}: cannot write ({exc.strerror or exc}), expected a writable "
                        "file") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path, text: str, *, option: str = "output") -> Path:
    """``text`` (UTF-8) into ``path`` whole, through :func:`atomic`; ``-``: stdout."""
    if os.fspath(path) == STDOUT:
        sys.stdout.write(text)
        return Path(STDOUT)
    with atomic(path, option=option) as fh:
        fh.write(text)
    return Path(os.fspath(path))


def write_bytes(path, data: bytes, *, option: str = "output") -> Path:
    """``data`` into ``path`` whole, through :func:`atomic`."""
    with atomic(path, option=option, binary=True) as fh:
        fh.write(data)
    return Path(os.fspath(path))


#: topology spec families whose parameter is a file, and the spec options naming files
_FILE_FAMILIES = ("ibnet", "simgrid", "rtr")
_ORDER_FILES = ("hostfile", "slurm")


def _spec_files(spec: str | None) -> list[str]:
    """The files a topology spec reads (``ibnet:F@map=M``, ``simgrid:F``, ``rtr:F``)."""
    if not spec:
        return []
    body, _, opts = spec.partition("+ppn=")[0].partition("@")
    family, _, rest = body.partition(":")
    files = [rest.strip()] if family.strip().lower() in _FILE_FAMILIES and rest.strip() else []
    for item in opts.split(","):
        key, _, value = item.partition("=")
        if key.strip() == "map" and value.strip():
            files.append(value.strip())
    return files


def input_files(args) -> list[tuple[str, str]]:
    """(what, path) of the files a parsed command line reads, from the options verbs share:
    ``--topology``/``spec`` files, ``--order hostfile:F``/``slurm:F``, ``--profile``, ``--os-noise
    trace:F``, ``--local``, a GOAL file (``simulate goal F``)."""
    out = []
    for name in ("topology", "spec"):
        out += [(f"{'--' if name == 'topology' else ''}{name} {getattr(args, name)}", f)
                for f in _spec_files(getattr(args, name, None))]
    order = getattr(args, "order", None)
    if isinstance(order, str) and order.partition(":")[0] in _ORDER_FILES and order.partition(":")[2]:
        out.append((f"--order {order}", order.partition(":")[2].split(",")[0]))
    for option in ("profile", "local"):
        if getattr(args, option, None):
            out.append((f"--{option}", getattr(args, option)))
    noise = getattr(args, "os_noise", None)
    if isinstance(noise, str) and noise.startswith("trace:"):
        out.append((f"--os-noise {noise}", noise[len("trace:"):]))
    if getattr(args, "collective", None) == "goal" and getattr(args, "algorithm", None):
        out.append(("the GOAL file", args.algorithm))
    return out


# ---- --json [FILE], one meaning on every verb ------------------------------------------------

#: said in every ``--json`` help and in the error when a bare ``--json`` took the next word as its FILE
JSON_SWALLOW_HINT = ("put --json after the positional arguments, or write --json=FILE: a word right after a bare "
                     "--json is taken as its FILE")


def add_json_argument(parser, what: str) -> None:
    """``--json [FILE]`` on ``parser``: ``what`` (e.g. "the ranking") as JSON, on stdout instead of the
    text when FILE is left out or ``-``, else into FILE (the text still printed).

    ``nargs="?"`` makes argparse take the word after a bare ``--json`` as FILE
    (``topocoll topo --json kary:4,2`` reads ``kary:4,2`` as FILE): the help says so, and
    :class:`topocoll.cli._Parser` adds :data:`JSON_SWALLOW_HINT` to the error that follows."""
    parser.add_argument("--json", nargs="?", const=STDOUT, default=None, metavar="FILE",
                        help=f"{what} as JSON: --json alone (or --json -) prints it on stdout instead of the text; "
                             f"--json FILE writes it into FILE (whole, or not at all) and prints the text too. "
                             f"{JSON_SWALLOW_HINT[0].upper()}{JSON_SWALLOW_HINT[1:]}".replace("%", "%%"))


def json_to_stdout(args) -> bool:
    """Whether ``--json`` sends the JSON to stdout (the text is then left out)."""
    return getattr(args, "json", None) == STDOUT


def json_output(args) -> list[tuple[str, object]]:
    """``[("--json", path)]`` for :func:`check_outputs` (give ``stdout=("--json",)``)."""
    return [("--json", getattr(args, "json", None))]


def json_text(obj) -> str:
    """``obj`` as the JSON every verb writes: indented by one, one trailing newline, NumPy scalars as
    numbers and anything else without a JSON form as its text."""
    def default(value):
        item = getattr(value, "item", None)      # NumPy scalars
        return item() if callable(item) else str(value)
    return json.dumps(obj, indent=1, default=default) + "\n"


def write_json(args, obj, *, option: str = "--json") -> bool:
    """``obj`` where ``--json`` says: stdout (``--json``/``--json -``) or FILE, written whole
    (:func:`write_text`); nothing without ``--json``. Returns whether it went to stdout (the caller
    then prints no text)."""
    path = getattr(args, "json", None)
    if path is None:
        return False
    write_text(path, json_text(obj), option=option)
    return os.fspath(path) == STDOUT
