#!/usr/bin/env bash
# Run every path of the book that needs a CUDA GPU, and print one report.
#
#   bash scripts/gpu_check.sh            # after scripts/setup.sh, with a CUDA build of torch
#   PYTHON=/path/to/python bash scripts/gpu_check.sh
#
# Checks, in order (each one's output is kept in $OUT_DIR, default a temp dir):
#   1. gpu        torch sees CUDA; nvidia-smi's view of the GPUs
#   2. roofline   dl.measure_matmul_flops / dl.measure_memory_bandwidth on device="cuda"
#                 (chapter 3), against the accelerator table's dense BF16 peak and HBM rate
#   3. overlap    ddp_overlap.copy_compute_overlap: a pinned host-to-device copy beside
#                 matrix products on two CUDA streams (chapter 8)
#   4. nccl       chapter 7's worker: nccl_allreduce --mib 16 (NCCL with >= 2 GPUs,
#                 gloo on CUDA tensors with 1), and --try-nccl on a 1-GPU machine
#   5. bench      python -m distlib.bench all_reduce --engine nccl --ranks <GPUs> (>= 2 GPUs)
#   6. chapter7   notebooks/07_nccl.ipynb executed top to bottom (its NCCL cells take the
#                 GPU path when one is present)
#   7. model      the NCCL cluster model's prediction for this node, beside the bench
#   8. context    torch.distributed.tensor.experimental.context_parallel on this GPU (its ranks
#                 sharing it) beside the book's ring attention, forward and backward, equal to
#                 rounding (chapter 14; distlib.examples.context_parallel_torch, whose CPU half
#                 tests/test_gpu_check.py runs)
#
# Exit status: 0 all checks passed; 1 a check failed; 3 no CUDA GPU here (nothing run
# beyond the GPU probe: the report says why). Never run by scripts/test.sh.
set -u
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
OUT_DIR="${OUT_DIR:-$(mktemp -d -t gpu_check.XXXXXX)}"
mkdir -p "$OUT_DIR"
declare -a NAMES=() STATUS=() NOTES=()

record() {  # name status note
  NAMES+=("$1"); STATUS+=("$2"); NOTES+=("$3")
  printf '%-10s %-7s %s\n' "$1" "$2" "$3"
}

run_check() {  # name timeout_seconds command...
  local name=$1 limit=$2; shift 2
  local log="$OUT_DIR/$name.log"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  local rc=$?
  local took=$((SECONDS - start))
  if [ $rc -eq 0 ]; then
    record "$name" ok "${took}s; last line: $(grep -v '^\s*$' "$log" | tail -n 1 | cut -c1-140)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    record "$name" FAILED "timed out after ${limit}s (log: $log)"
  else
    record "$name" FAILED "exit status $rc after ${took}s: $(grep -v '^\s*$' "$log" | tail -n 1 | cut -c1-140) (log: $log)"
  fi
}

echo "# gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); python: $PY; logs: $OUT_DIR"

# 1. Is there a GPU at all?
probe=$("$PY" - <<'EOF' 2>&1
import sys
try:
    import torch
except ImportError as exc:
    print(f"NOGPU torch is not installed ({exc}); pip install a CUDA build of torch")
    sys.exit(0)
if not torch.cuda.is_available():
    build = "CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda} build"
    print(f"NOGPU torch {torch.__version__} ({build}) sees no CUDA device")
    sys.exit(0)
names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
print(f"GPUS {len(names)} " + "; ".join(names))
EOF
)
smi="nvidia-smi: not found"
if command -v nvidia-smi >/dev/null 2>&1; then
  smi=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 8 | paste -sd ';' -)
fi
case "$probe" in
  GPUS*)
    GPUS=$(echo "$probe" | awk '{print $2}')
    record gpu ok "${probe#GPUS } | $smi"
    ;;
  *)
    record gpu SKIPPED "no CUDA GPU: ${probe#NOGPU } | $smi"
    echo "# gpu_check: SKIPPED: this machine has no CUDA GPU that PyTorch can use, so none of the GPU paths"
    echo "# (roofline on CUDA, copy/compute overlap, NCCL worker, NCCL bench, chapter 7's NCCL cells,"
    echo "# torch's context_parallel beside the book's ring attention) can run."
    echo "# Run this script on a machine with an NVIDIA GPU and a CUDA build of torch."
    # GPU_CHECK_FORCE=1 goes on anyway (to exercise this script itself: every check then fails on CPU).
    [ "${GPU_CHECK_FORCE:-0}" = 1 ] || exit 3
    GPUS=0
    ;;
