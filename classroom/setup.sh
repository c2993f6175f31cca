#!/bin/bash
# The classroom's one-time setup (make classroom runs it; an image build runs it as root):
#
#   bash classroom/setup.sh [SHARED_CACHE_DIR]
#
# 1. JupyterHub (PyPI) and configurable-http-proxy (npm) next to the Python running it;
# 2. straightdope's kernels compiled ONCE into SHARED_CACHE_DIR, the class's compile cache
#    (python -m straightdope.warmup), then made readable by everyone and writable by its
#    owner only: the rule STRAIGHTDOPE_SHARED_CACHE_DIR is checked against (docs/security.md).
#    Run it as the user who owns the hub (root on a real server).
#
# Each step is skipped when done: a second run takes a few seconds. Settings:
#   PYTHON  the Python whose environment gets JupyterHub (python3)
#   WARMUP  arguments for the warm-up, e.g. "--only mlp" (the tests); all kernels when empty
#   ONLY_CACHE=1  step 2 only (a student image, which has JupyterHub and needs no proxy)
set -euo pipefail
PYTHON=${PYTHON:-python3}
SHARED=${1:-${CLASSROOM_SHARED_CACHE:?give the shared cache dir}}
BIN=$(dirname "$("$PYTHON" -c 'import sys; print(sys.executable)')")

if [ "${ONLY_CACHE:-0}" != 1 ]; then
    "$PYTHON" -c 'import jupyterhub' 2>/dev/null || "$PYTHON" -m pip install 'jupyterhub>=5'
    if [ ! -x "$BIN/configurable-http-proxy" ] && ! command -v configurable-http-proxy >/dev/null
    then   # --global --prefix: the command lands in $BIN, beside jupyterhub
        npm install --global --prefix "$(dirname "$BIN")" configurable-http-proxy
    fi
fi

start=$(date +%s)
mkdir -p "$SHARED"
# (compiles only what is missing; the cache dir must be the hub owner's: see below)
STRAIGHTDOPE_CACHE_DIR="$SHARED" "$PYTHON" -m straightdope.warmup ${WARMUP:-}
# The library writes its cache private (700/600); students need to read it, nobody but
# its owner may write it.
chmod -R a+rX,go-w "$SHARED"
echo "==> shared compile cache: $SHARED ($(du -sh "$SHARED" | cut -f1), $(( $(date +%s) - start )) s)"
