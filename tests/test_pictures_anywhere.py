"""Pictures that depend on the machine fit the page on every machine.

The measured roofline (chapter 3) carries the CPU's name from
``/proc/cpuinfo`` in its title and legend. A fresh clone once failed to
build because "CPU: AMD EPYC (2 logical cores available)" came out 2 px
wider than a phone's column, while "CPU: AMD EPYC 7B13 (...)" on the machine
where CI ran fitted: the legend was broken at a count of characters, and
capitals are wide. Here the same figure is drawn for names and rates no one
machine has, strictly (a picture that fits only by being drawn smaller is a
failure), and chapter 3 runs as the book build runs it, under another CPU
name on one core.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import distlib as dl  # noqa: E402
from distlib.plots import pictures  # noqa: E402
from distlib.plots import roofline as roofline_plots  # noqa: E402
from distlib.static.kernel import kernel_environment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: Model names as /proc/cpuinfo (or, where it has none, Python's platform module) gives them: the short name
#: that broke the build, Colab's, the longest with spaces, and one long word. (A name's width, not its maker,
#: decides the fit: the other names once tried here, "AMD EPYC 7B13", "AMD EPYC 9654 96-Core Processor",
#: "12th Gen Intel(R) Core(TM) i9-12900HK", "QEMU Virtual CPU version 2.5+", "aarch64" and "arm", lie between.)
CPU_NAMES = [
    "AMD EPYC",                                   # a cloud VM's bare name: the one that broke the build
    "Intel(R) Xeon(R) CPU @ 2.20GHz",             # Colab's
    "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
    "NVIDIA-Grace-CPU-Superchip-72-core-Neoverse-V2-engineering-sample",  # one long word
]
#: (logical cores, rate relative to this machine's): the shortest and longest count, a slow and a fast machine
CASES = [(1, 1e-3), (4096, 1e3)]


def _measurements(cpu: str, cores: int, scale: float):
    device = f"CPU: {cpu} ({cores} logical {'core' if cores == 1 else 'cores'} available)"
    flops = dl.Measurement(2e10 * scale, "FLOP/s", device, "numpy matmul", (0.1,), 2e9,
                           {"n": 1024, "dtype": "float64"})
    copy = dl.Measurement(8e9 * scale ** 0.5, "B/s", device, "numpy copy", (0.1,), 8e8, {})
    return flops, copy


def _measured_roofline(cpu: str, cores: int, scale: float):
    """Chapter 3's measured roofline, cell for cell."""
    flops, copy = _measurements(cpu, cores, scale)
    mine = dl.machine_roof(flops, copy, name="this machine")
    fig, ax = plt.subplots(figsize=(6.4, 5))
    roofline_plots.plot_roofline(ax, ["H100", "A100"], measured=[mine, flops])
    ax.set_title(f"Measured: {flops.device}")
    fig.tight_layout()
    return fig


@pytest.mark.parametrize("cpu", CPU_NAMES)
def test_the_measured_roofline_fits_desktop_and_phone_for_any_cpu_name(cpu):
    for cores, scale in CASES:
        fig = _measured_roofline(cpu, cores, scale)
        try:
            wide, narrow = pictures.render_pair(fig, strict=True)
        finally:
            plt.close("all")
        assert wide.width <= pictures.WIDE_MAX, (cpu, cores, scale, wide.width)
        assert narrow.width <= pictures.NARROW, (cpu, cores, scale, narrow.width)
        assert narrow.width >= pictures.NARROW - 40  # laid out for the phone, not shrunk


def test_a_wrapped_title_and_legend_keep_every_word():
    cpu = "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
    fig = _measured_roofline(cpu, 2, 1.0)
    phone = pictures.phone_copy(fig)
    phone.set_size_inches(pictures.NARROW / 96, 5)
    pictures.render_figure(phone, max_width=pictures.NARROW, strict=True)
    ax = phone.axes[0]
    said = " ".join(ax.get_legend().texts[-1].get_text().split())
    assert said == f"measured matmul: CPU: {cpu} (2 logical cores available)"
    assert " ".join(ax.get_title().split()) == f"Measured: CPU: {cpu} (2 logical cores available)"
    plt.close("all")


# ---- chapter 3 as the book build runs it, under another CPU and on one core --------

_FAKE = "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
#: Executes a notebook as the book build does (nbclient, a fresh python3 kernel, its own folder).
_RUNNER = """
import sys
from pathlib import Path
import nbformat
from nbclient import NotebookClient
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
nb = nbformat.read(src, as_version=4)
NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(src.parent)}}).execute()
nbformat.write(nb, dst)
"""


def _can_fake_cpuinfo() -> str | None:
    if sys.platform != "linux":
        return "bind-mounting /proc/cpuinfo is Linux only"
    if os.geteuid() != 0:
        return "needs root: a private mount namespace (unshare -m) to bind-mount another /proc/cpuinfo"
    if not (shutil.which("unshare") and shutil.which("taskset")):
        return "needs unshare and taskset (util-linux)"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_can_fake_cpuinfo() is not None, reason=str(_can_fake_cpuinfo()))
def test_chapter_3_builds_its_pictures_under_another_cpu_name_on_one_core(tmp_path):
    """The build's kernel environment (static pictures on, strict), another CPU, one core.

    ``/proc/cpuinfo`` is replaced in a private mount namespace, so nothing
    outside the test sees it; ``taskset -c 0`` leaves one core. Chapter 3 is
    executed with the environment ``book/_ext/offline_book.py`` gives the
    book's kernels; a figure that does not fit would be a traceback in its
    cell, which the build turns into an error.
    """
    real = Path("/proc/cpuinfo").read_text()
    fake = tmp_path / "cpuinfo"
    fake.write_text("".join(f"model name\t: {_FAKE}\n" if line.startswith("model name") else line + "\n"
                            for line in real.splitlines()) or f"model name\t: {_FAKE}\n")
    frames = tmp_path / "frames"
    out = tmp_path / "03.ipynb"
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env.update(kernel_environment(frames, "frames/", strict=True))  # as book/_ext/offline_book.py starts them
    runner = tmp_path / "run.py"
    runner.write_text(_RUNNER)
    nb_in = ROOT / "notebooks" / "03_roofline.ipynb"
    run = f"mount --bind {fake} /proc/cpuinfo && exec taskset -c 0 {sys.executable} {runner} {nb_in} {out}"
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", run],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    nb = json.loads(out.read_text())
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"]
    printed = "".join("".join(o.get("text", "")) for o in outputs if o["output_type"] == "stream")
    assert f"CPU: {_FAKE} (1 logical core available)" in printed  # the kernel saw the other CPU, one core
    shown = ["".join(o["data"]["text/html"]) for o in outputs if "text/html" in o.get("data", {})]
    shown = [h for h in shown if "distlib-picture" in h]
    assert len(shown) >= 2 and any("Xeon" in h for h in shown)  # the measured roofline among them
    assert sorted(frames.glob("*.png"))  # the pictures were written where the page finds them
