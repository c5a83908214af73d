#!/usr/bin/env bash
# Creates (or brings up to date) the Python venv of the optional AutoAttack cross-check:
#   ${CLASSWISE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/classwise}/crosscheck-venv
# and installs requirements.txt into it with --no-deps (every package is pinned there).
# Idempotent: a venv whose stamp matches requirements.txt and the interpreter, and whose
# imports work, is left as it is. Prints the venv's python path on its last line.
#
# Environment: PYTHON (interpreter, default python3; CPython >= 3.11),
# CLASSWISE_CACHE_DIR / XDG_CACHE_HOME (where the venv goes),
# CROSSCHECK_PIP_CACHE=1 to let pip keep its wheel cache (about 2.6 GB; off by default).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
requirements="$here/requirements.txt"
cache_dir="${CLASSWISE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/classwise}"
venv="$cache_dir/crosscheck-venv"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    echo "setup.sh: $python is not Python >= 3.11 (set PYTHON to one)" >&2
    exit 1
fi

# What the venv was built from: the requirements and the interpreter's version.
stamp_value="$(
    {
        cat "$requirements"
        "$python" -c 'import sys, platform; print(sys.version, platform.machine())'
    } | sha256sum | cut -d' ' -f1
)"
stamp_file="$venv/.classwise-crosscheck-stamp"
check_imports='import torch, torchattacks, safetensors, numpy, scipy'

if [[ -x "$venv/bin/python" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_value" ]] \
    && "$venv/bin/python" -c "$check_imports" 2>/dev/null; then
    echo "setup.sh: $venv is up to date" >&2
else
    if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import pip' 2>/dev/null; then
        echo "setup.sh: creating $venv" >&2
        rm -rf "$venv"
        mkdir -p "$cache_dir"
        "$python" -m venv "$venv" || {
            echo "setup.sh: $python -m venv failed (on Debian: apt-get install python3-venv)" >&2
            exit 1
        }
    fi
    rm -f "$stamp_file"
    pip_cache=(--no-cache-dir)
    [[ "${CROSSCHECK_PIP_CACHE:-0}" == 1 ]] && pip_cache=()
    echo "setup.sh: installing $requirements (about 2.6 GB to download, 4.2 GB installed)" >&2
    start=$(date +%s)
    "$venv/bin/python" -m pip install --disable-pip-version-check "${pip_cache[@]}" \
        --no-deps --require-virtualenv -r "$requirements" >&2
    "$venv/bin/python" -c "$check_imports"
    echo "$stamp_value" >"$stamp_file"
    echo "setup.sh: installed in $(($(date +%s) - start)) s" >&2
fi

echo "$venv/bin/python"
