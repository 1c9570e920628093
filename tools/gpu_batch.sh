#!/usr/bin/env bash
# The repository's GPU checks and benchmarks, in phases that each fit one device call (at most
# ten minutes). On the GPU machine, from the repository root, with the .gpu bundle carried
# (../shared/gpu/README.md), e.g. as the `run` tool's command:
#
#   source .gpu/setup.sh && tools/gpu_batch.sh check check-gemm
#   source .gpu/setup.sh && tools/gpu_batch.sh sweep
#   tools/gpu_batch.sh --help          # the phases (no GPU needed)
#
# Phases run in the order given; every file goes to $OUT (the folder the device returns):
#
#   check          runtime kernels (tools/gpu_check_runtime.py), every copy / group / PDL
#                  example and the attention example against torch, the ts-runtime GPU tests
#                  -> runtime.log, examples.log, attention.log, pytest.log
#   check-gemm     the GEMM example in several configurations (bf16, FP8), its PDL check, the
#                  GEMM edge-shape tests                       -> gemm.log, edge.log
#   compat         bench/compat_gpu.py: run_gpu() of every compat program  -> compat.log
#   fuzz           bench/fuzz_gpu.py: GPU schedule fuzzing     -> fuzz.log
#   bench          copy speed, persistent kernels, NVIDIA's tutorials, PDL, bench/gemm.py,
#                  the torch operator's and a GEMM launch's host cost  -> bench.log
#   attention      bench/attention.py (math order too, CuTe FMHA example column)
#                                                              -> attention_bench.log
#   power          bench/gemm_power.py, bf16 and FP8           -> power.log
#   sweep          bench/gemm_sweep.py: FP8 (tensor scales) and bf16 (CUDA-graph timing too,
#                  CuTe example column), three passes each     -> fp8.log, sweep.log
#   sweep-fp16     the same sweep in fp16                      -> sweep_fp16.log
#   sweep-rowwise  the FP8 sweep with rowwise scales           -> fp8_rowwise.log
#   tune-part1     the GEMM tuner (examples/hopper/gemm_tune.py) on the sweep's first half,
#   tune-part2     or its second, bf16 then FP8 -> tune.log, gemm_table_partN.json,
#                  gemm_table_fp8_partN.json
#
# Every run also writes gpu.txt (the GPU and the commit). Each command's log entry is a line
# "== COMMAND", the command's last 80 lines of output, then "rc=STATUS took=Ns limit=Ns".
# Commands run one after another (timings must not share the GPU), each under its own time
# limit, and a failing one does not stop the others. Phases given together share the call's
# GPU_BATCH_BUDGET_S (570 s): a command left less than 10 s is skipped, and its log says so.
# On an H100, sweep takes about 340 s (FP8 70 s, bf16 270 s) and fuzz about 170 s.
#
# The CuTe example columns need tools/fetch_cute_example.sh / tools/fetch_cute_fmha.sh to have
# put CUTLASS's files under .gpu/cute_example/ (else the column says it is absent); bench runs
# NVIDIA's tutorials from $TS_TUTORIALS_DIR, or .gpu/tutorials when that exists.
# After both tune phases, on any machine:
#   python3 examples/hopper/gemm_tune.py --combine gemm_table_part1.json gemm_table_part2.json \
#     gemm_table_fp8_part1.json gemm_table_fp8_part2.json -o examples/hopper/gemm_table.json
# Several calls' sweeps are judged together with bench/gemm_sweep.py --from-logs A/sweep.log ...
set -u

