#!/usr/bin/env bash
# GPU check of classwise (tools/gpu/README.md): on a CUDA machine with a built binary, in under
# 8 minutes on one H100:
#   1 environment   GPU, driver, the Python torch, the binary's libraries
#   2 doctor        `classwise doctor --json`: CUDA, cuDNN, libtorch
#   3 data          synthetic CIFAR-10/100 at the official counts (`classwise data synth`)
#   4 bench         `classwise bench` beside tools/bench/reference.py (PyTorch eager at its best
#                   setting: --cudnn-benchmark --channels-last), PreActResNet-18 and
#                   WRN-34-10, fp32 and bf16, img/s and ratios (classwise only without torch)
#   5 cifar10-cfa-at  the preset for 2 short epochs, alone (the run step 6 attacks)
#   6 AutoAttack    standard, on 500 test images of that run
#   7 full epoch    cifar10-cfa-at for 1 epoch on every synthetic training image (49,000)
#   8 presets       every configs/cifar10-*.toml and cifar100-*.toml for 2 epochs on a few
#                   hundred images, in parallel lanes; FRL presets start from the run of the
#                   preset they name; cifar10-cfa-at and cifar10-wat-trades also in bf16
#   9 card          (only when GPU_STEPS names it) a WRN-28-10 that PyTorch trains for one epoch
#                   (tools/gpu/train_card.py, RobustBench's definition, a torch.save file and
#                   its model card), then `classwise bench --autoattack CARD` on 1,000 test
#                   images (GPU_CARD_PER_CLASS) against the original AutoAttack (pyautoattack)
#                   on the same weights
#  10 summary       one table (step, status, seconds, note), the total against the budget
# A failing step does not stop the others; the exit status is 1 if any step failed.
#
# Environment (all optional):
#   CLASSWISE    the binary [target/release/classwise; with GPU_DRY=1 target/debug/classwise
#                when there is no release build]
#   OUT          where the logs and the summary go [/tmp/gpu-out]
#   GPU_WORK     scratch: data, runs [/tmp/cwgpu]; wiped at the start
#   GPU_DATA     an existing synthetic data root to use instead of writing one
#   PY           a python with torch for the PyTorch side [python3; else the crosscheck venv]
#   CONFIGS      the presets [configs/ of this checkout]
#   GPU_BUDGET_S the time the steps plan for [450]; GPU_LIMIT_S the limit checked [480]
#   GPU_LANES    preset runs at once [3]
#   GPU_STEPS    the steps to run [1 2 3 4 5 6 7 8]; 1 and 3 always run (the others need them),
#                6 needs 5; e.g. GPU_STEPS=9 for the card comparison alone
#   GPU_CARD_PER_CLASS  step 9's test images per class [100; dry 2]
#   GPU_DRY=1    everything on the CPU at tiny sizes (a test of the script); GPU_DRY_ALL=1 runs
#                every preset in it (else 8 and the bf16 runs), GPU_DRY_ARCH the architecture every dry
#                preset run uses [small_cnn_cifar; empty: the presets' own, WRNs as WRN-10-1]
set -u
G="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$G/../.." && pwd)"
DRY=${GPU_DRY:-0}
if [ -z "${CLASSWISE:-}" ]; then
  CLASSWISE=target/release/classwise
  [ "$DRY" = 1 ] && [ ! -x "$CLASSWISE" ] && [ -x target/debug/classwise ] && CLASSWISE=target/debug/classwise
fi
[ -x "$CLASSWISE" ] || { [ -x "$ROOT/$CLASSWISE" ] && CLASSWISE="$ROOT/$CLASSWISE"; }
BIN=$(realpath -m "$CLASSWISE")
CONFIGS=$(realpath -m "${CONFIGS:-$ROOT/configs}")
OUT=${OUT:-/tmp/gpu-out}
W=${GPU_WORK:-/tmp/cwgpu}
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
# GPU_WORK is wiped: only a folder this check made (it holds the marker) or an empty one.
if [ -d "$W" ] && [ ! -e "$W/.classwise-gpu-check" ] && [ -n "$(ls -A "$W" 2>/dev/null)" ]; then
  echo "check.sh: GPU_WORK=$W is not empty and was not made by this check; not wiping it" >&2; exit 2; fi
