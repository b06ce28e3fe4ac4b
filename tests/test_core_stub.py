"""``topocoll/_core.pyi`` describes the extension as built: every public
name of ``topocoll._core`` is in the stub and the stub names nothing the
extension lacks; each stubbed function's parameters are the extension's."""

import ast
import inspect
from pathlib import Path

from topocoll import _core

STUB = Path(__file__).resolve().parents[1] / "python" / "topocoll" / "_core.pyi"
ALIASES = {"U8", "U32", "U64", "I64", "F32", "F64", "Chunk"}


def _stub():
    tree = ast.parse(STUB.read_text())
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def test_the_stub_names_exactly_the_extensions_public_names():
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert set(_stub()) == public


def test_stubbed_functions_take_the_extensions_parameters():
    for name, node in _stub().items():
        if not isinstance(node, ast.FunctionDef):
            continue
        real = list(inspect.signature(getattr(_core, name)).parameters)
        args = node.args
        stub = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        assert stub == real, name
