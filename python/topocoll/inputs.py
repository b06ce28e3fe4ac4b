"""Every file topocoll reads, read one way: bounded in size, whole UTF-8 text,
JSON bounded in nesting, each refusal one line naming the file.

A reader asks for at most ``limit`` bytes: a regular file larger than that is
refused from its size before a byte is read, anything else (``/dev/zero``, a
pipe, a file growing while read) is read in chunks and refused once it passes
``limit``; a NUL byte in the first chunk refuses a text file at once (no text
format topocoll reads holds one, and ``/dev/zero`` is all of them). The limits
are per format, generous, and named where they are used:

=====================  ==========  ==================================================
:data:`TABLE_BYTES`    1 GiB       forwarding-table and fabric dumps (``ibnetdiscover``,
                                   ``ibroute``, Cray ``rtr``), SimGrid platforms
                                   (an exported 1,024-host Full zone is ~0.4 GB),
                                   GOAL programs (Schedgen writes hundreds of MB)
:data:`TEXT_BYTES`     64 MiB      hostfiles, ``topology.conf``, node maps, depth
                                   orders, noise traces
:data:`JSON_BYTES`     16 MiB      machine profiles and tuning tables (a few KB)
=====================  ==========  ==================================================

JSON nesting is bounded before the parser sees the text (:data:`MAX_JSON_DEPTH`):
Python's parser recurses once per level and a file nested 100,000 deep would
end in a ``RecursionError``.
"""

from __future__ import annotations

import json
import os
import re
import stat

import numpy as np

from .errors import ParseError

__all__ = ["TABLE_BYTES", "TEXT_BYTES", "JSON_BYTES", "MAX_JSON_DEPTH", "read_bytes", "read_text", "read_json",
           "json_depth"]

#: bytes of a fabric or forwarding-table dump, or a SimGrid platform, read at most
TABLE_BYTES = 1 << 30
#: bytes of a small text input (hostfile, topology.conf, GOAL, depth order, noise trace) read at most
TEXT_BYTES = 64 << 20
#: bytes of a JSON input (machine profile, tuning table) read at most
JSON_BYTES = 16 << 20
#: deepest nesting of a JSON input (topocoll's own files nest 4 deep)
MAX_JSON_DEPTH = 64
_CHUNK = 1 << 20
_NUL = bytes(1)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


def read_bytes(path, *, limit: int, what: str, text: bool = False, error=ParseError) -> bytes:
    """At most ``limit`` bytes of ``path``; ``error`` (one line naming the
    file and ``what`` was expected) if it cannot be read or holds more. With
    ``text``, a NUL byte in the first MiB is refused as well."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise error(f"{path}: a directory, expected {what}")
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise error(f"{path}: {info.st_size:,} bytes, expected {what} of at most {_size(limit)}")
            parts, total = [], 0
            while True:
                chunk = f.read(min(_CHUNK, limit + 1 - total))
                if not chunk:
                    break
                if text and not parts and _NUL in chunk:
                    raise error(f"{path}: not a text file (byte {chunk.index(_NUL)} is NUL), expected {what}")
                parts.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise error(f"{path}: more than {_size(limit)}, expected {what} of at most {_size(limit)}")
    except OSError as e:
        raise error(f"{path}: cannot read ({e.strerror or e}), expected {what}") from None
    return b"".join(parts)


def read_text(path, *, limit: int = TEXT_BYTES, what: str, error=ParseError) -> str:
    """The UTF-8 text of ``path`` (:func:`read_bytes`); a byte that is not
    UTF-8 is refused naming its offset."""
    data = read_bytes(path, limit=limit, what=what, text=True, error=error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise error(f"{path}:{line}: not UTF-8 text (byte {e.start} is 0x{data[e.start]:02x}), expected {what}") \
            from None


_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def json_depth(data: bytes) -> int:
    """Deepest nesting of ``[``/``{`` in JSON text ``data``, strings skipped
    (counted without parsing, in C: NumPy over the bytes)."""
    bare = np.frombuffer(_STRINGS.sub(b"", data), dtype=np.uint8)
    step = np.zeros(256, np.int8)
    step[[ord("["), ord("{")]], step[[ord("]"), ord("}")]] = 1, -1
    return int(np.cumsum(step[bare], dtype=np.int32).max(initial=0))


def read_json(path, *, limit: int = JSON_BYTES, what: str, depth: int = MAX_JSON_DEPTH, error=ParseError):
    """The JSON value in ``path``, at most ``limit`` bytes and ``depth`` levels
    of nesting (both refused in one line before parsing)."""
    text = read_text(path, limit=limit, what=what, error=error)
    data = text.encode()
    deepest = json_depth(data)
    if deepest > depth:
        raise error(f"{path}: JSON nested {deepest} levels deep, expected {what} nested at most {depth} deep")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{path}:{e.lineno}: not JSON ({e.msg}), expected {what}") from None
    except RecursionError:     # the depth bound above keeps this from happening
        raise error(f"{path}: JSON nested too deep, expected {what}") from None

