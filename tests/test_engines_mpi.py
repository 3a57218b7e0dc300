"""The book's collectives and the chapter's worker programs on real MPI processes.

One ``mpiexec`` launch per rank count runs every algorithm at many sizes
(distlib.engines.selftest); each worker program in distlib.examples runs
once. Every launch is bounded by a timeout.
"""

import json
import os

import pytest

from distlib.engines import report, run_mpi, stray_processes
from distlib.examples.mpi_train import TrainReport
from conftest import NO_MPI, have_mpi

pytestmark = pytest.mark.engines




if not have_mpi():  # pragma: no cover
    pytest.skip(NO_MPI, allow_module_level=True)


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8])
def test_book_collectives_match_mpich_builtins(p):
    # Sizes 0, 1, 2, p-1, p, p+1, 2p+3, 13, 1000, 65537 (float64 and int32); every
    # algorithm compared with MPI_Allreduce / Reduce_scatter / Allgatherv bit for bit.
    # 65537 float64 elements (512 KiB) are far past MPICH's eager limit, so the
    # large messages really wait for their receiver (the rendezvous protocol).
    sizes = "0,1,2,{},{},{},{},13,1000,65537".format(p - 1, p, p + 1, 2 * p + 3)
    dtypes = "float64,int32" if p <= 3 else "float64"  # 2 cores: keep the 8-rank run short
    args = ["--engine", "mpi", "--sizes", sizes, "--dtypes", dtypes]
    result = run_mpi("distlib.engines.selftest", p, args=args, timeout=90)
    summary = json.loads(result.lines(0)[-1])
    assert summary["p"] == p and summary["engine"] == "mpi"
    assert summary["failures"] == []
    assert summary["checks"] > 50 * p
    assert stray_processes(result.run_id) == []


def test_hello_spmd():
    result = run_mpi("distlib.examples.mpi_hello", 3, timeout=60)
    for r in range(3):
        assert result.lines(r)[0].startswith(f"hello from rank {r} of 3")
    assert "== N(N-1)/2: True" in result.stdout[0]
    assert str(result).splitlines()[0].startswith("[0] hello from rank 0")


def test_all_mpi_collectives_run_and_check():
    result = run_mpi("distlib.examples.mpi_collectives", 4, timeout=60)
    out = result.stdout[0]
    for name in ("Bcast", "Reduce", "Allreduce", "Allgather", "Scatter", "Reduce_scatter", "Alltoall"):
        assert f"rank 3: {name}" in out
    assert "40 results checked, 0 wrong" in out


def test_one_sided_put_get_accumulate():
    result = run_mpi("distlib.examples.mpi_rma", 3, timeout=60)
    assert "Accumulate of r + 1 over all ranks: 6 (expected 6)" in result.stdout[0]
    assert "one-sided results correct on every rank: True" in result.stdout[0]


def test_point_to_point_blocking_and_nonblocking():
    result = run_mpi("distlib.examples.mpi_p2p", 2, args=["--mbytes", "2", "--repeats", "3"], timeout=90)
    out = result.stdout[0]
    # Semantics, not speed: Ssend waits for the late receiver, a small Send does not.
    ssend = float(out.split("Ssend 8 B returned after")[1].split("ms")[0])
    send = float(out.split(" Send 8 B returned after")[1].split("ms")[0])
    assert ssend >= 150 and send < 150
    assert "Isend, compute, Wait" in out and "Isend/Irecv, compute, Waitall" in out
    assert "received buffers match what was sent: True" in out


def test_data_parallel_training_keeps_replicas_identical():
    result = run_mpi("distlib.examples.mpi_train", 3, args=["--steps", "60"], timeout=90)
    out = report.strip(result.stdout[0])  # what a reader sees: the report line is for the launcher
    assert "parameters identical on all ranks: True" in out
    assert "loss decreased" in out and out.rstrip().endswith("True")
    first = float(out.split("step    0  loss ")[1].split()[0])
    last = float(out.split("loss decreased: ")[1].split(" -> ")[1].split(":")[0])
    assert last < 0.8 * first
    typed = report.read(result, TrainReport)  # the same run, as rank 0 reported it
    assert len(set(typed.hashes)) == 1 and len(typed.hashes) == 3
    assert typed.losses[-1] < 0.8 * typed.losses[0]


