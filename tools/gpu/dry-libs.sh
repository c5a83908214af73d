#!/usr/bin/env bash
# The CUDA libraries that the bundle of build-for-torch-2.11.sh links (libtorch_cuda.so of the
# PyPI torch 2.11.0 wheel needs them to load, also where no GPU is), from the PyPI wheels at
# the versions that wheel pins, extracted into one folder. Given to check.sh as GPU_TORCH_LIB
# (it goes on LD_LIBRARY_PATH only after check.sh has probed its Python torch; exported before,
# it makes the crosscheck venv's torch 2.13 refuse the older cuDNN found there when step 1 asks
# for its version), the very binary that travels to the GPU machine runs a dry check on a CPU:
#   GPU_TORCH_LIB=$(bash tools/gpu/dry-libs.sh | tail -n 1) CLASSWISE=gpu/classwise GPU_DRY=1 bash tools/gpu/check.sh
# (the loader finds no driver, so CUDA is unavailable and everything runs on the CPU).
# About 2.5 GB to download once; the wheels are deleted after extraction. Prints the folder last.
set -euo pipefail
cache=${XDG_CACHE_HOME:-$HOME/.cache}/classwise/torch-2.11.0-cuda-libs
torch_whl=$(ls "${GPU_BUILD_DIR:-/tmp/gpu-build}"/wheels/torch-2.11.0-*.whl 2>/dev/null | head -1 || true)
if [ ! -f "$cache/DONE" ]; then
  rm -rf "$cache"; mkdir -p "$cache/wheels" "$cache/lib"
  [ -n "$torch_whl" ] || { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 -d "$cache/wheels" torch==2.11.0; torch_whl=$(ls "$cache"/wheels/torch-*.whl); }
  # torch's own pins: cuda-toolkit[...]==V and nvidia-*==V, read from its METADATA
  mapfile -t pins < <(unzip -p "$torch_whl" 'torch-2.11.0.dist-info/METADATA' | sed -n \
    's/^Requires-Dist: \(\(cuda-toolkit\|nvidia-\)[^;]*\); platform_system == "Linux"$/\1/p' | tr -d ' ')
  [ ${#pins[@]} -gt 0 ] || { echo "dry-libs.sh: no CUDA pins in $torch_whl" >&2; exit 2; }
  # pip matches a manylinux_2_N tag exactly: the N the CUDA wheels use
  platforms=(--platform manylinux2014_x86_64)
  for n in 17 18 24 25 26 27 28 31 34; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$cache/wheels" "${pins[@]}"
  for w in "$cache"/wheels/nvidia_*.whl; do
    python3 - "$w" "$cache/lib" <<'PY'
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    b = os.path.basename(n)
    if ".so" in b and "/lib/" in n:
        with open(os.path.join(sys.argv[2], b), "wb") as f:
            f.write(z.read(n))
PY
  done
  rm -rf "$cache/wheels"; printf '%s\n' "${pins[@]}" > "$cache/DONE"
fi
echo "$cache/lib"
