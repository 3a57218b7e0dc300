#!/usr/bin/env bash
# Run the book for a workshop room, with no network:
# - JupyterLab on 127.0.0.1:$PORT (default 8888) over a working copy of the
#   reader notebooks, so participants' edits never touch the book's files;
# - the built book on 127.0.0.1:$BOOK_PORT (default PORT+1), whose chapter
#   pages can run their code on that JupyterLab ("Live code" button).
# Prints both URLs (with the token) and stops both servers on Ctrl-C.
#
# Needs: .venv (bash scripts/setup.sh) and a built book (bash
# scripts/build_book.sh), or the same laid out by scripts/bundle.sh. Settings,
# all optional:
#   PORT, BOOK_PORT       ports on 127.0.0.1
#   WORKSHOP_DIR          the working copy (default: workshop/); kept between
#                         runs, so edits survive a restart; FRESH=1 recopies
#   KEEP_LAYOUT=1         reopen JupyterLab's last layout (default: a clean one,
#                         so no kernel starts for notebooks left open)
# Kernels left with no tab attached (a closed Live code page, a closed
# notebook tab) are shut down after 30 idle minutes.
#   READER_DIR, BOOK_DIR  the reader notebooks and the built book
#   VENV                  the environment with JupyterLab (default: .venv)
#   TOKEN                 the JupyterLab token (default: a new random one)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -d "$here/wheels" ]; then
  # the offline bundle (scripts/bundle.sh) keeps this script at its top level
  cd "$here"; reader_default=notebooks; book_default=book
else
  cd "$here/.."; reader_default=_build/reader; book_default=_build/html
fi

PORT=${PORT:-8888}
BOOK_PORT=${BOOK_PORT:-$((PORT + 1))}
VENV=${VENV:-.venv}
READER_DIR=${READER_DIR:-$reader_default}
BOOK_DIR=${BOOK_DIR:-$book_default}
WORKSHOP_DIR=${WORKSHOP_DIR:-workshop}

fail() { echo "workshop.sh: $*" >&2; exit 1; }
for name in PORT BOOK_PORT; do
  value=${!name}
  [[ "$value" =~ ^[0-9]+$ ]] && [ "$value" -ge 1024 ] && [ "$value" -le 65535 ] ||
    fail "$name must be a port number from 1024 to 65535, got '$value'"
done
[ "$PORT" != "$BOOK_PORT" ] || fail "PORT and BOOK_PORT must differ (both are $PORT)"
[ -x "$VENV/bin/jupyter-lab" ] ||
  fail "no JupyterLab in $VENV: run 'bash scripts/setup.sh' first (or set VENV)"