def test_run_mpi_prefixes_lines_and_keeps_rank_order(tmp_path):
    script = tmp_path / "order.py"
    script.write_text(
        "import time\nfrom mpi4py import MPI\nr = MPI.COMM_WORLD.rank\ntime.sleep(0.05 * (3 - r))\n"
        "print('line a', r)\nprint('line b', r)\n"
    )
    result = run_mpi(str(script), 3, timeout=60)
    assert str(result).splitlines() == [f"[{r}] line {x} {r}" for r in range(3) for x in "ab"]


def test_run_mpi_checks_arguments():
    with pytest.raises(ValueError, match="n must be"):
        run_mpi("distlib.examples.mpi_hello", 0)
    with pytest.raises(FileNotFoundError):
        run_mpi("no_such_script.py", 2)


def test_ranks_beyond_the_cores_yield_while_they_wait(tmp_path):
    """More ranks than cores: MPICH's heavy yield (a waiting rank sleeps instead of spinning on the core its peer
    needs); as many as the cores: the ranks spin, for the lowest latency. A reader's setting is kept."""
    script = tmp_path / "yield_env.py"
    script.write_text("import os\nprint('YIELD=' + os.environ.get('MPIR_CVAR_ENABLE_HEAVY_YIELD', 'unset'))\n")
    cores = len(os.sched_getaffinity(0))
    beyond = run_mpi(str(script), cores + 1, timeout=60)
    assert all(beyond.lines(r)[0] == "YIELD=1" for r in range(cores + 1)), beyond.stdout
    within = run_mpi(str(script), min(cores, 2), timeout=60)
    assert within.lines(0)[0] == "YIELD=unset", within.stdout
    kept = run_mpi(str(script), cores + 1, timeout=60, env={"MPIR_CVAR_ENABLE_HEAVY_YIELD": "0"})
    assert kept.lines(0)[0] == "YIELD=0", kept.stdout


_AUTO_AND_PIECES = '''
import json
import numpy as np
from distlib.engines import Calibration, allreduce, choose_algorithm, reduce_scatter
from distlib.engines.mpi import world
from distlib.engines.tuner import CANDIDATES, set_calibration

comm = world()
p, r = comm.size, comm.rank
# auto with a fit in which MPICH's own all-reduce is fastest up to a few MiB (rank 0's numbers, broadcast):
alpha = dict.fromkeys(CANDIDATES, 5e-6) | {"builtin": 1e-6}
bandwidth = dict.fromkeys(CANDIDATES, 1e9) | {"ring": 1e10}
cal = comm.bcast_object(Calibration("mpi", p, "here", [], {}, alpha, bandwidth).to_dict() if r == 0 else None)
set_calibration(comm, Calibration.from_dict(cal))
calls = []
real = comm.allreduce
comm.allreduce = lambda buf, op="sum": (calls.append(len(buf)), real(buf, op=op))[1]
small = allreduce(comm, np.arange(5.0) + r, algorithm="auto")
choices = [choose_algorithm(comm, n) for n in (8, 2**26)]
# the ring in pieces (MPIComm's large-buffer path, here 3 elements a piece) against whole chunks, bit for bit:
rng = np.random.default_rng(r)
outs = {}
for n in sorted({1, p - 1, p + 1, 7 * p + 2, 1000, 65537}):
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    for segment in (None, 12):
        comm.ring_segment_bytes = segment
        got = allreduce(comm, x.copy(), algorithm="ring")
        rs = reduce_scatter(comm, x.copy(), algorithm="ring")
        outs.setdefault(n, []).append((got.tobytes(), rs.tobytes()))
same = all(a == b for a, b in outs.values())
everyone = comm.allgather_object((choices, calls, small.tolist(), same))
if r == 0:
    print(json.dumps(everyone))
'''


@pytest.mark.parametrize("p", [2, 3])
def test_auto_runs_mpich_builtin_where_fastest_and_pieces_change_no_bit(tmp_path, p):
    script = tmp_path / "auto_and_pieces.py"
    script.write_text(_AUTO_AND_PIECES)
    result = run_mpi(str(script), p, timeout=90)
    everyone = json.loads(result.lines(0)[-1])
    total = [p * i + p * (p - 1) / 2 for i in range(5)]
    for choices, calls, small, same in everyone:
        assert choices == ["builtin", "ring"]  # every rank the same choice
        assert calls == [5]  # auto ran MPI_Allreduce for the 5-element buffer
        assert small == total
        assert same  # segmented and whole-chunk ring agree bit for bit
    assert stray_processes(result.run_id) == []
