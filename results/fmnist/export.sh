#!/bin/bash
# Copies the run records of a finished study sweep into results/fmnist/<table>/ (issue 38 item 5):
# the manifest and, per run, config.toml, metrics.jsonl, env.json, selection.json,
# the reports (report*.json/.md, eval-*.json/.md) and predictions/; no checkpoints, candidates,
# run state, split indices (split.json, 0.9 MB a run; the config determines it), logs, locks or
# task records.
#
#   bash results/fmnist/export.sh /work/study/cfa results/fmnist/cfa
set -euo pipefail
src=${1:?usage: export.sh SWEEP_DIR OUT_DIR}
out=${2:?usage: export.sh SWEEP_DIR OUT_DIR}
mkdir -p "$out/runs"
cp "$src/manifest.json" "$out/"
for run in "$src"/runs/*/; do
  id=$(basename "$run")
  # selection.json is the last file a run writes: without it the run is still training or
  # writing its final reports.
  [ -f "$run/selection.json" ] || { echo "skipped (unfinished): $id" >&2; continue; }
  mkdir -p "$out/runs/$id"
  for f in config.toml metrics.jsonl env.json selection.json; do
    [ -f "$run/$f" ] && cp "$run/$f" "$out/runs/$id/"
  done
  find "$run" -maxdepth 1 -type f \( -name 'report*.json' -o -name 'report*.md' \
    -o -name 'eval-*.json' -o -name 'eval-*.md' \) -exec cp {} "$out/runs/$id/" \;
  [ -d "$run/predictions" ] && cp -r "$run/predictions" "$out/runs/$id/"
done
echo "exported $(ls "$out/runs" | wc -l) runs of $src into $out"
