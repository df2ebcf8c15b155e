"""What the wheel ships beside the code: type stubs, py.typed, docstrings."""

import ast
import inspect
import os

import toolmend
from toolmend import _native


def test_typed_package():
    here = os.path.dirname(toolmend.__file__)
    assert os.path.exists(os.path.join(here, "py.typed"))
    stubs = ast.parse(open(os.path.join(here, "_native.pyi")).read())
    declared = {n.name for n in stubs.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {t.target.id for n in stubs.body if isinstance(n, ast.AnnAssign) for t in [n]}
    public = {name for name in dir(_native) if not name.startswith("_")} | {"__version__"}
    assert public <= declared | {"__version__"}, public - declared


def test_every_public_name_has_a_docstring():
    for name in toolmend.__all__:
        obj = getattr(toolmend, name)
        if callable(obj):
            assert inspect.getdoc(obj), name
    for cls in (toolmend.Record, toolmend.Mender, toolmend.CallExtractor, toolmend.Process):
        for attr, member in vars(cls).items():
            if not attr.startswith("_"):
                assert inspect.getdoc(member), f"{cls.__name__}.{attr}"