rm -rf "$W"; mkdir -p "$W/logs" "$W/args" "$W/done"; W=$(realpath "$W"); touch "$W/.classwise-gpu-check"
RUNS="$W/runs"; mkdir -p "$RUNS"
HELP="$G/summarize.py"
PYH=${PYH:-python3}   # the helpers need only the standard library
SUM="$W/summary.tsv"; : > "$SUM"; : > "$W/bench_table.txt"
for f in summary.txt run.log env.txt bench.jsonl results.jsonl train_runs.log autoattack.log long_run.log; do : > "$OUT/$f"; done
exec > >(tee "$OUT/run.log") 2>&1
SECONDS=0
# Interrupted (Ctrl-C, a kill, an outer timeout): stop the lanes, which would go on starting
# runs, and the commands in flight, which `timeout` keeps in process groups of their own (each
# names the scratch folder). Bash runs this once the foreground command has returned, or at
# once while it waits for the lanes.
stop() { trap - INT TERM; echo "check.sh: interrupted at t=${SECONDS}s; stopping its commands" >&2
  # shellcheck disable=SC2046  # process ids
  kill $(jobs -p) 2> /dev/null; pkill -TERM -f -- "$W/" 2> /dev/null; exit 130; }
trap stop INT TERM

if [ "$DRY" = 1 ]; then
  BUDGET=${GPU_BUDGET_S:-100000}; LIMIT=${GPU_LIMIT_S:-100000}; DEV=cpu; LANES=${GPU_LANES:-2}
  # the 300-per-class validation splits fit; the whole test split, which a model card (step 9) needs
  SYNTH_C10=(--train-per-class 302 --test-per-class 1000)
  SYNTH_C100=(--train-per-class 32 --test-per-class 1)
  C10=1,1,1; C100=1,1,1; EPOCHS=2; RUN_TO=900; RUN_TO_WRN=900
  BENCH_MODELS="preact-resnet18 wrn-34-10"; BENCH_WL=pgd-at; BB=1; BS=1; BENCH_TO=900; BENCH_END=100000
  AA_ARGS=(--attacks apgd-ce --test-per-class 1); AA_TO=900   # (Square: minutes in a debug build)
  LONG_SET=(--set data.train_per_class=5 --set data.test_per_class=1 --set eval.test_per_class=1 --set eval.val_per_class=1); LONG_TO=900
  if [ "${GPU_DRY_ALL:-0}" = 1 ]; then ONLY=""; else
    # one of each family: PGD-AT, TRADES with CFA's rule and FAWA, WAT, FRL from a WAT run,
    # BAT, MART on a WRN preset, a WRN, CIFAR-100
    ONLY=cifar10-cfa-at,cifar10-cfa-trades-cfa,cifar10-wat-trades,cifar10-wat-frl-rwrm,cifar10-bat,cifar10-tian-mart,cifar10-wrn-wat-trades,cifar100-wat-trades
  fi
  DRY_ARCH=${GPU_DRY_ARCH-small_cnn_cifar}
  if [ -n "$DRY_ARCH" ]; then ARCH_PLAN=(--arch "$DRY_ARCH"); ARCH_SET=(--set "model.architecture={ kind = \"$DRY_ARCH\" }")
  else ARCH_PLAN=(--wrn-arch '{ kind = "wide_resnet", depth = 10, widen = 1 }'); ARCH_SET=(); fi
  COUNTS=(--counts-any); COUNTS_SET=(--set 'data.source={ kind = "files", id = "cifar10", options = { counts = "any" } }')
  CARD_TRAIN=(--depth 10 --widen 1 --limit 512 --device cpu); CARD_PER_CLASS=${GPU_CARD_PER_CLASS:-2}; CARD_TO=900