ls "$READER_DIR"/*.ipynb >/dev/null 2>&1 ||
  fail "no reader notebooks in $READER_DIR: build the book first with 'bash scripts/build_book.sh' (or set READER_DIR)"
[ -f "$BOOK_DIR/index.html" ] ||
  fail "no built book in $BOOK_DIR: run 'bash scripts/build_book.sh' first (or set BOOK_DIR)"
py="$VENV/bin/python"
for port in "$PORT" "$BOOK_PORT"; do
  "$py" - "$port" <<'EOF' || fail "port $port on 127.0.0.1 is taken: choose another with PORT=... (and BOOK_PORT=...)"
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: TIME_WAIT is no conflict
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
EOF
done

# The working copy: the reader notebooks, copied once; later runs keep edits.
mkdir -p "$WORKSHOP_DIR"
copied=0 kept=0
for nb in "$READER_DIR"/*.ipynb; do
  dest="$WORKSHOP_DIR/$(basename "$nb")"
  if [ ! -e "$dest" ] || [ "${FRESH:-0}" = 1 ]; then cp "$nb" "$dest"; copied=$((copied + 1)); else kept=$((kept + 1)); fi
done
if [ "$kept" = 0 ]; then
  echo "working copy: $(cd "$WORKSHOP_DIR" && pwd) ($copied notebook(s) copied)"
else
  echo "working copy: $(cd "$WORKSHOP_DIR" && pwd) ($kept notebook(s) kept with their edits, $copied copied; FRESH=1 recopies all)"
fi
# JupyterLab reopens the last layout, and starts a kernel for every notebook
# left open in it: each start begins with a clean layout (KEEP_LAYOUT=1 keeps it).
workspaces="$WORKSHOP_DIR/.jupyter/lab/workspaces"
[ "${KEEP_LAYOUT:-0}" = 1 ] || rm -rf "$workspaces"

TOKEN=${TOKEN:-$("$py" -c 'import secrets; print(secrets.token_hex(24))')}
root_flag=()
[ "$(id -u)" = 0 ] && root_flag=(--allow-root)  # JupyterLab refuses root without it

pids=()
children() {
  if command -v pgrep >/dev/null; then pgrep -P "$1"; else cat /proc/"$1"/task/*/children 2>/dev/null; fi
}
tree() {  # a process and all its descendants (kernels, language-server probes)
  local kid
  for kid in $(children "$1"); do tree "$kid"; done
  echo "$1"
}
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # Each server gets 10 s to shut down cleanly (JupyterLab stops its kernels);
  # one that has not gone by then is killed with everything it started, so a
  # Ctrl-C always ends the workshop (once, a JupyterLab caught by Ctrl-C while
  # it was still starting up never acted on the TERM).
  local left=50 alive
  while [ "$left" -gt 0 ]; do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2; left=$((left - 1))
  done
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "workshop.sh: process $pid did not stop within 10 s of a TERM; killing it and its children" >&2
      kill -KILL $(tree "$pid") 2>/dev/null || true
    fi
  done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "workshop.sh: stopped"
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# No network in the room: JupyterLab must not look for updates or news, nor
# ask whether it may (its own config folder, inside the working copy).
mkdir -p "$WORKSHOP_DIR/.jupyter/labconfig"
cat > "$WORKSHOP_DIR/.jupyter/labconfig/page_config.json" <<'EOF'
{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}
EOF
# The Extension Manager would search PyPI, which the room cannot reach, behind
# a "fetch data from web services?" prompt. The read-only manager lists what
# is installed (the widgets' front end among it) and fetches nothing, so the
# prompt is answered for the room.
mkdir -p "$WORKSHOP_DIR/.jupyter/lab/settings"
cat > "$WORKSHOP_DIR/.jupyter/lab/settings/overrides.json" <<'EOF'
{"@jupyterlab/extensionmanager-extension:plugin": {"disclaimed": true}}
EOF
# The token travels in the environment, not on the command line: any local
# user can read a process's arguments from /proc/<pid>/cmdline, and with the
# token run code as the instructor.
JUPYTER_TOKEN="$TOKEN" JUPYTER_CONFIG_DIR="$WORKSHOP_DIR/.jupyter" "$VENV/bin/jupyter-lab" --no-browser "${root_flag[@]}" \
  --ServerApp.ip=127.0.0.1 --ServerApp.port="$PORT" --ServerApp.port_retries=0 \
  --ServerApp.root_dir="$WORKSHOP_DIR" \
  --LabApp.extension_manager=readonly --LabApp.app_settings_dir="$WORKSHOP_DIR/.jupyter/lab/settings" \
  --ServerApp.allow_origin="http://127.0.0.1:$BOOK_PORT" \
  --LabApp.workspaces_dir="$workspaces" \
  --MappingKernelManager.cull_idle_timeout=1800 --MappingKernelManager.cull_interval=120 \
  --MappingKernelManager.cull_connected=False \
  --LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
  >"$WORKSHOP_DIR/.jupyterlab.log" 2>&1 &
pids+=($!)
"$py" -m http.server --bind 127.0.0.1 --directory "$BOOK_DIR" "$BOOK_PORT" \
  >"$WORKSHOP_DIR/.book-server.log" 2>&1 &
pids+=($!)

# Ready when JupyterLab answers its API with the token.
for _ in $(seq 1 300); do
  if JUPYTER_TOKEN="$TOKEN" "$py" - "$PORT" <<'EOF'
import os, sys, urllib.request
port, token = sys.argv[1], os.environ["JUPYTER_TOKEN"]
try:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status",
                                     headers={"Authorization": f"token {token}"})
    urllib.request.urlopen(request, timeout=1)
except Exception:
    sys.exit(1)
EOF
  then break; fi
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || { tail -20 "$WORKSHOP_DIR/.jupyterlab.log" >&2; fail "a server stopped while starting (log above)"; }
  done
  sleep 0.2
done

echo
echo "JupyterLab (the notebooks): http://127.0.0.1:$PORT/lab?token=$TOKEN"
echo "The book, with live code:   http://127.0.0.1:$BOOK_PORT/index.html#jupyter=http://127.0.0.1:$PORT&token=$TOKEN"
echo "Both listen on 127.0.0.1 only. Ctrl-C stops them."
wait "${pids[0]}"
