#!/usr/bin/env bash
# The pure-Python packages a GPU machine's torch lacks, for tools/gpu/check.sh, as a folder that
# travels with the binary: BUNDLE/site (check.sh puts it on PYTHONPATH when it sits beside the
# binary). torchattacks 3.5.1 (reference.py's eval-pgd20), pyautoattack 0.2.0 (the original
# AutoAttack, step 9) and robustbench 1.1.1 (its WideResNet definition, step 9), at the versions
# tools/crosscheck/requirements.txt pins, without their dependencies (the GPU image has numpy
# and scipy). pyautoattack's wheel carries a 44 MB example model, which is left out, so that
# the bundle fits a device machine's 64 MiB.
# usage: bash tools/gpu/python-site.sh BUNDLE   (from the checkout; needs pip and PyPI)
set -euo pipefail
bundle=${1:?usage: python-site.sh BUNDLE}
req="$(cd "$(dirname "$0")/../crosscheck" && pwd)/requirements.txt"
pins=()
for pkg in torchattacks pyautoattack robustbench; do
  pin=$(grep -E "^$pkg==" "$req") || { echo "python-site.sh: no $pkg pin in $req" >&2; exit 2; }
  pins+=("$pin")
done
rm -rf "$bundle/site"
python3 -m pip install -q --no-deps --no-compile --only-binary=:all: --target "$bundle/site" "${pins[@]}"
# robustbench also installs a top-level `tests` package, which could shadow another
rm -rf "$bundle/site/pyautoattack/examples" "$bundle/site/tests" "$bundle/site/bin"
echo "${pins[*]} in $bundle/site ($(du -sh "$bundle/site" | cut -f1))"
