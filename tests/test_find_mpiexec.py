"""find_mpiexec picks MPICH's own launcher, never whichever MPI a machine has first.

Google Colab has Open MPI's /usr/bin/mpiexec next to its system Python and on
PATH; the library drives MPICH's Hydra with MPICH's flags, so it must find the
launcher the ``mpich`` wheel installed.
"""

import importlib.metadata as md
import os
import stat
import sys
from pathlib import Path

import pytest

from distlib.engines import find_mpiexec

try:
    WHEEL_MPIEXEC = next(Path(f.locate()).resolve() for f in md.distribution("mpich").files or []
                         if f.name == "mpiexec")
except (md.PackageNotFoundError, StopIteration):  # pragma: no cover
    WHEEL_MPIEXEC = None
needs_wheel = pytest.mark.skipif(WHEEL_MPIEXEC is None, reason="the mpich wheel is not installed (pip install mpich)")


def fake_openmpi(folder: Path) -> Path:
    """An Open MPI-style mpiexec that answers --version as Open MPI does and fails loudly if driven."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "mpiexec"
    marker = folder / "driven"
    exe.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "mpiexec (Open MPI) 4.1.2"; exit 0; fi\n'
        f'echo "$@" > "{marker}"\n'
        'echo "fake Open MPI mpiexec was driven: $*" >&2; exit 99\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe


@needs_wheel
def test_prefers_the_wheels_mpiexec_over_path_and_the_pythons_folder(tmp_path, monkeypatch):
    fake = fake_openmpi(tmp_path / "usr" / "bin")
    (tmp_path / "usr" / "bin" / "python3").symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "usr" / "bin" / "python3"))
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    found = find_mpiexec()
    assert Path(found) == WHEEL_MPIEXEC
    assert Path(found) != fake
    assert not (fake.parent / "driven").exists()


@needs_wheel
def test_without_the_wheel_it_skips_a_non_mpich_launcher_on_path(tmp_path, monkeypatch):
    def no_such_distribution(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "distribution", no_such_distribution)
    fake = fake_openmpi(tmp_path / "openmpi" / "bin")
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{WHEEL_MPIEXEC.parent}")
    assert Path(find_mpiexec()).resolve() == WHEEL_MPIEXEC
    assert not (fake.parent / "driven").exists()


@needs_wheel
def test_without_any_mpich_it_names_what_it_found_and_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(md, "distribution", lambda name: (_ for _ in ()).throw(md.PackageNotFoundError(name)))
    fake = fake_openmpi(tmp_path / "openmpi" / "bin")
    monkeypatch.setenv("PATH", str(fake.parent))
    with pytest.raises(FileNotFoundError) as err:
        find_mpiexec()
    assert str(fake) in str(err.value) and "not MPICH's" in str(err.value)
    assert "pip install mpi4py mpich" in str(err.value)


@needs_wheel
def test_points_mpi4py_at_the_same_wheels_libmpi(monkeypatch):
    """Where pip's prefix is not one mpi4py searches (Colab's /usr/local), ranks must still
    load the mpich wheel's libmpi, not another MPI's."""
    monkeypatch.delenv("MPI4PY_LIBMPI", raising=False)
    find_mpiexec()
    libmpi = Path(os.environ["MPI4PY_LIBMPI"])
    assert libmpi.name.startswith("libmpi.so") and libmpi.is_file()
    assert any(Path(f.locate()).resolve() == libmpi for f in md.distribution("mpich").files)
    monkeypatch.setenv("MPI4PY_LIBMPI", "/elsewhere/libmpi.so.12")  # a user's own choice is kept
    find_mpiexec()
    assert os.environ["MPI4PY_LIBMPI"] == "/elsewhere/libmpi.so.12"
