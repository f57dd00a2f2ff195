"""Light product imports (the product needs torch, numpy, safetensors and jaxtyping only), the kit's
ImportError naming its extra, and the allowed dependency order of the sub-packages."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PRODUCT = (
    "arctic_ref",
    "arctic_ref.suffix",
    "arctic_ref.spec",
    "arctic_ref.parallel",
    "arctic_ref.model",
    "arctic_ref.runner",
)


def _run_without(blocked: tuple[str, ...], statement: str) -> subprocess.CompletedProcess[str]:
    """``statement`` in a fresh interpreter where importing any of ``blocked`` raises ImportError."""
    block = "".join(f"sys.modules[{name!r}] = None; " for name in blocked)
    return subprocess.run(
        [sys.executable, "-c", f"import sys; {block}{statement}"], capture_output=True, text=True, timeout=300
    )


def test_product_imports_need_neither_hypothesis_nor_scipy() -> None:
    """Every module of the product packages imports with the kit's and the tests' packages absent."""
    statement = (
        "import importlib, pkgutil; "
        f"packages = [importlib.import_module(p) for p in {PRODUCT!r}]; "
        "names = [m.name for p in packages[1:] for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.')]; "
        "[importlib.import_module(n) for n in names]; "
        "print(len(names), sorted(m for m, v in sys.modules.items() if v is not None and "
        "(m.split('.')[0] in ('hypothesis', 'scipy') or m.startswith('arctic_ref.testing'))))"
    )
    done = _run_without(("hypothesis", "scipy", "matplotlib", "transformers", "beartype", "pytest"), statement)
    assert done.returncode == 0, done.stderr
    count, loaded = done.stdout.strip().split(" ", 1)
    assert int(count) > 40 and loaded == "[]"


def test_the_kit_without_its_extra_names_it() -> None:
    for missing in ("hypothesis", "scipy"):
        done = _run_without((missing,), "import arctic_ref.testing")
        assert done.returncode != 0
        assert f"arctic_ref.testing needs the 'testing' extra (missing: {missing})" in done.stderr
        assert "pip install 'arctic-ref[testing]'" in done.stderr


def test_importing_the_plot_module_selects_no_backend() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import arctic_ref.suffix.plot, sys; print('matplotlib.pyplot' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


LAYERS = {
    "check_options": 4,
    "types": 0,
    "suffix": 1,
    "parallel": 1,
    "spec": 2,
    "model": 3,
    "runner": 4,
    "testing": 5,
    "cli": 6,
    "pytest_plugin": 6,
}
"""The allowed dependency order (STYLE.md's import order): a sub-package imports only sub-packages
of a lower layer, or its own (suffix and parallel are independent of each other)."""


def _part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "arctic_ref" and len(parts) > 1 else None


def test_sub_packages_depend_in_the_allowed_order() -> None:
    """Every import in every module (including any inside a function) goes down the layers; so no
    cycle between sub-packages can exist."""
    root = Path(__file__).resolve().parents[1] / "arctic_ref"
    bad, edges = [], 0
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        source = _part(module.removesuffix(".__init__"))
        if source is None:
            continue  # arctic_ref/__init__.py re-exports the public names
        assert source in LAYERS, f"{module}: {source!r} has no layer in LAYERS"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            )
            for target in targets:
                dest = _part(target)
                if dest is None or dest == source:
                    continue
                edges += 1
                if LAYERS[dest] >= LAYERS[source]:
                    bad.append(f"{module} imports {target} ({source} layer {LAYERS[source]} -> {dest} {LAYERS[dest]})")
    assert edges > 50
    assert not bad, "\n".join(bad)


def _public_definitions() -> dict[str, list[str]]:
    """Public module-level names (classes, functions, constants, aliases, type variables) → the
    modules defining them; ``logger`` and dunder names are every module's own."""
    where: dict[str, list[str]] = {}
    root = Path(__file__).resolve().parents[1] / "arctic_ref"
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            names: list[str] = []
            if isinstance(node, ast.ClassDef | ast.FunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for name in names:
                if not name.startswith("_") and name != "logger":
                    where.setdefault(name, []).append(str(path.relative_to(root.parent)))
    return where


INTERFACE_NAMES = {"SamplingParams": ["arctic_ref/runner/llm.py", "arctic_ref/runner/requests.py"]}
"""Names an outside interface fixes: the engine checks build an engine's sampling parameters with
the ``SamplingParams`` of its own package (vLLM's name), so the reference engine's module has one
beside the runner's own."""


ENTRY_POINTS = ("load", "checks")
"""The two names every component's ``checks.py`` defines (``arctic_ref/testing/<component>/checks.py``):
the registry calls each component by the same names."""


def _is_component_entry(path: str) -> bool:
    parts = Path(path).parts
    return len(parts) == 4 and parts[:2] == ("arctic_ref", "testing") and parts[3] == "checks.py"


def test_no_two_public_symbols_share_a_name() -> None:
    """Outside the entry points of the component modules, every public name is defined once."""
    shared = {}
    for name, paths in _public_definitions().items():
        if name in ENTRY_POINTS:
            paths = [path for path in paths if not _is_component_entry(path)]
        if len(paths) > 1 and paths != INTERFACE_NAMES.get(name):
            shared[name] = paths
    assert not shared, shared


COMPONENT_ENTRY = "checks.py"
"""The one module name every component folder of the kit shares (``arctic_ref/testing/<component>/``
holds its ``load`` and ``checks``), so that it is found by the same name in each."""


def test_module_names_are_unambiguous() -> None:
    """No two modules share a file name, except ``__init__.py`` and each component's ``checks.py``,
    which sits only in a component folder of the kit."""
    root = Path(__file__).resolve().parents[1] / "arctic_ref"
    names: dict[str, list[str]] = {}
    for path in root.rglob("*.py"):
        if path.name == COMPONENT_ENTRY:
            assert path.parent.parent == root / "testing", f"{path}: {COMPONENT_ENTRY} outside a kit component folder"
        elif path.name != "__init__.py":
            names.setdefault(path.name, []).append(str(path.relative_to(root)))
    assert not {n: p for n, p in names.items() if len(p) > 1}


def import_edges(root: Path) -> dict[str, set[str]]:
    """Every module below ``root`` (a package directory) -> the modules of that package it imports,
    anywhere in its source (inside functions and ``TYPE_CHECKING`` blocks too): ``import a.b`` and
    ``from a import b`` name the module ``a.b`` where it exists, else ``a``."""
    package = root.name
    modules = {
        ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in sorted(root.rglob("*.py"))
    }
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                    for alias in node.names
                ]
            edges[name] |= {t for t in targets if t.split(".")[0] == package and t in modules and t != name}
    return edges


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm): each is a set
    of modules that import one another in a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_circle_anywhere() -> None:
    """No set of modules of arctic_ref imports one another in a circle, counting the imports inside
    functions (a circle closed by a function-level import is still a circle)."""
    edges = import_edges(Path(__file__).resolve().parents[1] / "arctic_ref")
    assert sum(len(e) for e in edges.values()) > 300
    assert import_cycles(edges) == []


