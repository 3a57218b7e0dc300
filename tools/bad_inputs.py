"""Print what a reader sees for each bad input: the call, and the one-line message it raises.

    .venv/bin/python tools/bad_inputs.py

Prints a Markdown table ``| call | message |`` for a reviewer. The widget rows
are the cases of ``tests/test_widget_inputs.py`` (``BAD_WIDGET_INPUTS``), each
constructed here and its error caught. Rows for the command-line tools come
from a function ``cli_rows()`` of this module once it exists (same shape:
``[(call as text, message)]``); ``main()`` prints them after the widgets'.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _widget_cases():
    """The test module that holds ``BAD_WIDGET_INPUTS`` (tests/ is not a package: loaded by path)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the library of this checkout
    path = ROOT / "tests" / "test_widget_inputs.py"
    spec = importlib.util.spec_from_file_location("test_widget_inputs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def widget_rows() -> list[tuple[str, str]]:
    """``[(call as text, message)]`` for every bad widget call; ``message`` is ``Error: text``.

    A call that raises nothing gets the message ``(no error)``, so that a
    missing check shows in the table rather than vanishing from it.
    """
    cases = _widget_cases()
    rows = []
    for case in cases.BAD_WIDGET_INPUTS:
        try:
            built = cases.construct(case.call)
        except Exception as exc:  # what the reader would see
            message = f"{type(exc).__name__}: {exc}"
        else:
            built.close()
            message = "(no error)"
        rows.append((cases.call_text(case.call), message))
    return rows


def _cell(text: str) -> str:
    """A Markdown table cell: pipes escaped, newlines (which a clear message has none of) made visible."""
    return "`" + str(text).replace("|", "\\|").replace("\n", "⏎") + "`"


def markdown_table(rows) -> str:
    lines = ["| call | message |", "| --- | --- |"]
    lines += [f"| {_cell(call)} | {_cell(message)} |" for call, message in rows]
    return "\n".join(lines)


def main() -> int:
    rows = widget_rows()
    # Command-line rows: another tool adds ``cli_rows()`` to this module; print them when it exists.
    cli_rows = globals().get("cli_rows")
    if callable(cli_rows):
        rows = rows + list(cli_rows())
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
