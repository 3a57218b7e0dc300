#!/usr/bin/env bash
# Set up and run every test: the library's unit, property and doc tests; the
# widgets headless; the book build with warnings as errors, which executes
# every chapter, and the chapters' stored outputs compared with that run
# (tests/test_stored_outputs.py, as --nbval-lax would, without a second run); the built pages in headless Chromium with the network off; real MPI
# and torch.distributed processes; the reader notebooks run in a stand-in for
# a fresh Colab runtime (.venv-colab: Python 3.12, Colab's pins, the library
# pip-installed by each notebook's set-up cell; tests/test_colab.py). The tests
# that read the book build run last; with four cores or more the build starts
# in the background once the tests are collected (tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
# The three set-ups are independent (two venvs, the Debian packages: Chromium, Slurm): run them
# side by side; each one's output is shown if it fails.
logs=$(mktemp -d)
bash scripts/setup_colab_env.sh >"$logs/colab.log" 2>&1 & colab=$!
bash scripts/install_system.sh >"$logs/chromium.log" 2>&1 & chromium=$!
bash scripts/setup.sh
wait "$colab" || { cat "$logs/colab.log" >&2; echo "test.sh: scripts/setup_colab_env.sh failed" >&2; exit 1; }
wait "$chromium" || { cat "$logs/chromium.log" >&2; echo "test.sh: scripts/install_system.sh failed" >&2; exit 1; }
cat "$logs/colab.log" "$logs/chromium.log"
rm -rf "$logs"
bash scripts/describe_machine.sh || true  # what these tests ran on, for the log
export MPLBACKEND=Agg PYTHONHASHSEED=0
# pytest-xdist: the tests run in several workers at once (most of the suite waits on processes, pages and
# sleeps, not on a core), with one book build for all of them, started in the background when the tests are
# collected; each module whose tests share a fixture of their own stays on one worker (tests/conftest.py).
# DISTBOOK_WORKERS sets their number (default: twice the cores, at least 2; 0 runs in this process).
cores=$(.venv/bin/python -c 'import os; print(len(os.sched_getaffinity(0)))')
workers=${DISTBOOK_WORKERS:-$(( cores * 2 > 2 ? cores * 2 : 2 ))}
parallel=()
[ "$workers" -gt 0 ] && parallel=(-n "$workers" --dist loadgroup --no-loadscope-reorder)
.venv/bin/python -m pytest tests distlib --doctest-modules -p no:cacheprovider "${parallel[@]}" "$@"
