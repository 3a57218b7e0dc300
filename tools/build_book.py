"""``jupyter-book build``, with Sphinx reading several chapters at once.

Every chapter's notebook is executed while Sphinx reads it, and one after another that took most of the book
build: about 8 minutes alone on CI's 2 cores and 23 beside the tests, cells such as chapter 9's waiting a minute
for Slurm's time limit while a core idled. Sphinx can read in parallel (each process reads a chunk of documents, executing their notebooks,
and the environments are merged after); Jupyter Book 1.x's command line only lacks the ``-j`` to ask for it.
This runs its command line with ``jobs`` set (``book/_ext/offline_book.py`` orders the documents so that each
chunk holds a share of the chapters).

    python tools/build_book.py . -W -n --keep-going      # the arguments of ``jupyter-book build``

``DISTBOOK_BUILD_JOBS``: the processes (default: one a core, at most 4; 1 reads one chapter at a time, as
``jupyter-book build``, and prints each chapter's log as it goes).
"""

from __future__ import annotations

import functools
import os
import sys

#: the most processes by default: one a core, at most this many (each chapter's cells must end within 180 s, and
#: chapters that share a core each take longer: four on one core would put chapter 9's Slurm cells at risk)
DEFAULT_JOBS = 4


def default_jobs() -> int:
    return max(1, min(DEFAULT_JOBS, len(os.sched_getaffinity(0))))


def jobs_from_env(environ=os.environ) -> int:
    """``DISTBOOK_BUILD_JOBS`` as a count of processes, 1 to 32; a clear error otherwise."""
    raw = environ.get("DISTBOOK_BUILD_JOBS", str(default_jobs())).strip()
    try:
        jobs = int(raw)
    except ValueError:
        raise SystemExit(f"build_book.py: DISTBOOK_BUILD_JOBS must be a whole number from 1 to 32, not {raw!r}")
    if not 1 <= jobs <= 32:
        raise SystemExit(f"build_book.py: DISTBOOK_BUILD_JOBS must be from 1 to 32, not {jobs}")
    return jobs


def _build_saying_why(build_sphinx, jobs, *args, **kwargs):
    """Jupyter Book's build_sphinx with ``jobs``; a chapter that failed in a reading process is named by the
    parent only ("ExecutionError: notebooks/09_mini_cluster.ipynb"), so print that process's own traceback, which
    holds the cell and its error, as a serial build's log does."""
    result = build_sphinx(*args, jobs=jobs, **kwargs)
    if isinstance(result, Exception) and getattr(result, "traceback", None):
        print("\nThe process that read the failing chapter said:\n" + str(result.traceback), file=sys.stderr)
    return result


def main(argv: list[str]) -> None:
    from jupyter_book import sphinx as jb_sphinx
    from jupyter_book.cli import main as jb_main

    # the build command imports build_sphinx from its module when it runs: replace it there
    jb_sphinx.build_sphinx = functools.partial(_build_saying_why, jb_sphinx.build_sphinx, jobs_from_env())
    jb_main.main(["build", *argv], prog_name="jupyter-book")


if __name__ == "__main__":
    main(sys.argv[1:])