esac

# 2. Roofline measurement on CUDA (chapter 3)
run_check roofline 300 "$PY" - <<'EOF'
import distlib as dl
import torch

name = torch.cuda.get_device_name(0)
mm = dl.measure_matmul_flops(device="cuda")
bw = dl.measure_memory_bandwidth(device="cuda")
print(mm)
print(bw)
for acc in dl.accelerators():
    if acc.name.lower() in name.lower():
        print(f"table {acc.name}: dense BF16 {dl.fmt_flops(acc.bf16_flops)}, HBM {dl.fmt_rate(acc.hbm_bandwidth)}; "
              f"measured {mm.value / acc.bf16_flops:.0%} and {bw.value / acc.hbm_bandwidth:.0%} of them")
        break
else:
    print(f"{name}: not in the accelerator table; measured {mm} and {bw}")
EOF

# 3. Copy beside compute (chapter 8)
run_check overlap 300 "$PY" - <<'EOF'
from distlib.examples.ddp_overlap import copy_compute_overlap

r = copy_compute_overlap(verbose=True)
assert not r.get("skipped"), r
print(f"copy/compute overlap on {r['device']}: speedup {r['speedup']:.2f} of a possible {r['bound']:.2f}")
EOF

# 4. Chapter 7's NCCL worker
run_check nccl 300 "$PY" -m distlib.examples.nccl_allreduce --mib 16
if [ "${GPUS:-0}" -eq 1 ]; then
  run_check nccl_dup 120 "$PY" -m distlib.examples.nccl_allreduce --mib 1 --try-nccl
fi

# 5. The NCCL bench (needs one GPU per rank)
if [ "${GPUS:-0}" -ge 2 ]; then
  run_check bench 600 "$PY" -m distlib.bench all_reduce --engine nccl --ranks "$GPUS" -b 8 -e 1G -f 4 \
    --algorithms ring,auto -n 10 -w 3 --quiet
else
  record bench SKIPPED "NCCL needs one GPU per rank and at least 2 ranks; this machine has ${GPUS:-0} GPU"
fi

# 6. Chapter 7 top to bottom
run_check chapter7 900 "$PY" - <<'EOF'
import nbformat
from nbclient import NotebookClient

nb = nbformat.read("notebooks/07_nccl.ipynb", as_version=4)
NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": "notebooks"}}).execute()
for cell in nb.cells:
    for out in cell.get("outputs", []):
        text = out.get("text", "")
        if "CUDA GPUs visible" in text or "engine that ran" in text:
            print(text.strip().splitlines()[-1])
print("chapter 7 ran to the end")
EOF

# 7. What the cluster model predicts for this node (compare with the bench's busbw above)
run_check model 60 "$PY" - <<EOF
import distlib as dl
import torch

name = torch.cuda.get_device_name(0)
acc = next((a.name for a in dl.accelerators() if a.name.lower() in name.lower()), None)
if acc is None or ${GPUS:-0} < 2:
    print(f"no prediction: {name} is not in the table or fewer than 2 GPUs")
else:
    c = dl.gpu_cluster(1, gpus_per_node=${GPUS:-0}, accelerator=acc)
    for n in (2**20, 2**26, 2**30):
        p = dl.predict("allreduce", n, c)
        print(f"model, {c.describe()}: {n} B -> busbw {p.busbw / 1e9:.1f} GB/s ({p.algorithm}/{p.protocol})")
EOF

# 8. Torch's context parallelism beside the book's ring attention (chapter 14)
run_check context 600 "$PY" -m distlib.examples.context_parallel_torch --device cuda --cp 2

echo
echo "# gpu_check report"
fail=0
for i in "${!NAMES[@]}"; do
  printf '%-10s %-7s %s\n' "${NAMES[$i]}" "${STATUS[$i]}" "${NOTES[$i]}"
  [ "${STATUS[$i]}" = FAILED ] && fail=1
done
echo "# full logs in $OUT_DIR"
exit $fail
