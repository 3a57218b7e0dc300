#!/usr/bin/env bash
# Print what a test run runs on, so a CI log says it: the date, the kernel and
# processor, cores, memory, the Pythons of .venv and .venv-colab, pip, node,
# npm, Chromium and the commit. Called by .ci/run and scripts/test.sh. Every
# probe is allowed to fail (it then prints "?"); this script always exits 0.
case $0 in */*) cd "${0%/*}/.." 2>/dev/null || true ;; *) cd .. 2>/dev/null || true ;; esac
probe() {  # probe LABEL COMMAND...: one line, "LABEL: output" or "LABEL: ?"
  local label=$1 out
  shift
  out=$("$@" 2>/dev/null) || true
  out=${out//$'\n'/; }
  printf '%-12s %s\n' "$label:" "${out:-?}"
}
cpu_model() {
  if [ -r /proc/cpuinfo ]; then
    sed -n '/^model name/{s/^[^:]*:[[:space:]]*//p;q;}' /proc/cpuinfo
  else
    sysctl -n machdep.cpu.brand_string
  fi
}
memory() {
  if [ -r /proc/meminfo ]; then
    awk '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2} END {if (t) printf "%.1f GiB total, %.1f GiB available\n", t/1048576, a/1048576}' /proc/meminfo
  else
    sysctl -n hw.memsize | awk '{printf "%.1f GiB total\n", $1/1073741824}'
  fi
}
cores() { nproc 2>/dev/null || getconf _NPROCESSORS_ONLN; }
venv_python() { [ -x "$1/bin/python" ] && "$1/bin/python" -c 'import sys, platform; print(platform.python_version(), sys.executable)'; }
venv_pip() { [ -x "$1/bin/python" ] && "$1/bin/python" -m pip --version; }
chromium_version() {
  local c
  for c in chromium chromium-browser google-chrome; do
    command -v "$c" >/dev/null 2>&1 && { "$c" --version; return; }
  done
}
commit() {
  git rev-parse HEAD && { git diff --quiet HEAD 2>/dev/null || echo "(work tree has uncommitted changes)"; }
}
{
  echo "=== machine ==="
  probe date date -u '+%Y-%m-%d %H:%M:%S UTC'
  probe uname uname -srm
  probe cpu cpu_model
  probe cores cores
  probe memory memory
  probe .venv venv_python .venv
  probe pip venv_pip .venv
  probe .venv-colab venv_python .venv-colab
  probe python3 python3 --version
  probe node node --version
  probe npm npm --version
  probe chromium chromium_version
  probe commit commit
  echo "==============="
} || true
exit 0
