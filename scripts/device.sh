#!/usr/bin/env bash
# The one script for the GPU device machine (run it there through the device tool, carrying .devdeps/):
#   builds softmaxkit for the H200, runs the whole test suite (GPU tests included), compute-sanitizer memcheck and
#   racecheck over the GPU tests, the demo, and the benchmarks; prints a short table last.
# Logs go to $OUT (the device tool brings that folder back) or ./out.
#   usage: scripts/device.sh [steps...]   steps:
#     build test sanitize demo bench compare python accuracy tune (default: build test sanitize demo bench compare
#       python accuracy)
#     the lead's integrated run: final (= final-tests final-san final-compare, each also a step of its own)
#     one area at a time, built here: prefill wgmma ce decode lce; fair9 (ours beside torch SDPA, interleaved)
#   Past sessions' one-off A/B steps (the timings behind each shipped rule; most ran on binaries carried as
#   build/<name>-bin.tar.xz, which do not outlive a session) were removed on 2026-11-30 once their results were in
#   docs/perf-notebook.md: `git show 5c440bc:scripts/device.sh` has sessions 1-12's last ones (cefused excess
#   decode-mma decode-r2 decode-r3 logterm rowpipe warpdiet fewrows fewrows-flush ce10 ce11 ce12 lse10 vocab10 dec10
#   sbwd11 sbwd12 short10 pfx10 dec11 short11 one11 mid11 short12 one12 dec12 mid12), `git show afd6839:...` the
#   older ones (decode-r4 wideblock bw16 fixcost ... short9).
#   Sessions 14-15's (short14 pack14 tma14 dec14 dec15 split15 pfx15 short15) were removed on 2026-12-01: `git show
#   ec0a96e:scripts/device.sh` has them.
#   Session 16's (short16 bwd16 split16 dec16 pfx16) were removed at the end of session 17: `git show
#   c97214a:scripts/device.sh` has them.
#   Session 17's (split17 lse17 bwd17 blk17 dec17 fold17) were removed at the start of session 18: `git show
#   93cf0c9:scripts/device.sh` has them.
#   Session 18's (lse18 split18 short18 short18b; bwd18's went in its own commit) and session 19's few19 and lead19
#   were removed in session 19: `git show 2193d3f:scripts/device.sh` has them. prep20's next20 (run in session 20)
#   was removed then: `git show cf74f41:scripts/device.sh` has it; session 20's s20tools (tune_reg20 / tune_bwd20,
#   run on the final build) with its tools: `git show 85cae7c:scripts/device.sh`. Session 21's s21a-s21d (the odd
#   grid beside torch, odd21's A/B and tests on carried binaries): `git show 9e09197:scripts/device.sh`.
#   A new one-off A/B step: binaries built off the device, carried as build/<name>-bin.tar.xz; open it with
#   `carried`, call `keep_logs` after each step, close with `end_carried` (defined below, after run_step); tests run
#   side by side with `bg_step` and are counted with `bg_tally`.
#   python: pip-installs the Python package (CUDA on) with the image's scikit-build-core and nanobind, then runs
#   tests/python, GPU tests (torch, CuPy, JAX) included; it needs no other step.
#   accuracy: docs/accuracy.md's table on every GPU kernel path ($OUT/accuracy-gpu.md) and our error beside torch's on
#   the same inputs ($OUT/vs-torch.md, tests/conformance/vs_torch.py); needs build.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
steps=("$@")
((${#steps[@]})) || steps=(build test sanitize demo bench compare python accuracy)
want() { [[ " ${steps[*]} " == *" $1 "* ]]; }
export PATH=/usr/local/cuda/bin:$PATH
jobs=$(nproc)
summary=()
failed=0
run_step() {  # run_step NAME COMMAND...: logs to $OUT/NAME.log, shows its tail, records status and time
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || failed=$((failed + 1))
  tail -n 25 "$OUT/$name.log"
  summary+=("$(printf '%-12s %-8s %5ss' "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAIL:$rc")" $((SECONDS - t0)))")
  return $rc
}
# Parts run side by side (review F21):
#   bg_step NAME COMMAND...: COMMAND in the background, its output in $OUT/NAME.log and "exit STATUS NAME" that log's
#     last line.
#   bg_tally: waits for every background job, then appends the last line of each bg_step log started since the last
#     bg_tally to the summary, in the order started, and counts each that is not "exit 0 ..." as a failed step.
bg_logs=()
bg_step() {
  local name=$1; shift
  ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  bg_logs+=("$OUT/$name.log")
}
bg_tally() {
  local f last
  wait
  for f in "${bg_logs[@]}"; do
    last=$(tail -n 1 "$f" 2>/dev/null)
    summary+=("$last")
    [[ "$last" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  bg_logs=()
}

# A one-off A/B step's opening and closing, shared by the steps below. Binaries built off the device for sm_90a travel
# as a tarball (carry it with .devdeps), so such a step builds nothing here.
#   carried NAME TARBALL: unpacks TARBALL into /tmp/NAME (the folder is left in $bin), puts its lib/ and the image's
#     cuDNN on LD_LIBRARY_PATH, and sends the logs to /tmp/o ($outer keeps the real $OUT: only 8 files come back).
#   keep_logs PREFIX: after each step (a call cut short still brings back what ran): every PREFIX-*.log as a .txt, a
#     summary of the test logs PREFIXx-*.log (pass/fail lines, sanitizer summaries), and a tarball of all the logs.
#   end_carried: $OUT back to the real one.
carried() {
  outer=$OUT
  OUT=/tmp/o && mkdir -p "$OUT"
  bin=/tmp/$1 && mkdir -p "$bin" && tar -xJf "$2" -C "$bin"
  local cudnn
  cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${cudnn:+$cudnn:}$bin/lib"
}
keep_logs() {
  local prefix=$1 f
  for f in "$OUT/$prefix"-*.log; do [ -f "$f" ] && cp "$f" "$outer/$(basename "${f%.log}").txt"; done
  { printf '%s\n' "${summary[@]}"
    grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:|WORSE" "$OUT/${prefix}x"-*.log \
      2>/dev/null | head -n 200; } >"$outer/$prefix-summary.txt"
  tar -czf "$outer/$prefix-logs.tgz" -C "$OUT" . 2>/dev/null
}
end_carried() { OUT=$outer; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -1
  git log -1 --format='commit %h %s' 2>/dev/null; date -u; } | tee "$OUT/machine.txt"

if want build; then
  [ -d .devdeps ] || echo "warning: .devdeps/ missing; run scripts/stage-device-deps.sh here and carry it"
  run_step configure cmake --preset default
  run_step build cmake --build --preset default --parallel "$jobs" || { printf '%s\n' "${summary[@]}"; exit 1; }
fi
if want test; then
  run_step test ctest --preset default --parallel 8 --timeout 900
  grep -E "tests passed|Skipped|Failed" "$OUT/test.log" | tail -n 20
fi
if want sanitize; then
  for tool in memcheck racecheck; do
    run_step "san-$tool" compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 build/default/tests/test_cuda
    # The softmax kernels' suite, every path, on rows of up to 4097 elements (SMK_GPU_TEST_SMALL) to bound the time.
    run_step "san-$tool-softmax" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool "$tool" --report-api-errors no \
      --error-exitcode 9 build/default/tests/test_cuda_softmax
  done
fi
# tune: the softmax kernels under explicit launch configurations (tests/cuda/softmax/tune_softmax.cpp), the
# measurements behind the dispatcher's thresholds.
# prefill: attention_forward's tensor-core kernel (issue 7) on its own: builds just its targets (no `build` needed),
# runs its GPU test, tune_prefill (every built variant and the levers' ablation on the issue's rows) and torch's SDPA
# backends on the same rows (scripts/bench_sdpa.py, their numbers kept in sdpa.json), then the test under
# compute-sanitizer memcheck and racecheck.
if want prefill; then
  [ -f build/default/build.ninja ] || run_step configure cmake --preset default
  run_step prefill-build cmake --build --preset default --parallel "$jobs" --target test_cuda_prefill tune_prefill
  run_step prefill-test build/default/tests/test_cuda_prefill
  run_step prefill-tune build/default/tests/tune_prefill --json "$OUT/tune_prefill.json"
  run_step prefill-sdpa python3 scripts/bench_sdpa.py --ours "$OUT/tune_prefill.json" --out "$OUT/prefill_vs_sdpa.md" \
    --save-sdpa "$OUT/sdpa.json"
  # After the timings: memcheck over the whole test (every variant, varlen, rows with no key); racecheck, slower,
  # over the cases that run every variant through several key tiles; each bounded in time.
  run_step prefill-memcheck timeout 70 compute-sanitizer --tool memcheck --error-exitcode 9 \
    build/default/tests/test_cuda_prefill
  run_step prefill-racecheck timeout 45 compute-sanitizer --tool racecheck --error-exitcode 9 \
    build/default/tests/test_cuda_prefill --gtest_filter=*BatchInvariant*:*Configuration*
fi
# wgmma: the prefill kernel on wgmma (issue 7 stage 2, src/cuda/attention/prefill_wgmma.cu) beside stage 1 and SDPA:
# builds just its targets, prints the kernel's registers and counts its HGMMA (a wgmma kernel compiled to HMMA is on
# the wrong path); times every variant of both kernels but the TMA path (tune_prefill; SMK_TUNE_ROWS=issue for the
# issue's four rows only) and torch's SDPA backends on the same rows; runs the whole prefill test; then times the TMA
# path alone (a fault there, which ends a process's CUDA context, costs only its own columns); then memcheck and
# racecheck over the wgmma tests. SMK_WGMMA_QUICK=1 stops after the wgmma tests and the first timing.
if want wgmma; then
  [ -f build/default/build.ninja ] || run_step configure cmake --preset default
  run_step wgmma-build cmake --build --preset default --parallel "$jobs" --target test_cuda_prefill tune_prefill
  obj=build/default/CMakeFiles/softmaxkit.dir/src/cuda/attention/prefill_wgmma.cu.o
  { cuobjdump -res-usage "$obj" | grep -A1 prefill_wgmma_kernel | grep -o "Function [^:]*\|REG:[0-9]*\|STACK:[0-9]*";
    echo "HGMMA: $(cuobjdump -sass "$obj" | grep -c HGMMA)  HMMA: $(cuobjdump -sass "$obj" | grep -c ' HMMA')"; } \
    >"$OUT/wgmma-sass.txt" 2>&1
  tail -n 3 "$OUT/wgmma-sass.txt"
  if [ -n "${SMK_WGMMA_QUICK:-}" ]; then
    run_step wgmma-test timeout 150 build/default/tests/test_cuda_prefill --gtest_filter='*Wgmma*:*ClearErrors*'
    run_step wgmma-tune timeout 200 build/default/tests/tune_prefill --json "$OUT/tune_prefill.json"
  else
    run_step wgmma-tune env SMK_TUNE_TMA=0 timeout 120 build/default/tests/tune_prefill --json "$OUT/tune_prefill.json"
    run_step wgmma-sdpa timeout 120 python3 scripts/bench_sdpa.py --ours "$OUT/tune_prefill.json" \
      --out "$OUT/prefill_vs_sdpa.md" --save-sdpa "$OUT/sdpa.json"
    run_step wgmma-test timeout 150 build/default/tests/test_cuda_prefill
    run_step wgmma-tune-tma env SMK_TUNE_TMA=only timeout 60 build/default/tests/tune_prefill \
      --json "$OUT/tune_prefill_tma.json"
    run_step wgmma-memcheck timeout 35 compute-sanitizer --tool memcheck --error-exitcode 9 \
      build/default/tests/test_cuda_prefill --gtest_filter='*WgmmaSameBits*:*ClearErrors*'
    run_step wgmma-racecheck timeout 20 compute-sanitizer --tool racecheck --error-exitcode 9 \
      build/default/tests/test_cuda_prefill --gtest_filter='*WgmmaSameBits*'
  fi
fi
# ce: cross-entropy (issue 5) on its own: builds just its targets (no `build` needed), runs its GPU test, the bench's
# cross-entropy rows at the issue's shapes, torch's F.cross_entropy beside them (scripts/compare_torch_ce.py), then
# the test under compute-sanitizer memcheck (SMK_GPU_TEST_SMALL: rows of up to 8193, no 8.6 GB case; 150 s at most).
if want ce; then
  [ -f build/default/build.ninja ] || run_step configure cmake --preset default
  run_step ce-build cmake --build --preset default --parallel "$jobs" --target test_cuda_cross_entropy softmaxkit_cli
  run_step ce-test build/default/tests/test_cuda_cross_entropy
  run_step ce-bench build/default/apps/softmaxkit/softmaxkit bench --op ce --shape qwen-vocab-4096,llama2-vocab-8192 \
    --dtype f32,bf16 --no-cudnn --format table --json "$OUT/bench_ce.json"
  run_step ce-torch python3 scripts/compare_torch_ce.py --bench-json "$OUT/bench_ce.json" --out "$OUT"
  run_step ce-memcheck timeout 150 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 build/default/tests/test_cuda_cross_entropy
fi
# decode: decode attention (issue 8) on its own: builds just its targets (no `build` needed), runs its GPU test, the
# timing on the issue's rows (tests/cuda/attention/bench_decode.cpp), the test under compute-sanitizer memcheck (the
# batch-invariance case left out for time: it checks bits, not memory), and torch SDPA's FLASH and cuDNN backends
# beside our timings (scripts/bench_decode.py).
if want decode; then
  [ -f build/default/build.ninja ] || run_step configure cmake --preset default
  run_step decode-build cmake --build --preset default --parallel "$jobs" --target test_cuda_decode bench_decode
  run_step decode-test build/default/tests/test_cuda_decode
  run_step decode-bench build/default/tests/bench_decode --json "$OUT/bench_decode.json"
  run_step decode-memcheck timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    build/default/tests/test_cuda_decode --gtest_filter=-*BatchInvariant*
  run_step decode-sdpa python3 scripts/bench_decode.py --ours "$OUT/bench_decode.json" --out "$OUT/decode_vs_sdpa.md"
fi
# The decode steps' binaries: prebuilt ones from $SMK_DEC_BIN (built on the workstation for sm_90a and carried), else
# just test_cuda_decode and bench_decode built here. Sets decbin to their folder.
decode_bins() {
  if [ -n "${SMK_DEC_BIN:-}" ]; then
    decbin=$SMK_DEC_BIN
  else
    [ -f build/default/build.ninja ] || run_step configure cmake --preset default
    run_step decode-build cmake --build --preset default --parallel "$jobs" --target test_cuda_decode bench_decode
    decbin=build/default/tests
  fi
}
# lce: linear cross-entropy (issue 5) on its own, ordered to fit a 270 s call: build just its targets (the GPU test
# and the C entry point scripts/compare_torch_lce.py loads with ctypes), the GPU test, the comparison with torch's
# matmul + F.cross_entropy at the issue's row and a smaller one (time, peak memory, errors against float64), then
# memcheck last on the GPU test (60 s cap).
if want lce; then
  [ -f build/default/build.ninja ] || run_step configure cmake --preset default
  run_step lce-build cmake --build --preset default --parallel "$jobs" --target test_cuda_linear_cross_entropy \
    smk_lce_capi || { printf '%s\n' "${summary[@]}"; exit 1; }
  run_step lce-test timeout 60 build/default/tests/test_cuda_linear_cross_entropy
  run_step lce-torch timeout 120 python3 scripts/compare_torch_lce.py --lib build/default/tests/libsmk_lce_capi.so \
    --out "$OUT"
  run_step lce-memcheck timeout 60 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    build/default/tests/test_cuda_linear_cross_entropy
fi
if want tune && [ -x build/default/tests/tune_softmax ]; then
  run_step tune build/default/tests/tune_softmax
fi
if want demo; then
  run_step demo build/default/apps/softmaxkit/softmaxkit demo
fi
# bench: every built-in shape, f32 and bf16, every kernel path and cuDNN (SMK_BENCH_ARGS replaces "--path all", e.g.
# SMK_BENCH_ARGS="--shape issue --path auto"). compare: torch eager and torch.compile beside the bench's numbers
# (scripts/compare_torch.py; SMK_COMPARE_ARGS replaces its default compile budget) and the bandwidth plot. The copy
# of the tree here has no .git: set SMK_COMMIT=<hash> in the run's command to name the commit in their titles.
# cuDNN, the bench's anchor, may come from a Python wheel whose folder the loader does not search by itself.
cudnn_lib=$(sed -n 's/^SOFTMAXKIT_CUDNN_LIBRARY:INTERNAL=//p' build/default/CMakeCache.txt 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH="$(dirname "$cudnn_lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if want bench && [ -x build/default/apps/softmaxkit/softmaxkit ] && build/default/apps/softmaxkit/softmaxkit bench --help >/dev/null 2>&1; then
  # shellcheck disable=SC2086  # the extra flags are meant to split into words
  run_step bench build/default/apps/softmaxkit/softmaxkit bench --format table --json "$OUT/bench.json" ${SMK_BENCH_ARGS:---path all}
fi
if want compare; then
  # The plot first: it takes seconds, the comparison minutes (compare.md is rewritten after every case).
  run_step compare bash -c "python3 scripts/plot_bench.py '$OUT/bench.json' --out '$OUT/bench_bandwidth.png'; PYTHONUNBUFFERED=1 python3 scripts/compare_torch.py --bench-json '$OUT/bench.json' --out '$OUT' ${SMK_COMPARE_ARGS:---compile-budget-s 300}"
fi
if want python; then
  # No package registry here: build against the image's scikit-build-core and nanobind, without build isolation.
  export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
  python3 -m pip list 2>/dev/null | grep -iE "^(torch|nanobind|scikit.build.core|cupy\S*|jax|numpy|scipy|ml.dtypes) "
  run_step py-install python3 -m pip install -v --no-build-isolation --no-deps --no-index . &&
    run_step py-test python3 -m pytest tests/python -q -rs -p no:cacheprovider
fi

if want accuracy; then
  # The accuracy report measures every GPU path against the long-double oracle (it exits 1 if any output exceeds its
  # gate, docs/semantics.md) and dumps the inputs and the dispatcher's outputs for the comparison with torch.
  acc_dump=$(mktemp -d)
  run_step accuracy build/default/tests/conformance/accuracy_report --gpu --out "$OUT/accuracy-gpu.md" --dump "$acc_dump"
  run_step vs-torch python3 tests/conformance/vs_torch.py "$acc_dump" --out "$OUT/vs-torch.md"
  rm -rf "$acc_dump"
fi

# final: the lead's integrated run in one call (~9.5 minutes): the build, every GPU test but the large ones, the
# accuracy report beside torch, memcheck over the softmax suite (small rows), the bench (issue grid and sweep, cuDNN
# beside ours), the plot and the comparison with torch. Each step is capped so that one slow step cannot take the rest;
# the comparison ends by SMK_FINAL_DEADLINE_S seconds into the script (default 570, under the device's 600 a call),
# and SMK_FINAL_COMPILE_S caps torch.compile's share of it.
# final = final-tests + final-san + final-compare. Split across back-to-back calls (the second finds the first's build on the
# still-warm machine and only relinks), the comparison gets a call of its own instead of what the suite leaves.
if want final || want final-tests || want final-san || want final-compare || want san19; then
  run_step configure cmake --preset default
  run_step build timeout 240 cmake --build --preset default --parallel "$jobs" || { printf '%s\n' "${summary[@]}"; exit 1; }
fi
if want final || want final-tests; then
  # SMK_FINAL_CTEST_R narrows the suite to the tests a late fix touched (ctest -R); SMK_FINAL_SKIP_ACCURACY=1 skips
  # the accuracy tables (for such a re-run after an unchanged-arithmetic fix).
  # The suite's cap (SMK_FINAL_CTEST_S): session 20's suite took 299 s of the 300 it had, so 360 (the call then needs
  # ~560 s of its 600 cold: configure 6, build 93, the suite, accuracy 83, vs-torch 16).
  run_step test timeout "${SMK_FINAL_CTEST_S:-360}" ctest --preset default -L gpu -LE gpu-large --parallel 6 --timeout 240 \
    ${SMK_FINAL_CTEST_R:+-R "$SMK_FINAL_CTEST_R"}
  grep -E "tests passed|Failed|\*\*\*" "$OUT/test.log" | tail -n 20
  if [ "${SMK_FINAL_SKIP_ACCURACY:-0}" != 1 ]; then
    acc_dump=$(mktemp -d)
    run_step accuracy timeout 110 build/default/tests/conformance/accuracy_report --gpu --out "$OUT/accuracy-gpu.md" --dump "$acc_dump"
    run_step vs-torch timeout 60 python3 tests/conformance/vs_torch.py "$acc_dump" --out "$OUT/vs-torch.md"
    rm -rf "$acc_dump"
  fi
fi
# final-san: the sanitizers and cross-entropy's accuracy beside torch, a call of their own since session 10 (the
# suite, the accuracy tables and the sanitizers together outgrew one call's 600 s).
if want final || want final-san; then
  run_step san-memcheck-softmax env SMK_GPU_TEST_SMALL=1 timeout 45 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 build/default/tests/test_cuda_softmax
  # Session 8's new kernels and launch rules, small: block_per_row's rows-ahead / re-read kernels, the warp grids
  # (capped: every block walks many row groups), split_stream; racecheck on cluster_stage's refilled stages.
  # The sanitizers on one test binary of the build (build/default/tests/NAME, its further arguments after it).
  san_mc() {
    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "build/default/tests/$1" "${@:2}"
  }
  san_rc() { compute-sanitizer --tool racecheck --error-exitcode 9 "build/default/tests/$1" "${@:2}"; }
  san_new() {
    local t
    for t in test_cuda_block_row test_cuda_warp_row; do
      san_mc "$t" || return 9
    done
    san_mc test_cuda_few_rows --gtest_filter='*Stream*:*NormalizeHints*:*L2Prefetch*' || return 9
    san_rc test_cuda_cluster_stage --gtest_filter='*StagesRefill*' || return 9
    # Session 9: the Triton-style mid-row backward, the fused cross-entropy's dependent launches, the prefill's trimmed
    # diagonal tile and causal schedule.
    san_mc test_cuda_backward_reread || return 9
    san_mc test_cuda_cross_entropy --gtest_filter='*Pdl*:*TargetEntry*:*RowLoop*' || return 9
    san_mc test_cuda_prefill --gtest_filter='*CausalScheduleAndTrim*' || return 9
    # Session 10: row_loop (forward and backward; racecheck on its shared chunk states), the decode's TMA tiles. The
    # packed 16-bit warp kernels and lse_stream are in test_cuda_warp_row / test_cuda_block_row above.
    san_mc test_cuda_row_loop \
      --gtest_filter="${SMK_SAN_ROW_LOOP:-GpuRowLoop.BackwardBitwiseTheThreeKernels:GpuRowLoop.One*Case}" || return 9
    san_rc test_cuda_row_loop --gtest_filter="${SMK_RACE_ROW_LOOP:-GpuRowLoop.One*Case}" || return 9
    san_mc test_cuda_decode --gtest_filter='*Tma*' || return 9
    # Session 11: the dense f32 warp backward (test_cuda_warp_backward), the dense forward (in test_cuda_warp_row
    # above), split_row's hinted normalising kernel (*NormalizeHints* above), the cross-entropy row loop (*RowLoop*).
    san_mc test_cuda_warp_backward || return 9
    # Session 12: split_row's L2 prefetch (*L2Prefetch* above), the 16-bit dense warp forward at 16 a lane and the
    # packed backward at 8 blocks (in test_cuda_warp_row / test_cuda_warp_backward above), the re-read backward's forms
    # (test_cuda_backward_reread above), the decode's TMA by the grid (*Tma* above); racecheck on the cross-entropy
    # row loop's staged steps (shared memory written in pass 1, read in pass 2).
    san_rc test_cuda_cross_entropy --gtest_filter='*StagedSameBits*' || return 9
    # Session 14: split_row's chunks staged by bulk copies (tma14), the dy-shared backward block with y packed
    # (pack14; the rest of test_cuda_warp_backward is in its memcheck above), the f32 occupancy kernel (short14, in
    # test_cuda_warp_row above), the decode's cp.async issue (dec14), the no-key / sink and merge fixes (lead).
    san_mc test_cuda_few_rows --gtest_filter='*TmaChunks*:*TmaRule*' || return 9
    san_rc test_cuda_few_rows --gtest_filter='*TmaChunks*' || return 9
    san_rc test_cuda_warp_backward --gtest_filter='*SharedPacked*' || return 9
    san_mc test_cuda_decode \
      --gtest_filter='*TmaTiles*:*CausalBand*:*IssueLengths*:*BadInputs*:*NoVisibleKey*' || return 9
    san_rc test_cuda_decode --gtest_filter='*CausalBand*' || return 9
    san_mc test_cuda_prefill --gtest_filter='*NoVisibleKey*' || return 9
    san_mc test_cuda --gtest_filter='*Merge*' || return 9
    # Session 15: split_row's lean chunk arithmetic and the TMA kernel's guards (split15), the decode's in-split fold
    # of an underflowing group (dec15), the prefill's P·V under the softmax (pfx15; memcheck caught pfx14's race), the
    # 16-bit occupancy forward (short15, in test_cuda_warp_row above).
    san_mc test_cuda_few_rows --gtest_filter='*LeanChunk*:*TmaStaysOff*' || return 9
    san_rc test_cuda_few_rows --gtest_filter='*LeanChunk*' || return 9
    san_mc test_cuda_decode --gtest_filter='*UnderflowingPart*' || return 9
    san_rc test_cuda_decode --gtest_filter='*UnderflowingPart*' || return 9
    san_mc test_cuda_prefill --gtest_filter='*WgmmaPvOverlap*' || return 9
    san_rc test_cuda_prefill --gtest_filter='*WgmmaPvOverlapGivesTheSameBits*' || return 9
    # Session 16: split_row's f32 normalising pass in whole tiles (split16), the 1×16M softmax backward's streaming
    # stores (bwd16; its memcheck is test_cuda_warp_backward's above), the 16-bit log ops on the packed kernel at the
    # occupancy grid (short16, in test_cuda_warp_row above), the prefill's form 4 (pfx16, *WgmmaPvOverlap* above).
    san_mc test_cuda_few_rows --gtest_filter='*NormalizeWholeTile*:*BackwardSplitRow*' || return 9
    san_rc test_cuda_few_rows --gtest_filter='*NormalizeWholeTile*' || return 9
    san_rc test_cuda_warp_backward --gtest_filter='*SplitStreaming*' || return 9
    # Session 17: lse_stream's chunk kernel for 16-bit logsumexp / state past 32768 (lse17), block_row's f32 rows
    # lane-staged (blk17; memcheck in test_cuda_block_row above), split_row backward's 16-bit sums at 3 blocks and
    # vector pass (bwd17; memcheck in test_cuda_warp_backward above), the decode's wide q loads (dec17).
    san_mc test_cuda_lse_stream || return 9
    san_rc test_cuda_lse_stream --gtest_filter='*AgainstTheReference*:*RowAlone*' || return 9
    san_rc test_cuda_block_row --gtest_filter='*LaneStagedF32*' || return 9
    san_rc test_cuda_warp_backward --gtest_filter='*SplitSumsBounds*' || return 9
    san_mc test_cuda_decode --gtest_filter='*TweaksGiveTheDefaultBits*' || return 9
    san_rc test_cuda_decode --gtest_filter='*TweaksGiveTheDefaultBits*' || return 9
    # Session 18: split_row's running chunk pass for 16-bit rows past 32 chunks (split18), lse_stream's chunk order in
    # one cluster launch and merged a warp a row (lse18; memcheck in test_cuda_lse_stream above), the bf16 occupancy
    # rule at 64 (short18, in test_cuda_warp_row above). Session 19: split_row's one launch at two chunks a block
    # (few19), the running pass under options and on pitched rows (review18 F1 / F3).
    san_mc test_cuda_few_rows --gtest_filter='*RunningChunks*:*OneLaunchMulti*' || return 9
    san_rc test_cuda_few_rows --gtest_filter='*RunningChunks*:*OneLaunchMulti*' || return 9
    san_rc test_cuda_lse_stream --gtest_filter='*FormsBitwise*:*SpecialRowsEveryForm*' || return 9
    # Session 20: f32 softmax rows of 45056..65536 on split_row (next20), lse_stream's L16 on 16-bit rows to 6144
    # (next20; memcheck in test_cuda_block_row / test_cuda_lse_stream above), f32 T128 at 1536 threads an SM (reg21;
    # memcheck in test_cuda_lse_stream above), the f32 2-D backward's load hints (bwd21; memcheck in
    # test_cuda_warp_backward above).
    san_mc test_cuda_cluster_stage --gtest_filter='*F32SoftmaxRowsOnSplitRow*:*DispatcherRule*' || return 9
    san_rc test_cuda_block_row --gtest_filter='*DispatchedReadOnlyRows*' || return 9
    san_rc test_cuda_lse_stream --gtest_filter="${SMK_RACE_REG21:-*Reg21*}" || return 9
    san_rc test_cuda_warp_backward --gtest_filter="${SMK_RACE_BWD21:-*EvictLast*}" || return 9
    # Session 21: common.cuh's shifted loads and stores of rows off the vector boundary (odd21), every path and op
    # (test_cuda_common); the block_row kShift instances are in test_cuda_block_row's memcheck above too.
    san_mc test_cuda_common || return 9
    san_rc test_cuda_common
  }
  run_step san-new env SMK_GPU_TEST_SMALL=1 SMK_ROW_LOOP_FEW=1 timeout "${SMK_SAN_NEW_S:-300}" bash -c "$(declare -f san_mc san_rc san_new); san_new"
  # Cross-entropy's accuracy beside torch's (issue 5: never less accurate than PyTorch), on the build's C entry.
  run_step vs-torch-ce timeout 60 python3 scripts/vs_torch_ce.py --lib build/default/tests/libsmk_lce_capi.so --out "$OUT"
fi
# san19 (session 19's lead; sessions 16-17's san16 / san17 did the same): when the device budget cannot hold final-san
# and final-compare apart, only the sanitizer runs on the kernels and rules changed since the last full final-san (session
# 17's), side by side (small mode), after the full-size runs of the tests changed since the integrated final-tests
# (SMK_SESSION_CTEST_R, a ctest -R pattern). Needs the build of a final-* step in the same call. Back: ss-*.log.
if want san19; then
  run_step ss-test timeout 250 ctest --preset default -L gpu --parallel 6 --timeout 150 \
    -R "${SMK_SESSION_CTEST_R:-GpuLseChunks|GpuFewRows|GpuSoftmax}"
  ss_mc() { env SMK_GPU_TEST_SMALL=1 timeout 150 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 "$@"; }
  ss_rc() { env SMK_GPU_TEST_SMALL=1 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 "$@"; }
  t=build/default/tests
  # Session 18: lse18's forms, split18's running chunk pass, short18's occupancy rule. Session 19: few19's one launch at
  # two chunks a block, the running pass under options (review18 F1 / F3), lse_stream's bf16 lean kernels (lse19b).
  bg_step ss-mc-lse ss_mc $t/test_cuda_lse_stream
  bg_step ss-rc-lse ss_rc $t/test_cuda_lse_stream \
    --gtest_filter='*Lse19*:*AgainstTheReference*:*RowAlone*:*FormsBitwise*:*SpecialRowsEveryForm*'
  bg_step ss-mc-few ss_mc $t/test_cuda_few_rows --gtest_filter='*RunningChunks*:*OneLaunchMulti*:*OneLaunchSplitRowRows*'
  bg_step ss-rc-few ss_rc $t/test_cuda_few_rows --gtest_filter='*RunningChunks*:*OneLaunchMulti*'
  bg_step ss-mc-warp ss_mc $t/test_cuda_warp_row --gtest_filter='*OccRule*:*OccKernelBitwise16*:*OccThroughTheDispatcher*'
  bg_step ss-mc-block ss_mc $t/test_cuda_block_row --gtest_filter='*LseStream*:*Lane*'
  bg_tally
fi
if want final || want final-compare; then
  # The issue grid (for the comparison) and the row-length sweep (for the README's plot), cuDNN beside ours; then
  # torch eager and torch.compile on the issue grid, in whatever time the call has left (compare.md is rewritten after
  # every case, so a cut comparison still comes back).
  # Session 21 (odd21): the odd grid too (GPT-2's 50257, 4097, 100: rows off the vector boundary), compared after.
  run_step bench timeout 100 build/default/apps/softmaxkit/softmaxkit bench --op softmax log_softmax logsumexp \
    softmax_backward log_softmax_backward --dtype f32 bf16 --shape issue sweep odd --path auto --target-ms 8 \
    --format table --json "$OUT/bench.json"
  python3 scripts/plot_bench.py "$OUT/bench.json" --out "$OUT/bench_bandwidth.png"
  # The dispatcher's choice beside the path it replaced, where session 7 moved it (cluster_stage for 16-bit rows of
  # 32769..262144, f32 up to 40000; batch invariance keeps one path per length, so few rows and many rows share it).
  run_step paths timeout 40 build/default/apps/softmaxkit/softmaxkit bench --op softmax log_softmax --dtype bf16 \
    --shape 1x151936 32x128256 4096x151936 1024x262144 4096x40000 --path auto split_row --no-cudnn --target-ms 2 \
    --min-reps 5 --max-reps 30 --format table
  # Session 8 (vocab8): f32 rows up to 65536 on cluster_stage's 256-thread slices; f32 log-softmax of >= 256 rows at
  # 151936 on split_stream (inside the split_row path, so auto and split_row name the same kernel there). Session 20
  # (next20): f32 softmax rows from 45056 on split_row (auto and split_row the same kernels there; log-softmax not).
  run_step paths-f32 timeout 30 build/default/apps/softmaxkit/softmaxkit bench --op softmax log_softmax --dtype f32 \
    --shape 4096x40000 1x40000 8192x45056 8192x65536 1x65536 --path auto cluster_row split_row --no-cudnn --target-ms 2 \
    --min-reps 5 --max-reps 30 --format table
  run_step compare timeout "$(( ${SMK_FINAL_DEADLINE_S:-570} - ${SMK_FINAL_ODD_S:-75} - SECONDS ))" env PYTHONUNBUFFERED=1 \
    python3 scripts/compare_torch.py --bench-json "$OUT/bench.json" --out "$OUT" \
    --compile-budget-s "${SMK_FINAL_COMPILE_S:-110}"
  # The odd grid's comparison in the time left (compare-odd.md; its own folder, then copied beside compare.md).
  mkdir -p /tmp/odd && run_step compare-odd timeout "$(( ${SMK_FINAL_DEADLINE_S:-570} - SECONDS ))" env PYTHONUNBUFFERED=1 \
    python3 scripts/compare_torch.py --bench-json "$OUT/bench.json" --grid odd --out /tmp/odd --compile-budget-s 50
  cp /tmp/odd/compare.md "$OUT/compare-odd.md" 2>/dev/null
fi

# fair9 (session 9, issues 7 and 8): ours and torch SDPA's FLASH and cuDNN backends timed interleaved in ONE process on
# the same inputs (scripts/sdpa_interleaved.py: rounds, the order rotated each round, ratios formed within a round;
# nvidia-smi clocks / power read, never set, before and after each row), after a sanity gate against SDPA's output and
# the C entry points' error path. It needs only the C entry point (libsmk_attention_capi.so, target smk_attention_capi):
# taken from build/fair9-bin.tar.xz when carried (bin/libsmk_attention_capi.so, lib/; session 9's way: no compile on
# the device), else built here (a relink after `build` or `final`; minutes on a cold machine). SMK_FAIR9_S caps the
# script (default 80 s); it starts no row after SMK_FAIR9_DEADLINE_S (default 60 s); SMK_FAIR9_ROUNDS rounds (default
# 20). Back: fair9-sdpa.txt (the log), fair9.md, fair9.json, fair9-summary.txt, fair9-logs.tgz when carried; else
# fair9-build.log, fair9-sdpa.log, fair9.md, fair9.json in $OUT.
if want fair9; then
  if [ -f build/fair9-bin.tar.xz ]; then
    carried fair9 build/fair9-bin.tar.xz
    f9_lib=$bin/bin/libsmk_attention_capi.so
  else
    [ -f build/default/build.ninja ] || run_step configure cmake --preset default
    run_step fair9-build cmake --build --preset default --parallel "$jobs" --target smk_attention_capi
    f9_lib=build/default/tests/libsmk_attention_capi.so
  fi
  run_step fair9-sdpa timeout "${SMK_FAIR9_S:-80}" env PYTHONUNBUFFERED=1 python3 scripts/sdpa_interleaved.py \
    --lib "$f9_lib" --out "$OUT/fair9.md" --json "$OUT/fair9.json" \
    --rounds "${SMK_FAIR9_ROUNDS:-20}" --deadline-s "${SMK_FAIR9_DEADLINE_S:-60}"
  if [ -f build/fair9-bin.tar.xz ]; then
    keep_logs fair9
    cp "$OUT/fair9.md" "$OUT/fair9.json" "$outer/" 2>/dev/null
    end_carried
  fi
fi
echo
echo "=== softmaxkit on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) ==="
printf '%s\n' "${summary[@]}"
grep -h -E "^(100|[0-9]+)% tests passed" "$OUT/test.log" 2>/dev/null
grep -h -E "ERROR SUMMARY" "$OUT"/san-*.log 2>/dev/null
grep -h -E "checks passed" "$OUT/demo.log" 2>/dev/null
grep -h -E "(passed|failed|error).* in [0-9.]+s" "$OUT/py-test.log" 2>/dev/null
grep -h "^headline" "$OUT/bench.log" "$OUT/compare.log" "$OUT/vs-torch.log" 2>/dev/null
# The exit status says whether every step passed (the greps above only report).
echo "steps failed: $failed"
[ "$failed" -eq 0 ]
