"""The type stubs say what the native module really has: every function, with its parameters
and defaults, and nothing it lacks (editors complete from them)."""

import ast
import inspect
from pathlib import Path

import orrery
import orrery._native as native


def stub_functions():
    tree = ast.parse((Path(orrery.__file__).parent / "_native.pyi").read_text())
    return {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}


def test_native_stubs_match_the_module():
    stubs = stub_functions()
    public = {n for n in dir(native) if not n.startswith("_") and callable(getattr(native, n))}
    assert set(stubs) == public
    for name, f in stubs.items():
        sig = inspect.signature(getattr(native, name))
        params = [a.arg for a in f.args.args]
        assert params == list(sig.parameters), name
        defaults = [ast.literal_eval(d) for d in f.args.defaults]
        real = [p.default for p in sig.parameters.values() if p.default is not inspect.Parameter.empty]
        assert defaults == real, name


def test_the_package_is_typed_and_exports_what_it_says():
    assert (Path(orrery.__file__).parent / "py.typed").is_file()
    for name in orrery.__all__:
        assert hasattr(orrery, name), name
    # Every public function of the package carries annotations for editors.
    for name in ["load", "sweep", "merge", "compare", "drill", "cli", "import_ray_cluster"]:
        sig = inspect.signature(getattr(orrery, name))
        assert sig.return_annotation is not inspect.Signature.empty, name
        assert all(p.annotation is not inspect.Parameter.empty for p in sig.parameters.values()), name
