#!/usr/bin/env bash
# Print the Python 3.12 the Colab stand-in is made with (Colab runs 3.12):
# $COLAB_PYTHON, else pyenv's 3.12.x, else python3.12 on PATH. Exit 1, saying
# so on stderr, if there is none. Used by setup_colab_env.sh and lock.sh.
if [ -n "${COLAB_PYTHON:-}" ]; then echo "$COLAB_PYTHON"; exit 0; fi
for candidate in "$HOME"/.pyenv/versions/3.12*/bin/python "$(command -v python3.12 || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; exit 0; fi
done
echo "no Python 3.12 found (Colab runs 3.12); set COLAB_PYTHON=/path/to/python3.12" >&2
exit 1
