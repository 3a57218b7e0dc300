"""The model layer stays free of plotting and widgets (house style)."""

import ast
import subprocess
import sys
from pathlib import Path

import distlib

MODEL_DIR = Path(distlib.__file__).parent
FORBIDDEN = {"matplotlib", "ipywidgets", "IPython"}


def test_model_modules_import_no_plotting_or_widgets():
    offenders = []
    for path in sorted(MODEL_DIR.glob("*.py")):
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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_api_contract_names_exist():
    # ../shared/API.md: the names chapters, tests and outside checks call
    for name in ["simulate_ring_allreduce", "ring_bytes_per_rank"]:
        assert callable(getattr(distlib, name))
