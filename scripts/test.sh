#!/usr/bin/env bash
# Set up and run every test: the library's unit, property and doc tests; the
# widgets headless; the book build with warnings as errors, which executes
# every chapter, and the chapters' stored outputs compared with that run
# (tests/test_stored_outputs.py, as --nbval-lax would, without a second run); the built pages in headless Chromium with the network off; real MPI
# and torch.distributed processes; the reader notebooks run in a stand-in for
# a fresh Colab runtime (.venv-colab: Python 3.12, Colab's pins, the library
# pip-installed by each notebook's set-up cell; tests/test_colab.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_colab_env.sh
bash scripts/install_chromium.sh
bash scripts/describe_machine.sh || true  # what these tests ran on, for the log
export MPLBACKEND=Agg PYTHONHASHSEED=0
.venv/bin/python -m pytest tests distlib --doctest-modules -p no:cacheprovider "$@"