else
  BUDGET=${GPU_BUDGET_S:-450}; LIMIT=${GPU_LIMIT_S:-480}; DEV=cuda; LANES=${GPU_LANES:-3}
  SYNTH_C10=(); SYNTH_C100=()
  C10=30,10,5; C100=3,1,1; EPOCHS=2; RUN_TO=60; RUN_TO_WRN=100
  BENCH_MODELS="preact-resnet18 wrn-34-10"; BENCH_WL=pgd-at,trades,eval-pgd20; BB=128; BS=3; BENCH_TO=150; BENCH_END=210
  AA_ARGS=(--version standard --test-per-class 50); AA_TO=120
  LONG_SET=(--set data.test_per_class=100 --set eval.test_per_class=100 --set eval.val_per_class=20); LONG_TO=150
  ONLY=""; ARCH_PLAN=(); ARCH_SET=(); COUNTS=(); COUNTS_SET=()
  CARD_TRAIN=(--bf16 --channels-last --device cuda); CARD_PER_CLASS=${GPU_CARD_PER_CLASS:-100}; CARD_TO=150
fi
STEPS=" ${GPU_STEPS:-1 2 3 4 5 6 7 8} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
BF16_PRESETS=${GPU_BF16_PRESETS:-cifar10-cfa-at,cifar10-wat-trades}
left() { echo $((BUDGET - SECONDS)); }
hdr() { echo; echo "=============== $* (t=${SECONDS}s)"; }
# row STEP STATUS SECONDS NOTE: one line of the summary (lanes append at once: one short write)
row() { local note=${4//$'\t'/ }; note=${note//$'\n'/ }
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$note" >> "$SUM"
  printf '%-30s %-7s %5ss  %s\n' "$1" "$2" "$3" "$note" >> "$OUT/summary.txt"
  echo ">>> [$1] $2 (${3}s) :: ${note:0:400}"; }
# GPU utilisation (%) and memory (MiB) sampled every 0.5 s during a step
util_start() { UF="$W/util-$1.csv"; : > "$UF"; UPID=""
  command -v nvidia-smi > /dev/null && [ "$DRY" != 1 ] && {
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 > "$UF" 2>/dev/null &
    UPID=$!; }; }
util_stop() { [ -n "${UPID:-}" ] && { kill "$UPID" 2>/dev/null; wait "$UPID" 2>/dev/null; }
  awk -F', *' 'NF>=2 && $1 ~ /^[0-9]+$/ { n++; u+=$1; if ($2>m) m=$2 } END { if (n) printf "GPU busy %.0f%%, max %d MiB", u/n, m }' "$UF"; }

echo "classwise GPU check: dry=$DRY binary=$BIN configs=$CONFIGS out=$OUT work=$W budget=${BUDGET}s"

# ---------------------------------------------------------------- 1 environment
hdr "1 environment"
t=$SECONDS
{ date -u; uname -srm; echo "cores $(nproc)"; (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
  if command -v nvidia-smi > /dev/null; then nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
  else echo "no nvidia-smi"; fi; } | tee -a "$OUT/env.txt"
# A python with torch for the PyTorch side: PY, else python3, else the crosscheck venv.
TORCH_PY=""
for cand in ${PY:-} python3 "${CLASSWISE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/classwise}/crosscheck-venv/bin/python"; do
  if [ -n "$cand" ] && timeout 60 "$cand" -c 'import torch' > /dev/null 2>&1; then TORCH_PY=$cand; break; fi
done
if [ -n "$TORCH_PY" ]; then
  timeout 60 "$TORCH_PY" -c 'import torch, os, sys
print("torch", torch.__version__, "cuda_available", torch.cuda.is_available(), "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "python", sys.version.split()[0], sys.executable)
print("gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
print("TORCH_LIB", os.path.join(os.path.dirname(torch.__file__), "lib"))' > "$W/torch.txt" 2>&1
else echo "no python with torch (tried PY, python3, the crosscheck venv)" > "$W/torch.txt"; fi
tee -a "$OUT/env.txt" < "$W/torch.txt"
# A binary built against another libtorch (build-for-torch-2.11.sh) finds it in torch/lib.
ldd "$BIN" > "$W/ldd.txt" 2>&1
TORCH_LIB=${GPU_TORCH_LIB:-$(sed -n 's/^TORCH_LIB //p' "$W/torch.txt")}
if grep -q 'not found' "$W/ldd.txt" && [ -n "$TORCH_LIB" ]; then
  export LD_LIBRARY_PATH="$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" | tee -a "$OUT/env.txt"
  ldd "$BIN" > "$W/ldd.txt" 2>&1
fi
grep -E 'not found|torch|c10' "$W/ldd.txt" | tee -a "$OUT/env.txt"
MISSING=$(grep -c 'not found' "$W/ldd.txt")
VERSION=$(timeout 30 "$BIN" --version 2>&1); VRC=$?
echo "$VERSION" | tee -a "$OUT/env.txt"
# Python packages the torch may lack: torchattacks (reference.py's eval-pgd20), pyautoattack
# and robustbench (step 9), from the site/ folder beside the binary (tools/gpu/python-site.sh),
# else from wheels beside the binary or here
SITE=""; WHEELS=""
[ -d "$(dirname "$BIN")/site" ] && SITE="$(dirname "$BIN")/site"
for pkg in torchattacks pyautoattack robustbench; do
  [ -n "$TORCH_PY" ] && ! "$TORCH_PY" -c "import $pkg" > /dev/null 2>&1 || continue
  WHL=$(ls "$(dirname "$BIN")"/$pkg-*.whl "$G"/$pkg-*.whl 2>/dev/null | head -1)
  if [ -n "$WHL" ] && "$TORCH_PY" -m pip install -q --no-index --no-deps --target "$W/site" "$WHL" >> "$W/pip.txt" 2>&1; then
    WHEELS+="$pkg "; fi
done
[ -n "$WHEELS" ] && SITE="$W/site${SITE:+:$SITE}"
[ -n "$SITE" ] && export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
row "1 env" "$([ "$MISSING" = 0 ] && [ $VRC = 0 ] && echo OK || echo FAIL)" $((SECONDS - t)) \
  "$VERSION (rc=$VRC), libraries not found: $MISSING; $(command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo 'no nvidia-smi'); $(head -1 "$W/torch.txt" | awk '{ print $1, $2, $3, $4 }')${SITE:+; PYTHONPATH $SITE}${WHEELS:+ (from wheels: $WHEELS)}"

# ---------------------------------------------------------------- 2 doctor
if want 2; then
  hdr "2 doctor"
  t=$SECONDS
  timeout 60 "$BIN" doctor 2>&1 | tee -a "$OUT/env.txt"
  timeout 60 "$BIN" doctor --json > "$W/doctor.json" 2> "$W/doctor.err"; DOC_RC=$?
  DOC=$($PYH "$HELP" doctor "$W/doctor.json" 2>&1); echo "$DOC"
  if grep -q 'cuda_available=True' <<< "$DOC"; then ST=OK; elif [ "$DRY" = 1 ]; then ST=OK-CPU; else ST=FAIL; fi
  row "2 doctor" "$ST" $((SECONDS - t)) "rc=$DOC_RC (1 when Fashion-MNIST is missing); $(head -1 <<< "$DOC")"
fi

# ---------------------------------------------------------------- 3 data
hdr "3 synthetic CIFAR-10/100"
t=$SECONDS
DATA=${GPU_DATA:-$W/data}
SRC=0
if [ -z "${GPU_DATA:-}" ]; then
  # The two sets at once, in two processes.
  timeout 300 "$BIN" data synth --out "$DATA" --dataset cifar10 "${SYNTH_C10[@]}" > "$W/synth10.log" 2>&1 & P10=$!
  timeout 300 "$BIN" data synth --out "$DATA" --dataset cifar100 "${SYNTH_C100[@]}" > "$W/synth100.log" 2>&1 & P100=$!
  wait $P10 || SRC=$?; wait $P100 || SRC=$?
  cat "$W/synth10.log" "$W/synth100.log"
fi
export CLASSWISE_DATA_DIR="$DATA"
timeout 60 "$BIN" doctor --json --data-dir "$DATA" > "$W/doctor2.json" 2> /dev/null
$PYH "$HELP" datasets "$W/doctor2.json" | tee "$W/datasets.txt"
# doctor says "synthetic" for a set that `data synth` wrote ("found" for the real ones)
NFOUND=$(grep -cE '^cifar(10|100) (found|synthetic) ' "$W/datasets.txt")
row "3 data" "$([ $SRC = 0 ] && [ "$NFOUND" = 2 ] && echo OK || echo FAIL)" $((SECONDS - t)) \
  "$([ -n "${GPU_DATA:-}" ] && echo "GPU_DATA=$GPU_DATA" || echo "synth rc=$SRC"); doctor: $(grep -E '^cifar(10|100) ' "$W/datasets.txt" | awk '{printf "%s %s %s; ", $1, $2, $4 $5}')"

# ---------------------------------------------------------------- 4 bench
if want 4; then
  hdr "4 bench: classwise vs PyTorch eager ($BENCH_MODELS; $BENCH_WL; batch $BB, $BS timed steps, $DEV)"
  t=$SECONDS
  BJ="$OUT/bench.jsonl"
  cw_bench() {  # model precision
    timeout -k 5 $BENCH_TO "$BIN" bench --json --device $DEV --precision "$2" --model "$1" \
      --workload "$BENCH_WL" --batch $BB --steps $BS > "$W/b.out" 2> "$W/b.err"
    local rc=$?; grep '^{' "$W/b.out" >> "$BJ"
    echo "classwise $1 $2: rc=$rc, $(grep -c '^{' "$W/b.out") rows"
    [ $rc -ne 0 ] && { tail -3 "$W/b.err"; BNOTE+="classwise rc=$rc: $(tail -1 "$W/b.err" | cut -c1-160); "; }
    return $rc
  }
  pt_bench() {  # model precision
    timeout -k 5 $BENCH_TO "$TORCH_PY" "$ROOT/tools/bench/reference.py" \
      --device $DEV --precision "$2" --cudnn-benchmark --channels-last --model "$1" \
      --workload "$BENCH_WL" --batch $BB --steps $BS > "$W/b.out" 2> "$W/b.err"
    local rc=$?; grep '^{' "$W/b.out" >> "$BJ"
    echo "pytorch $1 $2: rc=$rc, $(grep -c '^{' "$W/b.out") rows"
    [ $rc -ne 0 ] && { tail -3 "$W/b.err"; BNOTE+="pytorch rc=$rc: $(tail -1 "$W/b.err" | cut -c1-160); "; }
    return $rc
  }
  i=0
  for m in $BENCH_MODELS; do
    for p in fp32 bf16; do
      tb=$SECONDS; BNOTE=""; ok=1
      if [ "$SECONDS" -gt "$BENCH_END" ]; then row "4 bench $m $p" SKIP 0 "budget (t=${SECONDS}s)"; continue; fi
      # alternate which side goes first
      if [ -z "$TORCH_PY" ]; then cw_bench "$m" "$p" || ok=0; BNOTE+="no python torch: classwise only; "
      elif [ $((i % 2)) = 0 ]; then cw_bench "$m" "$p" || ok=0; pt_bench "$m" "$p" || ok=0
      else pt_bench "$m" "$p" || ok=0; cw_bench "$m" "$p" || ok=0; fi
      i=$((i + 1))
      row "4 bench $m $p" "$([ $ok = 1 ] && echo OK || echo FAIL)" $((SECONDS - tb)) \
        "$($PYH "$HELP" bench "$BJ" "$m" "$p") ${BNOTE}"
    done
  done
  for m in $BENCH_MODELS; do row "4 bench $m bf16/fp32" INFO 0 "$($PYH "$HELP" bf16 "$BJ" "$m")"; done
  $PYH "$ROOT/tools/bench/side_by_side.py" --table "$BJ" | tee "$W/bench_table.txt"
  echo "(bench step: $((SECONDS - t)) s)"
fi

# ---------------------------------------------------------------- presets: plan and runner
mapfile -t PLAN < <($PYH "$HELP" plan "$CONFIGS" "$RUNS" "$W/args" --epochs $EPOCHS --c10 $C10 --c100 $C100 \
  "${COUNTS[@]}" "${ARCH_PLAN[@]}" --bf16 "$BF16_PRESETS" --only "$ONLY" 2> "$W/plan.err")
[ ${#PLAN[@]} = 0 ] && { echo "no preset plan:"; cat "$W/plan.err"; }
train_run() {  # name preset source kind
  local name=$1 preset=$2 source=$3 kind=$4 to=$RUN_TO log="$W/logs/$1.log" tr=$SECONDS
  [[ $kind == wrn* ]] && to=$RUN_TO_WRN
  if [ "$source" != - ]; then   # FRL: start from the run of the preset it names
    while [ ! -e "$W/done/$source" ] && [ -e "$W/args/$source.args" ] && [ $((SECONDS - tr)) -lt 900 ] \
        && { [ "$DRY" = 1 ] || [ "$(left)" -gt 25 ]; }; do sleep 1; done
    if [ ! -d "$RUNS/$source/checkpoints" ]; then
      row "${STEP_PREFIX:-8} $name" SKIP 0 "init_from run $source did not finish"; touch "$W/done/$name"; return; fi
  fi
  if [ "$DRY" != 1 ] && [ $(( $(left) - 10 )) -lt 15 ]; then
    row "${STEP_PREFIX:-8} $name" SKIP 0 "budget (t=${SECONDS}s)"; touch "$W/done/$name"; return; fi
  [ "$DRY" != 1 ] && [ $(( $(left) - 10 )) -lt $to ] && to=$(( $(left) - 10 ))
  mapfile -t A < "$W/args/$name.args"
  echo "--- $name ($preset, $kind${source:+, from $source}) t=${SECONDS}s"
  timeout -k 5 $to "$BIN" train --config "$CONFIGS/$preset.toml" --out "$RUNS/$name" "${A[@]}" > "$log" 2>&1
  local rc=$? wall=$((SECONDS - tr))
  { echo "######## $name: classwise train --config $preset.toml ${A[*]} -> rc=$rc in ${wall}s (timeout $to)"; cat "$log"; echo; } > "$W/logs/$name.tlog"
  $PYH "$HELP" run "$RUNS/$name" "$name" $rc $wall "$log" > "$W/logs/$name.json" 2>&1
  local st=OK; [ $rc != 0 ] && st=FAIL
  row "${STEP_PREFIX:-8} $name" $st $wall "$([ $rc = 124 ] && echo "timeout ${to}s; ")rc=$rc; $kind; $($PYH "$HELP" note "$W/logs/$name.json")"
  touch "$W/done/$name"
}

# ---------------------------------------------------------------- 5 the run AutoAttack attacks
if want 5; then
  hdr "5 cifar10-cfa-at, $EPOCHS short epochs, alone"
  CFA_LINE=$(printf '%s\n' "${PLAN[@]}" | awk -F'\t' '$2 == "cifar10-cfa-at"')
  if [ -n "$CFA_LINE" ]; then
    IFS=$'\t' read -r _ n p s k <<< "$CFA_LINE"
    STEP_PREFIX=5 train_run "$n" "$p" "$s" "$k"
  else row "5 cifar10-cfa-at" FAIL 0 "not in the preset plan: $(head -c 300 "$W/plan.err")"; fi
fi

# ---------------------------------------------------------------- 6 AutoAttack
if want 6; then
  hdr "6 AutoAttack on cifar10-cfa-at: ${AA_ARGS[*]}"
  t=$SECONDS
  if [ ! -d "$RUNS/cifar10-cfa-at/checkpoints" ]; then
    row "6 autoattack" SKIP 0 "no cifar10-cfa-at run"
  elif [ "$DRY" != 1 ] && [ "$(left)" -lt 60 ]; then
    row "6 autoattack" SKIP 0 "budget (t=${SECONDS}s)"
  else
    to=$AA_TO; [ "$DRY" != 1 ] && [ $(( $(left) - 45 )) -lt $to ] && to=$(( $(left) - 45 ))
    util_start aa
    timeout -k 5 $to "$BIN" eval --run "$RUNS/cifar10-cfa-at" --attack autoattack "${AA_ARGS[@]}" > "$W/aa.out" 2> "$W/aa.err"
    rc=$?; wall=$((SECONDS - t)); U=$(util_stop)
    { echo "### classwise eval --attack autoattack ${AA_ARGS[*]}: rc=$rc in ${wall}s (timeout $to)"; cat "$W/aa.out"; echo "--- stderr"; tail -c 20000 "$W/aa.err"; } >> "$OUT/autoattack.log"
    J=$(ls -t "$RUNS"/cifar10-cfa-at/eval-*autoattack*.json 2>/dev/null | head -1)
    AAS=$([ -n "$J" ] && $PYH "$HELP" aa "$J")
    echo "$AAS"
    row "6 autoattack" "$([ $rc = 0 ] && echo OK || echo FAIL)" $wall \
      "rc=$rc$([ $rc = 124 ] && echo " (timeout ${to}s)"); ${AAS:-$(tail -2 "$W/aa.err" | tr '\n' ' ' | cut -c1-300)}; $U"
  fi
fi

# ---------------------------------------------------------------- 7 one full epoch
if want 7; then
  hdr "7 cifar10-cfa-at: 1 epoch on every synthetic training image"
  t=$SECONDS
  if [ "$DRY" != 1 ] && [ "$(left)" -lt 50 ]; then
    row "7 full epoch" SKIP 0 "budget (t=${SECONDS}s)"
  else
    to=$LONG_TO; [ "$DRY" != 1 ] && [ $(( $(left) - 15 )) -lt $to ] && to=$(( $(left) - 15 ))
    util_start long
    timeout -k 5 $to "$BIN" train --config "$CONFIGS/cifar10-cfa-at.toml" --out "$RUNS/full-epoch" --set epochs=1 \
      "${LONG_SET[@]}" "${COUNTS_SET[@]}" "${ARCH_SET[@]}" > "$OUT/long_run.log" 2>&1
    rc=$?; wall=$((SECONDS - t)); U=$(util_stop)
    $PYH "$HELP" run "$RUNS/full-epoch" full-epoch $rc $wall "$OUT/long_run.log" > "$W/full.json" 2>&1
    cat "$W/full.json" >> "$OUT/results.jsonl"
    row "7 full epoch" "$([ $rc = 0 ] && echo OK || echo FAIL)" $wall \
      "rc=$rc$([ $rc = 124 ] && echo " (timeout ${to}s)"); $($PYH "$HELP" epoch "$W/full.json" "$([ -z "${ARCH_SET[*]}" ] && echo "$OUT/bench.jsonl")" 2>&1); $U"
  fi
fi

# ---------------------------------------------------------------- 8 every preset
if want 8; then
  hdr "8 every CIFAR preset: $EPOCHS epochs, train/test/val per class CIFAR-10 $C10, CIFAR-100 $C100; $LANES lanes"
  t=$SECONDS
  Q="$W/queue"; printf '%s\n' "${PLAN[@]}" | awk -F'\t' '$2 != "cifar10-cfa-at"' > "$Q"
  pop() { ( flock 9; head -n 1 "$Q"; sed -i '1d' "$Q" ) 9> "$Q.lock"; }
  THREADS=$(( $(nproc) / LANES )); [ "$THREADS" -lt 1 ] && THREADS=1
  lane() {
    export OMP_NUM_THREADS=$THREADS
    local line
    while line=$(pop) && [ -n "$line" ]; do
      IFS=$'\t' read -r _ n p s k <<< "$line"
      train_run "$n" "$p" "$s" "$k"
    done
  }
  util_start presets
  PIDS=()
  for _ in $(seq 1 "$LANES"); do lane & PIDS+=($!); done
  wait "${PIDS[@]}"
  U=$(util_stop)
  for line in "${PLAN[@]}"; do
    IFS=$'\t' read -r _ n _ _ _ <<< "$line"
    [ -f "$W/logs/$n.tlog" ] && cat "$W/logs/$n.tlog" >> "$OUT/train_runs.log"
    [ -f "$W/logs/$n.json" ] && cat "$W/logs/$n.json" >> "$OUT/results.jsonl"
  done
  NOK=$(grep -c $'^8 [^\t]*\tOK' "$SUM"); NFAIL=$(grep -c $'^8 [^\t]*\tFAIL' "$SUM"); NSKIP=$(grep -c $'^8 [^\t]*\tSKIP' "$SUM")
  row "8 presets" "$([ "$NFAIL" = 0 ] && [ "$NSKIP" = 0 ] && echo OK || echo FAIL)" $((SECONDS - t)) \
    "$NOK ok, $NFAIL failed, $NSKIP skipped of $(( ${#PLAN[@]} - 1 )) (+ cifar10-cfa-at in step 5); $LANES lanes of $THREADS threads; $U"
fi

# ---------------------------------------------------------------- 9 a model card PyTorch trained
if want 9; then
  hdr "9 card: ${CARD_TRAIN[*]}; AutoAttack on $CARD_PER_CLASS test images per class, classwise and pyautoattack"
  t=$SECONDS; CW="$W/card"; AAL="$OUT/autoattack.log"
  if [ -z "$TORCH_PY" ]; then row "9 card" FAIL 0 "no python with torch"
  elif [ "$DRY" != 1 ] && [ "$(left)" -lt 60 ]; then row "9 card" SKIP 0 "budget (t=${SECONDS}s)"
  else
    to=$CARD_TO; [ "$DRY" != 1 ] && [ $(( $(left) - 40 )) -lt $to ] && to=$(( $(left) - 40 ))
    timeout -k 5 $to "$TORCH_PY" "$G/train_card.py" \
      --data "$DATA" --out "$CW" "${CARD_TRAIN[@]}" > "$W/card-train.out" 2>&1; rc=$?
    { echo "### tools/gpu/train_card.py ${CARD_TRAIN[*]}: rc=$rc in $((SECONDS - t))s (timeout $to)"; cat "$W/card-train.out"; } >> "$AAL"
    CARD=$(ls "$CW"/*.card.toml 2>/dev/null | head -1)
    if [ $rc != 0 ] || [ -z "$CARD" ]; then
      row "9 card" FAIL $((SECONDS - t)) "train_card.py rc=$rc: $(tail -1 "$W/card-train.out" | cut -c1-300)"
    else
      grep '^{' "$W/card-train.out" | tail -1 >> "$OUT/results.jsonl"
      to=$(( $(left) - 10 )); [ "$DRY" = 1 ] && to=$CARD_TO
      util_start card
      # from the checkout, where bench finds tools/crosscheck/crosscheck.py
      (cd "$ROOT" && timeout -k 5 $to "$BIN" bench \
        --autoattack "$CARD" --test-per-class $CARD_PER_CLASS --device $DEV --python "$TORCH_PY" \
        --against pyautoattack --out "$CW/bench") > "$W/card-bench.out" 2>&1; rc=$?
      U=$(util_stop)
      { echo "### classwise bench --autoattack $CARD: rc=$rc in $((SECONDS - t))s (timeout $to)"; cat "$W/card-bench.out"; } >> "$AAL"
      for j in classwise crosscheck; do
        [ -f "$CW/bench/$j.json" ] && $PYH -c 'import json, sys; print(json.dumps({"card_" + sys.argv[2]: json.load(open(sys.argv[1]))}))' \
          "$CW/bench/$j.json" "$j" >> "$OUT/results.jsonl"
      done
      row "9 card" "$([ $rc = 0 ] && echo OK || echo FAIL)" $((SECONDS - t)) \
        "rc=$rc$([ $rc = 124 ] && echo " (timeout ${to}s)"); $($PYH "$HELP" card "$W/card-train.out" "$CW/bench"); $U"
    fi
  fi
fi

# ---------------------------------------------------------------- 10 summary
TOTAL=$SECONDS
if [ "$DRY" = 1 ]; then TST=INFO; else TST=$([ $TOTAL -le "$LIMIT" ] && echo OK || echo FAIL); fi
row "total" $TST $TOTAL "limit ${LIMIT}s, planned ${BUDGET}s; dry=$DRY; device $DEV"
NFAILED=$(awk -F'\t' '$2 == "FAIL"' "$SUM" | wc -l)
{
  echo
  echo "=============== bench (img/s; cw/pt = classwise / PyTorch, PyTorch with cudnn.benchmark and channels-last)"
  cat "$W/bench_table.txt"
  echo
  echo "=============== SUMMARY ($TOTAL s; $NFAILED failed)"
  $PYH "$HELP" table "$SUM"
  echo "(logs in $OUT: run.log env.txt bench.jsonl results.jsonl train_runs.log autoattack.log long_run.log summary.txt)"
} > "$W/final.txt"
cat "$W/final.txt"; cat "$W/final.txt" >> "$OUT/summary.txt"
sleep 0.5
[ "$NFAILED" = 0 ]
