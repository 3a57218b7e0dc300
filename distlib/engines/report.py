"""Typed results from ranks: one marked line on stdout, read back as the dataclass it was.

A rank (a worker module of :mod:`distlib.examples`, the bench) hands its
result to the process that launched it by calling :func:`emit` with a
dataclass. That prints one line::

    @@distlib-report {"type": "P2PTiming", "fields": {"latency": 1.2e-06, ...}}

The launching side reads it back from the launcher's
:class:`~distlib.engines.launch.RunResult`, typed::

    result = de.run_mpi("distlib.examples.mpi_p2p", 2)
    timing = report.read(result, P2PTiming)          # rank 0's, a P2PTiming
    every = report.read_all(result, RankCounters)    # one per rank, in rank order

:func:`parse` does the same for the stdout of one process (a command run
with :mod:`subprocess`), and :func:`strip` removes report lines from text
shown to a reader. A missing or malformed line raises :class:`ReportError`
naming the rank and the type.

What a report may hold: dataclasses whose fields are ``int``, ``float``,
``str``, ``bool``, ``None``, lists, tuples and ``dict`` s (string keys) of
those, nested dataclasses, and lists or dicts of dataclasses; the decoder
rebuilds each from the field's annotation (``list[Bucket] | None``, say).
NumPy scalars and arrays are written as numbers and lists. A dataclass
with its own ``to_dict()`` and ``from_dict()`` (such as
:class:`distlib.bench.BenchResult`) is written and read with those. Floats
survive exactly (JSON keeps every digit of a Python float; NaN and
infinities included).

Per-rank figures fit the same way: every rank emits a report of its own (a
dataclass with, say, a ``bytes_sent: int`` field) and :func:`read_all`
returns them in rank order.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import types
import typing

__all__ = ["MARKER", "ReportError", "emit", "encode", "parse", "read", "read_all", "strip"]

MARKER = "@@distlib-report "
"""Every report line starts with this."""

_SHOWN = re.compile(r"(\[\d+\] )?" + re.escape(MARKER))  # a report line, also as RunResult.text() shows it


class ReportError(ValueError):
    """A rank's report is missing or malformed; ``.source`` names the rank (``"rank 0"``), ``.type`` the dataclass."""

    def __init__(self, message: str, *, source: str, type_name: str):
        super().__init__(message)
        self.source = source
        self.type = type_name


