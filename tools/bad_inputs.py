"""Print what a reader sees for each bad input: the call, and the one-line message it raises.

    .venv/bin/python tools/bad_inputs.py

Prints a Markdown table ``| call | message |`` for a reviewer. The widget rows
are the cases each widget class declares (its ``BAD_INPUTS``; the classes found
by :func:`distlib.widgets.widget_classes`, as ``tests/test_widget_inputs.py``
finds them), each constructed here and its error caught. The command-line rows (``cli_rows``)
are the bad command lines of ``tests/test_bench.py`` and
``tests/test_faults_cli.py``, each run in this process (every check comes
before any process starts), with the exit status and what stderr says.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def call_text(call) -> str:
    """A ``(class name, keywords)`` call as a reader would type it: ``RingWidget(p=1)``,
    ``ClusterWidget(mfu=float('nan'))``, ``ClusterWidget(flops_per_gpu=1e+13)``."""
    name, kwargs = call

    def text(v):
        if isinstance(v, float) and not math.isfinite(v):
            return f"float({str(v)!r})"
        if isinstance(v, float) and float(f"{v:g}") == v and len(f"{v:g}") < len(repr(v)):
            return f"{v:g}"  # 1e+13, not 10000000000000.0
        return repr(v)

    return f"{name}({', '.join(f'{k}={text(v)}' for k, v in kwargs.items())})"


def widget_rows() -> list[tuple[str, str]]:
    """``[(call as text, message)]`` for every bad call every widget declares; ``message`` is ``Error: text``.

    A call that raises nothing gets the message ``(no error)``, so that a
    missing check shows in the table rather than vanishing from it.
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the library of this checkout
    from distlib.widgets import widget_classes

    rows = []
    for name, cls in widget_classes().items():
        for _label, kwargs, _error, _states in cls.BAD_INPUTS:
            try:
                built = cls(**kwargs)
            except Exception as exc:  # what the reader would see
                message = f"{type(exc).__name__}: {exc}"
            else:
                built.close()
                message = "(no error)"
            rows.append((call_text((name, kwargs)), message))
    return rows


def _load_test(name: str):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))  # their conftest
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_process(main, argv) -> str:
    """What ``main(argv)`` prints on stderr, and its exit status: every check runs before a process starts."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    lines = [line for line in err.getvalue().strip().splitlines() if line and not line.startswith(("usage:", " "))]
    return f"exit {code}: " + (" / ".join(lines) if lines else "(nothing on stderr)")


def cli_rows() -> list[tuple[str, str]]:
    """``[(command, message)]`` for the bad command lines of ``tests/test_bench.py`` (``BAD_CLI``) and of
    ``python -m distlib.run`` (``tests/test_faults_cli.py``), each run in this process."""
    from distlib.bench import main as bench_main
    from distlib.run import main as run_main

    rows = []
    for args, _ in _load_test("test_bench").BAD_CLI:
        base = ["allreduce", "--engine", "mpi"]
        if args[0] == "broadcast":
            base, args = ["broadcast", "--engine", "mpi"], []
        if "--engine" in args:
            base = ["allreduce"]
        rows.append(("python -m distlib.bench " + " ".join(base + args), _in_process(bench_main, base + args)))
    for argv, _ in _load_test("test_faults_cli").BAD_RUN_FLAGS:
        rows.append(("python -m distlib.run " + " ".join(argv), _in_process(run_main, argv)))
    return rows


def _cell(text: str) -> str:
    """A Markdown table cell: pipes escaped, newlines (which a clear message has none of) made visible."""
    return "`" + str(text).replace("|", "\\|").replace("\n", "⏎") + "`"


def markdown_table(rows) -> str:
    lines = ["| call | message |", "| --- | --- |"]
    lines += [f"| {_cell(call)} | {_cell(message)} |" for call, message in rows]
    return "\n".join(lines)


def main() -> int:
    print(markdown_table(widget_rows() + cli_rows()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
