"""Add other laptops' wheels to a workshop kit, resolved for their platform, and say which laptops it serves.

scripts/bundle.sh builds the kit's wheels on one machine, for its own
platform. A room of mixed laptops (Apple silicon, Windows, Linux on ARM)
needs each one's wheels, and pip cannot resolve for another platform: it
reads the dependency markers (``pywinpty; os_name == "nt"``, torch's CUDA
packages on Linux x86_64) for the machine it runs on, so a Windows laptop
would miss pywinpty and an Apple one would be sent CUDA libraries.

For each laptop kind and Python, this script

1. resolves the kit's requirements for that platform with uv
   (``uv pip compile --python-platform``, which evaluates the markers for
   the target), from PyPI and the kit's own wheels, under the kit's
   constraints where they apply;
2. downloads exactly the pinned packages it names, as binary wheels for that
   platform's tags (``pip download --no-deps --only-binary :all:
   --platform``), into the kit's ``wheels/``;
3. checks the kit serves that laptop: uv resolves every requirement again
   from ``wheels/`` alone, for that platform, with no index.

It prints a Markdown list for the kit's README: each laptop served, or not
and why (uv's own words, e.g. a package with no wheel for that platform).
Nothing is installed and nothing runs on the target: what it checks is that
every wheel such a laptop needs is in the folder and would be chosen there.

    python tools/room_laptops.py --wheels dist/workshop/wheels \\
        --requirements dist/workshop/requirements.txt --constraints constraints.txt \\
        --python 3.12 --laptops "macos-arm64 windows-x86_64"
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Laptop kinds: (what the README calls it, uv's --python-platform, pip's --platform tag, macOS it needs).
#: pip widens a tag to the older ones it accepts (macosx_14_0 takes 11_0 and universal2 wheels, manylinux_2_28
#: takes manylinux2014); torch 2.13's Apple wheels are built for macOS 14, so the Apple kinds mean 14 or later.
#: For a Linux kind PyPI's torch is the CUDA build: its nvidia-* wheels come too (gigabytes).
LAPTOPS = {
    "macos-arm64": ("macOS 14 or later on Apple silicon (arm64)", "aarch64-apple-darwin", "macosx_14_0_arm64", "14.0"),
    "macos-x86_64": ("macOS 14 or later on Intel (x86_64)", "x86_64-apple-darwin", "macosx_14_0_x86_64", "14.0"),
    "windows-x86_64": ("Windows on x86_64", "x86_64-pc-windows-msvc", "win_amd64", None),
    "linux-aarch64": ("Linux on ARM (aarch64, glibc 2.28 or later)", "aarch64-unknown-linux-gnu",
                      "manylinux_2_28_aarch64", None),
    "linux-x86_64": ("Linux on x86_64 (glibc 2.28 or later)", "x86_64-unknown-linux-gnu", "manylinux_2_28_x86_64",
                     None),
}
PYTHON = re.compile(r"^3\.(1[1-9])$")


def uv_binary() -> str:
    """uv, from this Python's environment (requirements.txt pins it) or PATH."""
    here = Path(sys.executable).parent / "uv"
    found = str(here) if here.exists() else shutil.which("uv")
    if not found:
        raise SystemExit("room_laptops.py: no uv here (pip install -r requirements.txt installs it)")
    return found


def _uv_env(laptop: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV"))}
    macos = LAPTOPS[laptop][3]
    if macos:
        env["MACOSX_DEPLOYMENT_TARGET"] = macos
    return env


def resolve(uv: str, requirements: Path, laptop: str, python: str, *, wheels: Path, constraints: Path | None,
            offline: bool) -> tuple[bool, str]:
    """(True, pinned requirements) or (False, uv's reason): the requirements resolved for ``laptop``'s platform."""
    cmd = [uv, "pip", "compile", "--no-config", "--quiet", "--no-header", "--no-annotate", "--python-version", python,
           "--python-platform", LAPTOPS[laptop][1], "--only-binary", ":all:", "--find-links", str(wheels),
           str(requirements)]
    if offline:
        cmd += ["--no-index", "--offline"]
    if constraints is not None:
        cmd += ["--constraint", str(constraints)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=_uv_env(laptop))
    if done.returncode == 0:
        return True, done.stdout
    reason = " ".join(line.strip() for line in done.stderr.splitlines()
                      if line.strip() and not line.startswith(("warning", "hint")))
    reason = re.sub(r"^(error: )?No solution found when resolving dependencies:?\s*", "", reason)
    return False, re.sub(r"^cause:\s*", "", reason)


def download(pins: str, laptop: str, python: str, wheels: Path, skip=("distbook-distlib",)) -> None:
    """Each ``name==version`` of ``pins`` as a binary wheel for ``laptop`` and ``python``, into ``wheels``."""
    lines = [line.split(";")[0].strip() for line in pins.splitlines()
             if "==" in line and not line.lstrip().startswith("#")]
    lines = [line for line in lines if line.split("==")[0].lower().replace("_", "-") not in skip]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    abi = "cp" + python.replace(".", "")
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                               "--platform", LAPTOPS[laptop][2], "--python-version", python, "--implementation", "cp",
                               "--abi", abi, "--abi", "abi3", "--abi", "none", "--dest", str(wheels), "-r", f.name],
                              capture_output=True, text=True, timeout=3600)
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        raise SystemExit(f"room_laptops.py: pip could not download the wheels for {laptop}, Python {python}:\n"
                         + "\n".join(l for l in done.stderr.splitlines() if not l.startswith("WARNING"))[-2000:])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheels", type=Path, required=True, help="the kit's wheels/ folder (wheels are added to it)")
    ap.add_argument("--requirements", type=Path, required=True, help="the kit's requirements.txt")
    ap.add_argument("--constraints", type=Path, help="pins to keep where a laptop needs the same package")
    ap.add_argument("--python", action="append", required=True, help="a Python the laptops run, as 3.12 (repeat)")
    ap.add_argument("--laptops", required=True, help=f"laptop kinds, separated by spaces: {', '.join(LAPTOPS)}")
    ns = ap.parse_args(argv)
    kinds = ns.laptops.split()
    bad = [k for k in kinds if k not in LAPTOPS]
    if bad or not kinds:
        ap.error(f"--laptops: {' '.join(bad) or '(none)'} not among {', '.join(LAPTOPS)}")
    for python in ns.python:
        if not PYTHON.match(python):
            ap.error(f"--python: {python!r} is not a Python from 3.11 on, written as 3.12")
    if not ns.wheels.is_dir() or not ns.requirements.is_file():
        ap.error("--wheels must be a folder and --requirements a file")
    uv = uv_binary()
    lines = []
    for laptop in kinds:
        for python in ns.python:
            name = f"Python {python} on {LAPTOPS[laptop][0]}"
            ok, pins = resolve(uv, ns.requirements, laptop, python, wheels=ns.wheels, constraints=ns.constraints,
                               offline=False)
            if not ok:
                lines.append(f"- not served: {name}: {pins}")
                continue
            download(pins, laptop, python, ns.wheels)
            ok, why = resolve(uv, ns.requirements, laptop, python, wheels=ns.wheels, constraints=None, offline=True)
            if not ok:
                raise SystemExit(f"room_laptops.py: the wheels do not serve {name} after the download: {why}")
            lines.append(f"- {name} (resolved from `wheels/` alone for that platform)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