class _Bad(Exception):
    """A value that does not fit its field (``path``: where in the report)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}" if path else message)


# ----------------------------------------------------------------------------
# Writing (the rank)
# ----------------------------------------------------------------------------


def _plain(value, path: str):
    """``value`` as JSON-ready Python: dicts, lists, numbers, strings, booleans, None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if callable(getattr(value, "to_dict", None)) and callable(getattr(type(value), "from_dict", None)):
            return _plain(value.to_dict(), path)
        return {f.name: _plain(getattr(value, f.name), f"{path}.{f.name}" if path else f.name)
                for f in dataclasses.fields(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path or 'report'}: dict keys must be strings, got {key!r}")
            out[key] = _plain(item, f"{path}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if hasattr(value, "tolist") and callable(value.tolist):  # NumPy scalars and arrays
        return _plain(value.tolist(), path)
    raise TypeError(f"{path or 'report'}: cannot put a {type(value).__name__} in a report "
                    "(numbers, strings, booleans, None, lists, dicts and dataclasses only)")


def encode(obj) -> str:
    """The report line of a dataclass instance (no newline).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Pair:
    ...     a: int
    ...     b: float
    >>> encode(Pair(1, 0.5))
    '@@distlib-report {"type": "Pair", "fields": {"a": 1, "b": 0.5}}'
    """
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError(f"a report is a dataclass instance, got {type(obj).__name__}")
    body = {"type": type(obj).__name__, "fields": _plain(obj, "")}
    return MARKER + json.dumps(body, separators=(", ", ": "))


def emit(obj, *, file=None) -> None:
    """Print ``obj`` (a dataclass instance) as one report line on stdout (or ``file``), flushed at once."""
    print(encode(obj), file=sys.stdout if file is None else file, flush=True)


# ----------------------------------------------------------------------------
# Reading (the launcher's side)
# ----------------------------------------------------------------------------


def _build(value, hint, path: str):
    """``value`` (decoded JSON) as the type ``hint`` says."""
    if hint is typing.Any or hint is object:
        return value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _build_dataclass(value, hint, path)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arm in (a for a in args if a is not type(None)):
            try:
                return _build(value, arm, path)
            except _Bad as exc:
                errors.append(str(exc))
        raise _Bad("", "; ".join(errors) or f"{path}: None is not allowed")
    if hint is type(None):
        if value is not None:
            raise _Bad(path, f"expected null, got {value!r}")
        return None
    container = origin or hint
    if container in (list, tuple):
        if not isinstance(value, list):
            raise _Bad(path, f"expected a list, got {type(value).__name__}")
        if container is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise _Bad(path, f"expected {len(args)} items, got {len(value)}")
            return tuple(_build(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
        item = args[0] if args else typing.Any
        items = [_build(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if container is tuple else items
    if container is dict:
        if not isinstance(value, dict):
            raise _Bad(path, f"expected an object, got {type(value).__name__}")
        item = args[1] if len(args) == 2 else typing.Any
        return {k: _build(v, item, f"{path}[{k!r}]") for k, v in value.items()}
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Bad(path, f"expected a number, got {value!r}")
        return float(value)
    if hint in (int, str, bool):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise _Bad(path, f"expected {hint.__name__}, got {value!r}")
        return value
    return value  # an annotation the decoder does not know: the JSON value as it is


def _build_dataclass(value, cls, path: str):
    if not isinstance(value, dict):
        raise _Bad(path, f"expected the fields of {cls.__name__}, got {type(value).__name__}")
    if callable(getattr(cls, "from_dict", None)) and callable(getattr(cls, "to_dict", None)):
        try:
            return cls.from_dict(value)
        except (KeyError, TypeError, ValueError) as exc:
            raise _Bad(path, f"{cls.__name__}.from_dict: {type(exc).__name__}: {exc}") from None
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise _Bad(path, f"{cls.__name__} has no field(s) {', '.join(unknown)}")
    missing = [n for n, f in fields.items() if n not in value and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise _Bad(path, f"{cls.__name__} lacks {', '.join(missing)}")
    kwargs = {n: _build(v, hints.get(n, typing.Any), f"{path}.{n}" if path else n) for n, v in value.items()}
    return cls(**kwargs)


def _tail(text: str, n: int = 5) -> str:
    lines = [line for line in text.strip().splitlines() if not line.startswith(MARKER)]
    return "\n".join(lines[-n:]) if lines else "(nothing)"


def parse(text: str, cls, *, source: str = "the process"):
    """The ``cls`` report in ``text`` (one process's stdout), as a ``cls`` instance.

    The last report line of that type counts; report lines of other types
    are skipped. ``source`` names the process in errors (``"rank 0"``).

    Raises
    ------
    ReportError
        No report of that type in ``text``, or one that is not valid JSON
        or does not fit ``cls``'s fields.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Pair:
    ...     a: int
    ...     b: list[float]
    >>> parse("hello\\n" + encode(Pair(1, [0.5, 2.0])) + "\\nbye\\n", Pair)
    Pair(a=1, b=[0.5, 2.0])
    """
    if not (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
        raise TypeError(f"cls must be a dataclass (the type to read), got {cls!r}")
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (a process's stdout), got {type(text).__name__}")
    name = cls.__name__
    found, others = None, []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith(MARKER):
            continue
        try:
            body = json.loads(line[len(MARKER):])
            kind, fields = body["type"], body["fields"]
        except (ValueError, TypeError, KeyError):
            raise ReportError(f"{source} printed a malformed report line (line {number}, not the JSON of a report, "
                              f"while reading its {name} report): {line[:200]!r}", source=source,
                              type_name=name) from None  # fmt: skip
        if kind == name:
            found = fields
        elif kind not in others:
            others.append(kind)
    if found is None:
        also = f" (only reports of type {', '.join(others)})" if others else ""
        raise ReportError(f"{source} printed no {name} report (a line starting {MARKER.strip()!r}){also}; "
                          f"its output ended with:\n{_tail(text)}", source=source, type_name=name)
    try:
        return _build_dataclass(found, cls, "")
    except _Bad as exc:
        raise ReportError(f"{source}'s {name} report is malformed: {exc}", source=source, type_name=name) from None


def _stdout(result) -> list:
    out = getattr(result, "stdout", None)
    if not isinstance(out, list):
        raise TypeError(f"result must be a launcher's RunResult (run_mpi, run_torch, ...), got {type(result).__name__}")
    return out


def read(result, cls, *, rank: int = 0):
    """Rank ``rank``'s ``cls`` report from a launcher's :class:`~distlib.engines.launch.RunResult`, typed.

    Raises
    ------
    ReportError
        That rank printed no such report, or a malformed one (the message names the rank and the type).
    ValueError
        ``rank`` is not a rank of the run.
    """
    out = _stdout(result)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < len(out):
        raise ValueError(f"rank must be an integer from 0 to {len(out) - 1} (the run's ranks), got {rank!r}")
    return parse(out[rank], cls, source=f"rank {rank}")


def read_all(result, cls) -> list:
    """Every rank's ``cls`` report, in rank order (a :class:`ReportError` names the first rank without one)."""
    return [parse(text, cls, source=f"rank {r}") for r, text in enumerate(_stdout(result))]


def strip(text: str) -> str:
    """``text`` without its report lines (also as ``RunResult.text()`` shows them, ``[r]`` first): for a reader.

    Examples
    --------
    >>> strip("[0] hello\\n[0] " + MARKER + '{"type": "X", "fields": {}}\\n[0] bye\\n')
    '[0] hello\\n[0] bye\\n'
    """
    return "".join(line for line in str(text).splitlines(keepends=True) if not _SHOWN.match(line))