usage() {
  sed -n '2,/^set -u$/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

if [ $# -eq 0 ]; then
  usage >&2
  exit 2
fi
case "$1" in -h | --help)
  usage
  exit 0
  ;;
esac

CUTE_GEMM=.gpu/cute_example/dense_gemm_persistent.py

# run LOG LIMIT CMD...: append CMD's output (its last 80 lines) and exit status to $out/LOG.
run() {
  local log="$1" limit="$2" left=$((deadline - SECONDS))
  shift 2
  if ((left < limit)); then limit=$left; fi
  if ((limit < 10)); then
    echo "== $*"$'\n'"skipped: the call's time is spent" >> "$out/$log"
    return
  fi
  {
    echo "== $*"
    local t0=$SECONDS
    timeout "$limit" "$@" > /tmp/gpu_batch_cmd.log 2>&1
    local rc=$?
    tail -n 80 /tmp/gpu_batch_cmd.log
    echo "rc=$rc took=$((SECONDS - t0))s limit=${limit}s"
  } >> "$out/$log"
}

phase_check() {
  run runtime.log 120 python3 tools/gpu_check_runtime.py
  for args in grid_stride_copy.py tma_copy.py "tma_copy.py --variant tma_store" \
    persistent_copy.py varlen_copy.py "varlen_copy.py --scheduler dynamic" bias_act_copy.py \
    debug_hang.py pdl_pair.py merge_copy.py fork.py fork_gemm.py merge_gemm.py \
    "fork_gemm.py --dtype fp16" "merge_gemm.py --dtype fp16"; do
    # shellcheck disable=SC2086  # the example's options are words
    run examples.log 120 python3 examples/hopper/$args
  done
  for args in "--b 1 --s 1000 --h 2 --d 128" \
    "--b 2 --s 777 --h 4 --hkv 2 --d 64 --causal --dtype fp16" \
    "--b 1 --s 333 --h 2 --d 128 --causal --stagger" \
    "--varlen 8 --b 1 --s 3000 --h 4 --d 128 --causal --kv-skew" \
    "--varlen 5 --b 1 --s 2000 --h 4 --hkv 2 --d 256 --dtype fp16 --causal"; do
    # shellcheck disable=SC2086
    run attention.log 120 python3 examples/hopper/attention.py $args --iters 3
  done
  run pytest.log 300 python3 -m pytest -q -p no:cacheprovider \
    packages/ts-runtime/tests/test_runtime_torch_op.py \
    packages/ts-runtime/tests/test_runtime_harness.py
}

phase_check_gemm() {
  for args in "" "--tile 128x128 --cluster 2x1" "--tile 64x128 --kernel pingpong" \
    "--scheduler dynamic" "--layout nt --alpha 0.5 --beta 1 --bias"; do
    # shellcheck disable=SC2086
    run gemm.log 150 python3 examples/hopper/gemm.py --mnk 1003 1501 707 $args
  done
  # FP8 rows must be 16-byte aligned: K a multiple of 16.
  for args in "--scale tensor" "--scale rowwise --cluster 2x1"; do
    # shellcheck disable=SC2086
    run gemm.log 150 python3 examples/hopper/gemm.py --mnk 1003 1501 704 --dtype e4m3 $args
  done
  run gemm.log 120 python3 tools/gemm_pdl_check.py
  run edge.log 400 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_edge_shapes.py
}

phase_compat() {
  run compat.log 540 python3 bench/compat_gpu.py
}

phase_fuzz() {
  run fuzz.log 560 python3 bench/fuzz_gpu.py --valid 500 --broken 500 --jobs 14
}

phase_bench() {
  local launch=(python3 bench/launch_cost.py)
  if [ -f "$CUTE_GEMM" ]; then launch+=(--cute-example "$CUTE_GEMM"); fi
  run bench.log 150 python3 bench/copy_speed.py
  run bench.log 120 python3 bench/persistent.py
  run bench.log 150 python3 bench/tutorials.py
  run bench.log 90 python3 bench/pdl.py
  run bench.log 120 python3 bench/gemm.py
  run bench.log 90 python3 bench/torch_op.py --rounds 3 --iters 1000
  run bench.log 90 "${launch[@]}"
}

phase_attention() {
  run attention_bench.log 540 python3 bench/attention.py --stagger
}

phase_power() {
  run power.log 200 python3 bench/gemm_power.py
  run power.log 200 python3 bench/gemm_power.py --dtype e4m3 --scale tensor
}

phase_sweep() {
  run fp8.log 150 python3 bench/gemm_sweep.py --dtype e4m3 --scale tensor --passes 3
  run sweep.log 380 python3 bench/gemm_sweep.py --graph --passes 3 --cute-example "$CUTE_GEMM"
}

phase_sweep_fp16() {
  run sweep_fp16.log 380 python3 bench/gemm_sweep.py --dtype fp16 --graph --passes 3 \
    --cute-example "$CUTE_GEMM"
}

phase_sweep_rowwise() {
  run fp8_rowwise.log 150 python3 bench/gemm_sweep.py --dtype e4m3 --scale rowwise --passes 3
}

# tune PART: the tuner on that half of the sweep's shapes, graph timing (it picks kernels, not
# launch paths). A tuner stopped by its time limit writes no table: --budget-s makes it write
# the shapes it timed and name the ones it left out (tune those with --mnk in another call).
tune() {
  run tune.log 400 python3 examples/hopper/gemm_tune.py --shapes sweep --dtype bf16 \
    --part "$1/2" --graph --jobs 15 --budget-s 360 -o "$out/gemm_table_part$1.json"
  run tune.log 150 python3 examples/hopper/gemm_tune.py --shapes sweep --dtype e4m3 \
    --scale tensor --part "$1/2" --graph --jobs 15 --budget-s 120 \
    -o "$out/gemm_table_fp8_part$1.json"
}
phase_tune_part1() { tune 1; }
phase_tune_part2() { tune 2; }

# Every phase name given must exist before any GPU time is spent.
for phase in "$@"; do
  if [[ $phase == *_* ]] || ! declare -F "phase_${phase//-/_}" > /dev/null; then
    echo "gpu_batch.sh: unknown phase '$phase' (tools/gpu_batch.sh --help lists them)" >&2
    exit 2
  fi
done
out="${OUT:?gpu_batch.sh: set OUT to the output folder (the device machine sets it)}"
mkdir -p "$out"
if [ -z "${TS_TUTORIALS_DIR:-}" ] && [ -d .gpu/tutorials ]; then
  export TS_TUTORIALS_DIR="$PWD/.gpu/tutorials"
fi

# A device call ends at 600 s and keeps what was written by then: every command's limit is cut
# to what is left of GPU_BATCH_BUDGET_S (default 570) from the start, so that the last one is
# stopped in time to write its log rather than killed with the call (set it lower on a fresh
# machine, where setup.sh spends part of the call installing the DSL).
deadline=$((SECONDS + ${GPU_BATCH_BUDGET_S:-570}))
{
  nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm --format=csv
  git rev-parse HEAD 2> /dev/null || echo "commit: unknown (no .git)"
  echo "phases: $*"
} > "$out/gpu.txt" 2>&1
for phase in "$@"; do
  "phase_${phase//-/_}"
done
