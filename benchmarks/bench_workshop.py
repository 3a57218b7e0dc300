"""The workshop kit's figures, side by side in one run.

    .venv/bin/python benchmarks/bench_workshop.py [--write] [--bundle]

- each chapter's "Run all" on a fresh kernel (the instructor guide's
  schedules are built from these; ``--write`` stores them in
  each chapter's metadata, ``distbook.run_all_seconds``, which the guide reads);
- the time from ``scripts/workshop.sh`` to a JupyterLab that serves its page,
  against the time a bare ``jupyter lab`` takes to do the same;
- with ``--bundle``, the size of ``dist/workshop`` and of its parts (runs
  ``scripts/bundle.sh`` with SKIP_BUILD=1 if the bundle is missing).

Prints figures; asserts nothing. Needs a built book (scripts/build_book.sh).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_all(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - t0


def wait_page(url: str, proc, limit: float = 120) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - t0
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(url)


def stop(proc):
    os.killpg(proc.pid, signal.SIGINT if proc.args[0] == "bash" else signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def time_workshop(reader: Path, book: Path) -> tuple[float, float]:
    """Seconds to a JupyterLab page: via workshop.sh, and a bare jupyter lab."""
    token = secrets.token_hex(8)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        env = dict(os.environ, PORT=str(port), BOOK_PORT=str(free_port()), TOKEN=token,
                   READER_DIR=str(reader), BOOK_DIR=str(book), WORKSHOP_DIR=f"{tmp}/ws")
        proc = subprocess.Popen(["bash", str(ROOT / "scripts" / "workshop.sh")], env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            results.append(wait_page(f"http://127.0.0.1:{port}/lab?token={token}", proc))
        finally:
            stop(proc)
        port = free_port()
        bare = [str(VENV_BIN / "jupyter-lab"), "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp}"]
        if os.geteuid() == 0:
            bare.append("--allow-root")
        proc = subprocess.Popen(bare, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            results.append(wait_page(f"http://127.0.0.1:{port}/lab?token={token}", proc))
        finally:
            stop(proc)
    return results[0], results[1]


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="store each chapter's run time in its own metadata (distbook.run_all_seconds)")
    parser.add_argument("--bundle", action="store_true", help="also measure dist/workshop")
    parser.add_argument("--skip-notebooks", action="store_true")
    parser.add_argument("--chapters", help="comma-separated notebook stems to time (default: all); with --write, "
                                           "the others keep their stored times")
    args = parser.parse_args(argv)

    if not args.skip_notebooks:
        from distlib.static.chapters import KEY, chapters as book_chapters

        only = set(args.chapters.split(",")) if args.chapters else None
        on = (f"{datetime.date.today().isoformat()}, a {os.cpu_count()}-core {platform.machine()} Linux machine, "
              f"Python {platform.python_version()}")
        print(f"{'chapter':<22} {'Run all (s)':>11}")
        total = 0.0
        for chapter in book_chapters(ROOT):
            path = ROOT / f"{chapter.file}.ipynb"
            if only is not None and chapter.stem not in only:
                total += chapter.run_all_seconds
                continue
            seconds = run_all(path)
            total += seconds
            print(f"{chapter.stem:<22} {seconds:>11.1f}")
            if args.write:  # into the chapter's own metadata, which the instructor's guide reads
                nb = json.loads(path.read_text())
                nb["metadata"][KEY].update(run_all_seconds=round(seconds, 1), run_all_on=on)
                path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
                print(f"  wrote {path.relative_to(ROOT)}'s {KEY}.run_all_seconds")
        print(f"{'all chapters':<22} {total:>11.1f}")

    reader, book = ROOT / "_build" / "reader", ROOT / "_build" / "html"
    if reader.exists() and book.exists():
        via_script, bare = time_workshop(reader, book)
        print(f"\nto a JupyterLab page: workshop.sh {via_script:.1f} s, bare jupyter lab {bare:.1f} s "
              f"(ratio {via_script / bare:.2f})")
    else:
        print("\n(no _build/reader or _build/html: build the book to time workshop.sh)")

    if args.bundle:
        out = ROOT / "dist" / "workshop"
        if not out.exists():
            subprocess.run(["bash", "scripts/bundle.sh"], cwd=ROOT, check=True, env=dict(os.environ, SKIP_BUILD="1"))
        parts = {name: du(out / name) for name in ("wheels", "book", "notebooks", "slides")}
        total = du(out)
        print(f"\nbundle {out}: {total / 1e6:.0f} MB")
        for name, size in parts.items():
            print(f"  {name:<10} {size / 1e6:>7.1f} MB  ({size / total:.0%})")


if __name__ == "__main__":
    main()
