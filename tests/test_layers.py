"""The library's contract and its floors (house style).

- The contract: ``distlib.CONTRACT`` names what chapters, tests and outside
  checks call; each is exported, and the chapters call nothing else of the
  top level.
- The floors: data flows one way, models -> plots -> widgets, with the
  engines and the programs that launch processes beside them. Checked by
  reading every import of ``distlib/**/*.py`` (module level and inside
  functions) with ``ast``, never by importing.
- No import circle among distlib's modules.
- One home per idea: each idea spelled out in one module; the top level exports that very object.
- No function of distlib spans more than 80 lines, but the known ones.
- CONTRIBUTING.md names only paths that exist, and nothing outside the repository.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import distlib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = Path(distlib.__file__).parent
FORBIDDEN = {"matplotlib", "ipywidgets", "IPython"}

#: Packages and modules that start processes (the benchmark, the mini cluster, the trainer, python -m distlib.run):
#: not models. Everything else of distlib that is not in a LAYER_PACKAGE is on the model floor, by that rule
#: alone: a new module at the top level or in a model package (collectives/, topology/, overlap/, planner/) needs
#: no list.
LAUNCHERS = {"distlib.bench", "distlib.minicluster", "distlib.run", "distlib.train"}
#: The modules inside a launcher package that only compute (typed results, the trainer's model, data, optimizer,
#: microbatch arithmetic and pipeline stages): on the model floor, so plots and models may import them.
LAUNCHER_MODELS = {"distlib.train.model", "distlib.train.experts", "distlib.train.data", "distlib.train.adam",
                   "distlib.train.results", "distlib.train.microbatches", "distlib.train.pipeline_parallel"}
#: The packages of the other layers, each with its own rules below.
LAYER_PACKAGES = {"distlib.engines", "distlib.plots", "distlib.widgets", "distlib.examples", "distlib.static"}



def floor(module: str) -> str:
    """``"layer"`` (engines, plots, widgets, examples, static), ``"launcher"`` or ``"model"``, by folder."""
    if _inside(module, LAYER_PACKAGES):
        return "layer"
    if _inside(module, LAUNCHERS) and module not in LAUNCHER_MODELS:
        return "launcher"
    return "model"


#: What a model module may not import: anything that launches, draws or wires controls.
MODEL_MAY_NOT_IMPORT = ("distlib.engines", "distlib.bench", "distlib.minicluster", "distlib.widgets",
                        "distlib.plots", "distlib.examples")
#: What a plot module may not import: the benchmark CLI, engines, the mini cluster, widgets. (A module on the
#: model floor may be imported from anywhere, distlib.collectives.measured too.)
PLOTS_MAY_NOT_IMPORT = ("distlib.engines", "distlib.bench", "distlib.minicluster", "distlib.widgets",
                        "distlib.examples")
#: What the static book (picture pairs, frame grids, the phone layout) may not import: it draws on what
#: plots and widgets make, and is imported by them, so neither of them; and nothing that launches.
STATIC_MAY_NOT_IMPORT = ("distlib.engines", "distlib.bench", "distlib.minicluster", "distlib.widgets",
                         "distlib.plots", "distlib.examples")

#: Violations the scan finds today; it must find exactly these: the test fails when a violation is
#: added, and also when one is fixed and this set is not updated. ("plots" or "static", importer, imported),
#: ("model", importer, imported) or ("cycle", *modules). None left: the bench's results moved to
#: distlib.collectives.measured (plots.bench imports that), and race() to distlib.bench.launch.
KNOWN_VIOLATIONS: set = set()


# --------------------------------------------------------------------------
# The contract
# --------------------------------------------------------------------------


def test_every_contract_name_is_exported_and_in_all():
    missing = [n for n in distlib.CONTRACT if not hasattr(distlib, n)]
    assert not missing, f"CONTRACT names distlib does not have: {missing}"
    assert not set(distlib.CONTRACT) - set(distlib.__all__), "CONTRACT names missing from __all__"
    assert len(set(distlib.CONTRACT)) == len(distlib.CONTRACT), "a name twice in CONTRACT"
    namespace = {}
    exec("from distlib import *", namespace)
    assert set(distlib.CONTRACT) <= set(namespace)


def test_all_lists_exactly_what_distlib_exports():
    assert len(set(distlib.__all__)) == len(distlib.__all__), "a name twice in __all__"
    absent = [n for n in distlib.__all__ if not hasattr(distlib, n)]
    assert not absent, f"in __all__ but not in distlib: {absent}"
    # every public name the package binds, except the submodules bound as a side effect of importing them
    bound = {n for n, v in vars(distlib).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert bound - set(distlib.__all__) == set(), "exported but not listed in __all__"
    modules = {n for n in distlib.__all__ if isinstance(getattr(distlib, n), types.ModuleType)}
    assert modules <= set(distlib.CONTRACT), f"modules in __all__ that no chapter reaches: {modules}"


def _chapter_texts():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            yield path.name, "".join(cell["source"])
    for path in sorted((ROOT / "book").glob("*.md")):
        yield path.name, path.read_text()
    yield "gpu_check.sh", (ROOT / "scripts" / "gpu_check.sh").read_text()


def test_the_chapters_call_nothing_of_the_top_level_outside_the_contract():
    used = {}
    for where, text in _chapter_texts():
        names = set(re.findall(r"\bdl\.([A-Za-z_]\w*)", text))
        for imported in re.findall(r"^\s*from distlib import ([\w, ]+)", text, re.M):
            names |= {part.split(" as ")[0].strip() for part in imported.split(",")}
        for name in names - {"__file__"}:
            used.setdefault(name, where)
    outside = {name: where for name, where in used.items() if name not in distlib.CONTRACT}
    assert not outside, f"add these to distlib.CONTRACT (name: first chapter using it): {outside}"
    assert {"simulate_ring_allreduce", "walls", "roofline"} <= set(used)  # the scan sees code, prose, imports


def test_api_contract_names_exist():
    # ../shared/API.md: the names chapters, tests and outside checks call
    for name in ["simulate_ring_allreduce", "ring_bytes_per_rank"]:
        assert callable(getattr(distlib, name))


# --------------------------------------------------------------------------
# The floors: an import graph read with ast
# --------------------------------------------------------------------------


def _modules() -> dict:
    """``{"distlib.x.y": path}`` for every module and package of distlib."""
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _targets(module: str, path: Path, node) -> set:
    """The distlib modules one import statement runs (the package itself when it is named)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        names = [base] + [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
    out = set()
    for name in names:
        if name != "distlib" and not name.startswith("distlib."):
            continue
        while name not in MODULES:  # an attribute of a module (import a.b.c where c is a name)
            name = name.rsplit(".", 1)[0]
        if name != module:
            out.add(name)
            out |= _packages_run(module, name)
    return out


def _packages_run(module: str, target: str) -> set:
    """The packages whose ``__init__`` importing ``target`` runs first: its enclosing packages but ``distlib``
    itself and those ``module`` is already inside (they run before ``module`` does)."""
    parts, out = target.split("."), set()
    for i in range(2, len(parts)):
        package = ".".join(parts[:i])
        if package in MODULES and not (module == package or module.startswith(package + ".")):
            out.add(package)
    return out


def import_graph() -> dict:
    """``{module: {modules it imports}}``, module-level and function-level imports alike."""
    graph = {}
    for module, path in MODULES.items():
        edges = set()
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(ast.Module(body=[n for n in tree.body if not _is_main_block(n)], type_ignores=[])):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _targets(module, path, node)
        graph[module] = edges
    return graph


def _is_main_block(node) -> bool:
    """``if __name__ == "__main__":`` at module level: entry-point wiring, run only as a program, never on import
    (the program is then the module ``__main__``, another object than the one the library imports)."""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")  # fmt: skip


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _inside(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


#: The model floor, by the rule of :func:`floor`.
MODEL_MODULES = {m for m in MODULES if floor(m) == "model"}


def violations(graph: dict) -> set:
    found = set()
    for module, edges in graph.items():
        edges = {t for t in edges if t not in MODEL_MODULES}  # the model floor is open to every layer
        if module in MODEL_MODULES:
            found |= {("model", module, t) for t in edges if _inside(t, MODEL_MAY_NOT_IMPORT)}
        if _inside(module, ("distlib.plots",)):
            found |= {("plots", module, t) for t in edges if _inside(t, PLOTS_MAY_NOT_IMPORT)}
        if _inside(module, ("distlib.static",)):
            found |= {("static", module, t) for t in edges if _inside(t, STATIC_MAY_NOT_IMPORT)}
    found |= {("cycle", *component) for component in cycles(graph)}
    return found


def test_the_scan_reads_imports_at_every_depth():
    graph = import_graph()
    assert "distlib.collectives" in graph["distlib.cluster"]  # module level
    assert "distlib.gpu_cluster" in graph["distlib.walls"]  # only inside three_walls
    assert "distlib.engines.comm" in graph["distlib.engines.algorithms"]  # relative, one level
    assert "distlib.static.kernel" in graph["distlib.plots"]  # from a package's own __init__
    assert "distlib.static.pictures" in graph["distlib.plots.pictures"]  # the names it re-exports
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    # importing a module of another package runs that package's __init__ first: a circle through it counts
    assert "distlib.static" in graph["distlib.plots.bench"]  # it imports distlib.static.phone: static's __init__ runs
    assert _packages_run("distlib.minicluster.cluster", "distlib.bench.sweep") == {"distlib.bench"}
    assert _packages_run("distlib.train.rank", "distlib.train.model") == set()  # its own package: already running
    assert violations({"distlib.ring": {"distlib.engines.launch"}}) == {
        ("model", "distlib.ring", "distlib.engines.launch")}
    assert violations({"distlib.static.frames": {"distlib.widgets._base", "distlib.fmt"}}) == {
        ("static", "distlib.static.frames", "distlib.widgets._base")}  # a model module is open to it
    assert violations({"distlib.plots.bench": {"distlib.collectives.measured"}}) == set()  # the results: model floor
    assert violations({"distlib.plots.bench": {"distlib.bench.launch"}, "distlib.collectives.measured": {"distlib.bench"}}) == {
        ("plots", "distlib.plots.bench", "distlib.bench.launch"), ("model", "distlib.collectives.measured", "distlib.bench")}


def test_a_modules_floor_follows_from_its_folder():
    # a new module needs no list: its folder says where it stands
    assert floor("distlib.ring") == floor("distlib.planner.step") == floor("distlib.collectives.costs") == "model"
    assert floor("distlib.some_new_chapter_model") == "model"
    assert floor("distlib.train.rank") == floor("distlib.minicluster.cluster") == floor("distlib.bench") == "launcher"
    assert floor("distlib.train.model") == floor("distlib.collectives.measured") == "model"  # computing, in a launcher
    assert floor("distlib.engines.launch") == floor("distlib.widgets.zero") == floor("distlib.plots") == "layer"
    assert LAUNCHER_MODELS <= set(MODULES) and LAUNCHERS <= set(MODULES)  # the lists name modules that exist
    assert {"distlib", "distlib.layout", "distlib.planner", "distlib.overlap.zero"} <= MODEL_MODULES


def test_the_floors_hold_and_there_is_no_import_circle_but_the_known_ones():
    found = violations(import_graph())
    new, fixed = found - KNOWN_VIOLATIONS, KNOWN_VIOLATIONS - found
    assert not new, f"new layer violations or import circles: {sorted(new)}"
    assert not fixed, f"fixed (remove them from KNOWN_VIOLATIONS): {sorted(fixed)}"


def test_model_modules_import_no_plotting_or_widgets():
    offenders = []
    for path in sorted(PACKAGE_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert not offenders, offenders


def test_importing_distlib_loads_neither_matplotlib_nor_ipywidgets():
    code = ("import sys, distlib; bad = [m for m in ('matplotlib', 'ipywidgets') if m in sys.modules]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=120).stdout.strip()
    assert out == ""


# --------------------------------------------------------------------------
# One home per idea
# --------------------------------------------------------------------------


def test_algorithm_names_have_one_home():
    from distlib import collectives as C
    from distlib.engines import algorithms as A
    from distlib.plots import collectives as plot_collectives

    assert A.ALLREDUCE_ALGORITHMS is C.ALLREDUCE_ALGORITHMS  # re-exported, not copied
    assert set(C.ALGORITHMS) < set(C.ALLREDUCE_ALGORITHMS) < set(C.OWN_ALLREDUCE_ALGORITHMS)
    assert set(C.TWO_LEVEL_ALGORITHMS) <= set(C.OWN_ALLREDUCE_ALGORITHMS)
    assert set(C.ENGINE_SCATTER_GATHER_ALGORITHMS) - {"builtin"} <= set(C.ALGORITHMS)
    # every algorithm a chapter plots has a colour and a label, and no other
    assert set(plot_collectives.ALGORITHM_COLORS) == set(plot_collectives.ALGORITHM_LABELS) == set(
        C.ALLREDUCE_ALGORITHMS)
    from distlib.engines.comm import run_threads

    with pytest.raises(ValueError, match="'hierarchical', 'builtin', 'auto'; got 'butterfly'"):
        run_threads(lambda comm: A.allreduce(comm, [1.0], algorithm="butterfly"), 1)


def test_the_top_level_exports_the_one_homes_themselves():
    from distlib import units, walls
    from distlib.engines import algorithms

    assert distlib.ALLREDUCE_ALGORITHMS is algorithms.ALLREDUCE_ALGORITHMS
    assert distlib.gbit_to_bytes_per_s is units.gbit_to_bytes_per_s
    assert distlib.training_flops is walls.training_flops and distlib.zero_stage is walls.zero_stage


#: Where each idea lives. Every other spelling of it in code is a copy.
HOMES = {"Gbit/s -> bytes/s": "distlib/units.py", "6 N D": "distlib/walls.py",
         "algorithm names": "distlib/collectives/names.py"}  # distlib.collectives re-exports it

#: Copies left in files this change could not touch; the house issue replaces them with the home.
#: Exactly these: the test fails on a new copy, and on a copy removed but still listed here.
KNOWN_COPIES = {
    ("Gbit/s -> bytes/s", "distlib/widgets/minicluster.py"),  # the default link and the slider's grid
}


def _number(node, value=None):
    ok = isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return ok and (value is None or node.value == value)


def _giga(node):
    """A literal count of bits in Gbit/s: 1e9, 400e9, ..."""
    return _number(node) and node.value >= 1e9 and node.value % 1e9 == 0


def copies_in(tree) -> set:
    """The ideas this module spells out itself (in code, f-strings included; not in docstrings)."""
    from distlib.collectives import ENGINE_ALLREDUCE_ALGORITHMS

    names = set(ENGINE_ALLREDUCE_ALGORITHMS)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp):
            left, right = node.left, node.right
            if isinstance(node.op, ast.Div) and _number(right, 8) and (
                    _giga(left) or (isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mult)
                                    and (_giga(left.left) or _giga(left.right)))):
                found.add("Gbit/s -> bytes/s")  # x * 1e9 / 8, 400e9 / 8
            if isinstance(node.op, ast.Div) and _giga(right) and isinstance(left, ast.BinOp) and (
                    _number(left.left, 8) or _number(left.right, 8)):
                found.add("Gbit/s -> bytes/s")  # b * 8 / 1e9
            if isinstance(node.op, ast.Mult) and (_number(left, 6) or _number(right, 6)):
                found.add("6 N D")
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            strings = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            # a list of the names, not a pair picked to compare (("builtin", "ring")) nor NCCL's own
            # (gpu_cluster.NCCL_ALGORITHMS shares two: ring and tree)
            if len(strings & names) >= 3:
                found.add("algorithm names")
    return found


def test_each_idea_is_spelled_out_only_in_its_home():
    found = set()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR.parent).as_posix()  # distlib/..., checkout or wheel
        found |= {(idea, rel) for idea in copies_in(ast.parse(path.read_text())) if HOMES[idea] != rel}
    new, fixed = found - KNOWN_COPIES, KNOWN_COPIES - found
    assert not new, f"ask the idea's home ({HOMES}) instead: {sorted(new)}"
    assert not fixed, f"copies gone (remove them from KNOWN_COPIES): {sorted(fixed)}"


@pytest.mark.parametrize("source, idea", [
    ("rate = link_gbit * 1e9 / 8", "Gbit/s -> bytes/s"), ("NIC = 400e9 / 8", "Gbit/s -> bytes/s"),
    ("f'{b * 8 / 1e9:g} Gbit/s'", "Gbit/s -> bytes/s"), ("flops = 6.0 * params * tokens", "6 N D"),
    ("def f(a=['ring', 'tree', 'halving_doubling', 'hierarchical']): pass", "algorithm names"),
])
def test_the_copy_scan_sees_each_spelling(source, idea):
    assert copies_in(ast.parse(source)) == {idea}
    also_fine = "NCCL = ('ring', 'tree', 'nvls'); pair = ('builtin', 'ring'); x = 5 / 6 * y; z = 8 * gbit(400)"
    assert copies_in(ast.parse(also_fine)) == set()


# --------------------------------------------------------------------------
# Small functions
# --------------------------------------------------------------------------

#: The most lines a function of distlib may span, from its ``def`` line to its last (docstring included).
MAX_FUNCTION_LINES = 80

#: Functions over that in files other changes of the house issue own, which split them ("module.qualname").
#: Exactly these: the test fails on a new long function, and on one shortened but still listed here.
KNOWN_LONG: set = set()


def long_functions(tree, module: str) -> dict:
    """``{"module.qualname": lines}`` of every function over the limit: methods and nested functions too."""
    found = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + child.name
                lines = child.end_lineno - child.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{module}.{qualname}"] = lines
                visit(child, qualname + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _function_source(name: str, lines: int, indent: str = "") -> str:
    """A function spanning exactly ``lines`` lines."""
    return f"{indent}def {name}():\n" + f"{indent}    x = 1\n" * (lines - 1)


def test_the_length_scan_sees_methods_nested_functions_and_only_what_is_too_long():
    over = MAX_FUNCTION_LINES + 1
    source = ("class A:\n" + _function_source("f", over, "    ")
              + "def g():\n" + _function_source("h", over, "    ") + "    return h\n"
              + _function_source("short", MAX_FUNCTION_LINES))
    assert long_functions(ast.parse(source), "m") == {"m.A.f": over, "m.g": over + 2, "m.g.<locals>.h": over}


def test_no_function_of_distlib_is_over_80_lines_but_the_known_ones():
    found = {}
    for module, path in MODULES.items():
        found.update(long_functions(ast.parse(path.read_text(), filename=str(path)), module))
    new = {name: lines for name, lines in found.items() if name not in KNOWN_LONG}
    fixed = KNOWN_LONG - set(found)
    assert not new, f"split these into named steps of at most {MAX_FUNCTION_LINES} lines (name: lines): {new}"
    assert not fixed, f"shortened (remove them from KNOWN_LONG): {sorted(fixed)}"


# --------------------------------------------------------------------------
# CONTRIBUTING.md
# --------------------------------------------------------------------------

#: Made by set-up and builds, never committed: a path under them is not checked.
_MADE = {".venv", ".venv-colab", "_build", "dist"}
#: A repository path in backquotes starts with one of the repository's top-level names (or is a
#: top-level file such as `_toc.yml`).
_TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")} | _MADE


def contributing_paths() -> list:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    out = []
    for span in re.findall(r"`([^`\n]+)`", text):
        for word in span.split():
            word = word.strip("()[],;:'\"")
            first = word.split("/")[0]
            if re.search(r"[<>*{}$]|NN", word):  # a pattern such as tests/test_<module>.py
                continue
            if ("/" in word and first in _TOP) or re.fullmatch(r"[\w.-]+\.(txt|toml|yml|yaml|md|cff|bib)", word):
                out.append(word)
    return out


def test_every_repository_path_contributing_names_exists():
    paths = contributing_paths()
    assert len(paths) > 30  # the scan finds the paths it is meant to check
    missing = [p for p in paths if p.split("/")[0] not in _MADE and not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"


def test_contributing_points_nowhere_outside_the_repository():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert "../" not in text


def test_every_package_under_distlib_goes_into_the_wheel():
    """The wheel's package list is found, not kept by hand (a hand-kept one missed distlib.bench).

    ``tests/test_pythons.py`` builds and imports the real wheel (slow); this
    checks in a second that the configuration cannot miss a new sub-package.
    """
    import fnmatch
    import tomllib

    root = ROOT / "distlib"  # the checkout's (test_pythons runs these tests against an installed wheel too)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "packages" not in config or isinstance(config["packages"], dict), "list no packages by hand"
    find = config["packages"]["find"]
    assert find.get("namespaces") is False  # distlib/data has no __init__.py and is data
    packages = sorted(".".join(p.parent.relative_to(root.parent).parts) for p in root.rglob("__init__.py")
                      if "__pycache__" not in p.parts)
    assert "distlib.bench" in packages and len(packages) >= 7
    missed = [p for p in packages if not any(fnmatch.fnmatchcase(p, pat) for pat in find["include"])]
    assert missed == []


def test_only_the_main_block_is_left_out_of_the_import_graph():
    tree = ast.parse("import os\nif __name__ == '__main__':\n    import distlib.bench\nif x == '__main__':\n    pass\n")
    assert [_is_main_block(n) for n in tree.body] == [False, True, False]
    # the mini cluster's command line is wired there, and nowhere else imports it from the mini cluster
    assert "distlib.minicluster.cli" not in import_graph()["distlib.minicluster"]
    assert "distlib.minicluster" in import_graph()["distlib.minicluster.cli"]


# --------------------------------------------------------------------------
# One naming rule for test files (CONTRIBUTING.md, "Tests")
# --------------------------------------------------------------------------

#: Tests of the book itself or of a rule across modules, named after what they check (a module's tests are named
#: after the module instead): the build and its pages, reader copies, slides, kit and installs; the layers and
#: the package; the faults a person at the keyboard meets; the chapters' examples and peers run end to end.
BOOK_TESTS = {
    "bench_train",  # benchmarks/bench_train.py's smallest run
    "bibliography", "book", "browser", "bundle", "colab", "compare_builds", "examples_ch06_07", "faults_cli",
    "find_mpiexec", "gpu_check", "instructor_guide", "jupyterlab_first_run", "layers", "notebooks_meta",
    "packaging", "pictures", "pictures_anywhere", "pipelining_peer", "publish", "pythons", "reader_jupyterlab",
    "reader_notebooks", "setup_cell", "slides", "slurm", "stored_outputs", "workshop",
    "engines_safety",  # every launcher ending a run whose rank fails, hangs or leaves
    "engines_torch",  # the book's collectives over torch.distributed against its built-ins
    "train_torch",  # the trainer on gloo, its torch twin, and the peers FSDP2 and DTensor
    "widget_inputs", "widgets_static",  # every widget's bad inputs and static frames (the widgets found by class)
    "widgets_topology_collectives", "widgets_walls_roofline",  # two chapters' widgets each
}


def _module_names() -> set:
    """Each module's test name: its path below distlib/ with ``/`` as ``_``, a private one without its ``_``."""
    out = set()
    for module in MODULES:
        parts = [p.lstrip("_") for p in module.split(".")[1:]]
        if parts:
            out.add("_".join(parts))
    return out


def test_every_test_file_is_named_after_its_module_or_what_it_checks():
    names = {p.stem[len("test_"):] for p in (ROOT / "tests").glob("test_*.py")}
    stray = sorted(names - _module_names() - BOOK_TESTS)
    assert not stray, (f"tests/test_{{{','.join(stray)}}}.py: name a module's tests after the module (its path below "
                       "distlib/ with / as _), or add a test of the book to BOOK_TESTS")
    assert not (BOOK_TESTS - names), f"BOOK_TESTS names files that are gone: {sorted(BOOK_TESTS - names)}"