def test_the_circle_test_finds_a_circle(tmp_path: Path) -> None:
    """The detector itself: a circle closed inside a function, beside a chain that is not one."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from pkg.c import x\n")
    (package / "c.py").write_text("import pkg.a\nx = 1\n")
    (package / "d.py").write_text("from pkg import a\n")
    assert import_cycles(import_edges(package)) == [["pkg.a", "pkg.b", "pkg.c"]]


BASE_INSTALL_BLOCKED = ("hypothesis", "scipy", "matplotlib", "transformers", "pytest")
"""What a base install (no extras) lacks: the CLI's entry point must still run generate and simulate."""


def _cli_without_extras(*argv: str) -> subprocess.CompletedProcess[str]:
    return _run_without(BASE_INSTALL_BLOCKED, f"from arctic_ref.cli import main; sys.exit(main({list(argv)!r}))")


@pytest.mark.parametrize(
    "argv", [("--help",), ("generate", "--help"), ("simulate", "--help"), ("simulate", "--requests", "2")]
)
def test_the_cli_runs_without_the_extras(argv: tuple[str, ...]) -> None:
    done = _cli_without_extras(*argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout


def test_check_without_the_extra_exits_2_naming_it() -> None:
    done = _cli_without_extras("check", "--only", "layout")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "arctic-ref check: arctic_ref.testing needs the 'testing' extra (missing: hypothesis): "
        "pip install 'arctic-ref[testing]'"
    ]
