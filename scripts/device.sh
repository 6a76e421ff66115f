#!/usr/bin/env bash
# The one script for the GPU device machine (run it there through the device tool, carrying .devdeps/):
#   builds softmaxkit for the H200, runs the whole test suite (GPU tests included), compute-sanitizer memcheck and
#   racecheck over the GPU tests, the demo, and the benchmarks; prints a short table last.
# Logs go to $OUT (the device tool brings that folder back) or ./out.
#   usage: scripts/device.sh [steps...]   steps: build test sanitize demo bench compare python accuracy tune prefill ce decode
#   excess decode-mma lce logterm cefused decode-r2 warpdiet wgmma decode-r3 rowpipe fewrows fewrows-flush final
#   wideblock bw16 fixcost ce3 decode-r4 fixcost2 ce4
#   pfx dec5 pfx2
#   split6 tier16 mid16 fwd16 vocab7 ce5 few7 dec6 ce6 mid8 vocab8 short8 pfx8 final-tests final-san final-compare
#   vocab9
#   mid9
#   lse10
#   short9
#   ce9
#   pfx9
#   dec9
#   fair9
#   pfx10
#   pfx11
#   vocab10
#   short10
#   sbwd11
#   mid11
#   dec10
#   ce10
#   one11
#   ce11
#   short11
#   dec11
#   (default: all but tune)
#   A new one-off A/B step: binaries built off the device, carried as build/<name>-bin.tar.xz; open it with
#   `carried`, call `keep_logs` after each step, close with `end_carried` (defined below, after run_step).
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
# cefused: cross-entropy forward + backward in one call (issue 5, fused.cu), ordered to fit a 200 s call: the GPU
# test, tune_cross_entropy (two calls, backward alone, fused, fused per cluster size: the decision, beside torch's
# F.cross_entropy forward + backward through compare_torch_ce.py --tune-json), the bench's cross-entropy rows when
# the CLI was built, memcheck last on SMK_GPU_TEST_SMALL (30 s cap). Binaries: built here (just these targets), or
# taken prebuilt from $SMK_CE_BIN (built for sm_90a on the workstation and carried: a cold machine spends minutes
# compiling the whole library).
if want cefused; then
  if [ -n "${SMK_CE_BIN:-}" ]; then
    cebin=$SMK_CE_BIN
  else
    [ -f build/default/build.ninja ] || run_step configure cmake --preset default
    run_step cef-build cmake --build --preset default --parallel "$jobs" --target test_cuda_cross_entropy \
      softmaxkit_cli tune_cross_entropy || { printf '%s\n' "${summary[@]}"; exit 1; }
    cebin=build/default/cef-bin
    mkdir -p "$cebin" && cp build/default/tests/test_cuda_cross_entropy build/default/tests/tune_cross_entropy \
      build/default/apps/softmaxkit/softmaxkit "$cebin/"
  fi
  run_step cef-test timeout 75 "$cebin/test_cuda_cross_entropy"
  run_step cef-tune timeout 45 "$cebin/tune_cross_entropy" --reps 9 --json "$OUT/tune_ce.json"
  run_step cef-torch timeout 40 python3 scripts/compare_torch_ce.py --tune-json "$OUT/tune_ce.json" --out "$OUT" \
    --rep-ms 60
  if [ -x "$cebin/softmaxkit" ]; then
    run_step cef-bench timeout 40 "$cebin/softmaxkit" bench --op ce --shape qwen-vocab-4096,llama2-vocab-8192 \
      --dtype f32,bf16 --no-cudnn --target-ms 10 --format table --json "$OUT/bench_ce.json"
  fi
  run_step cef-memcheck timeout 30 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 "$cebin/test_cuda_cross_entropy" --gtest_filter='*Fused*:*EveryReduction*'
fi
# excess: the excess state of issue 4 (online_state.hpp) on its own, in under five minutes: builds just its targets
# (no `build` needed), then what `accuracy` does, the gpu-large cases of strided_inner, a short forward bench on the
# instruction-bound shapes, the GPU conformance suite, the softmax kernels' suite, and memcheck over it on short rows.
if want excess; then
  [ -f build/default/build.ninja ] || run_step configure cmake --preset default
  run_step excess-build cmake --build --preset default --parallel "$jobs" --target test_cuda_softmax \
    test_conformance_gpu test_conformance_large accuracy_report softmaxkit_cli || { printf '%s\n' "${summary[@]}"; exit 1; }
  acc_dump=$(mktemp -d)
  run_step accuracy build/default/tests/conformance/accuracy_report --gpu --out "$OUT/accuracy-gpu.md" --dump "$acc_dump"
  run_step vs-torch python3 tests/conformance/vs_torch.py "$acc_dump" --out "$OUT/vs-torch.md"
  rm -rf "$acc_dump"
  run_step large-strided build/default/tests/conformance/test_conformance_large --gtest_filter='*strided_inner*'
  run_step excess-bench build/default/apps/softmaxkit/softmaxkit bench --op softmax logsumexp --dtype f32 bf16 \
    --shape 32768x1024 262144x128 1048576x32 16384x4096 8192x32000 --path auto --no-cudnn --target-ms 20 --format table
  run_step conformance-gpu build/default/tests/conformance/test_conformance_gpu
  run_step softmax-gpu build/default/tests/test_cuda_softmax
  run_step excess-memcheck env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 build/default/tests/test_cuda_softmax
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
# decode-mma: the decode step for the tensor-core kernel (decode_mma.cu), ordered to fit a 200 s call: build just
# its targets, the GPU test (every kernel), the timings (bench_decode: dispatcher, CUDA-core kernel, tensor-core
# kernel at 3 and 2 stages), torch SDPA beside them, then memcheck last on the cases with the fewest keys (40 s cap).
if want decode-mma; then
  [ -f build/default/build.ninja ] || run_step configure cmake --preset default
  run_step decode-build cmake --build --preset default --parallel "$jobs" --target test_cuda_decode bench_decode
  run_step decode-test timeout 110 build/default/tests/test_cuda_decode
  run_step decode-bench build/default/tests/bench_decode --json "$OUT/bench_decode.json"
  run_step decode-sdpa python3 scripts/bench_decode.py --ours "$OUT/bench_decode.json" --out "$OUT/decode_vs_sdpa.md"
  run_step decode-memcheck timeout 40 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    build/default/tests/test_cuda_decode --gtest_filter='*CausalBand*:*BadInputs*:*Strided*:*CausalMultiToken*'
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
# decode-r2: decode round 2 (the fused merge's levers), ordered to fit a 200 s call with the timings first: build
# just its targets (or take them prebuilt from $SMK_DEC_BIN, built here for sm_90a and carried), bench_decode (the
# dispatcher, timed twice, beside the memset counters, the other ring depth, the merge kernel, longer chunks; the run
# of bb13db2 also timed round 1's default and each lever off), torch SDPA beside it, the GPU test (every kernel and
# variant, 65 s cap), then memcheck last on the cases with the fewest keys and the levers' own test (30 s cap).
if want decode-r2; then
  decode_bins
  run_step decode-bench timeout 45 "$decbin/bench_decode" --json "$OUT/bench_decode.json"
  run_step decode-sdpa timeout 40 python3 scripts/bench_decode.py --ours "$OUT/bench_decode.json" \
    --out "$OUT/decode_vs_sdpa.md"
  run_step decode-test timeout 65 "$decbin/test_cuda_decode"
  run_step decode-memcheck timeout 30 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$decbin/test_cuda_decode" --gtest_filter='*CausalBand*:*BadInputs*:*FusedMergeLevers*:*Strided*'
fi
# decode-r3: decode round 3 (the cluster merge), old beside new in one call, ordered with the timings first: binaries
# built on the workstation for sm_90a and carried ($SMK_DEC_BIN: the new test_cuda_decode and bench_decode;
# $SMK_DEC_OLD_BIN: an older build's bench_decode, timed in the same run), else built here; bench_decode (new, then
# old), torch SDPA FLASH and cuDNN beside them (scripts/bench_decode.py --old), the GPU test ($SMK_DEC_TEST_FILTER
# narrows it), memcheck last on the cases with the fewest keys and the cluster merge's own test (35 s cap). Logs go
# to /tmp/o; $OUT gets the table, the JSONs, the test's summary and a tarball of the logs (at most 8 files return).
if want decode-r3; then
  outer=$OUT
  OUT=/tmp/o && mkdir -p "$OUT"
  decode_bins
  run_step decode-bench timeout 40 "$decbin/bench_decode" --json "$OUT/bench_decode.json"
  oldjson=()
  if [ -n "${SMK_DEC_OLD_BIN:-}" ]; then
    run_step decode-bench-old timeout 40 "$SMK_DEC_OLD_BIN/bench_decode" --json "$OUT/bench_decode_old.json" &&
      oldjson=(--old "$OUT/bench_decode_old.json")
  fi
  # shellcheck disable=SC2086  # SMK_DEC_SDPA_ARGS (e.g. --clean) is meant to split into words
  run_step decode-sdpa timeout 50 python3 scripts/bench_decode.py --ours "$OUT/bench_decode.json" "${oldjson[@]}" \
    ${SMK_DEC_SDPA_ARGS:-} --out "$OUT/decode_vs_sdpa.md"
  cp "$OUT"/decode_vs_sdpa.md "$OUT"/bench_decode*.json "$outer/" 2>/dev/null  # kept if a later step runs out of time
  run_step decode-test timeout "${SMK_DEC_TEST_S:-70}" "$decbin/test_cuda_decode" \
    --gtest_filter="${SMK_DEC_TEST_FILTER:-*}"
  run_step decode-memcheck timeout 35 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$decbin/test_cuda_decode" --gtest_filter='*CausalBand*:*BadInputs*:*ClusterMerge*:*KeptCounters*:*Strided*'
  grep -h -E "^\[  (PASSED|FAILED) |tests ran|ERROR SUMMARY" "$OUT"/decode-test.log "$OUT"/decode-memcheck.log \
    >"$OUT/decode-summary.txt" 2>/dev/null
  cp "$OUT"/decode_vs_sdpa.md "$OUT"/bench_decode*.json "$OUT/decode-summary.txt" "$outer/" 2>/dev/null
  tar -czf "$outer/decode-r3-logs.tgz" -C "$OUT" . 2>/dev/null
  OUT=$outer
fi
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
# logterm: the forward ops whose sums use log_term_exp (log-softmax, logsumexp; common.cuh) on the issue's grid,
# beside softmax (exp_diff) in the same run; needs build.
if want logterm; then
  run_step logterm-bench build/default/apps/softmaxkit/softmaxkit bench --op softmax log_softmax logsumexp \
    --dtype f32 bf16 --shape issue --path auto --no-cudnn --target-ms 20 --format table --json "$OUT/bench_logterm.json"
fi
# rowpipe: the row pipeline of block_per_row / cluster_row (issue 3; block_row.cu, backward.cu, row_stage.cuh), the
# direct kernels beside the staged ones in one call, the A/B first (~300 s with the caps below): binaries built on
# the workstation for sm_90a and carried ($SMK_RP_BIN: test_cuda_softmax, tune_softmax, softmaxkit), else built
# here; tune_softmax --rowpipe (both kernels in the same configurations: forward ops and the softmax backward on the
# many-row shapes), the pipeline's GPU tests ($SMK_RP_TEST_FILTER), softmaxkit bench --path auto on those shapes
# (every op), Nsight Compute on one launch of each forward kernel at 8192x32000 (SMK_RP_NCU=0 skips it), memcheck and
# racecheck on the pipeline's small cases. Eight files return: machine.txt and the seven logs/JSON below.
if want rowpipe; then
  if [ -n "${SMK_RP_BIN:-}" ]; then
    rpbin=$SMK_RP_BIN
  else
    [ -f build/default/build.ninja ] || run_step configure cmake --preset default
    run_step rp-build cmake --build --preset default --parallel "$jobs" --target test_cuda_softmax tune_softmax \
      softmaxkit_cli || { printf '%s\n' "${summary[@]}"; exit 1; }
    rpbin=build/default/rp-bin
    mkdir -p "$rpbin" && cp build/default/tests/test_cuda_softmax build/default/tests/tune_softmax \
      build/default/apps/softmaxkit/softmaxkit "$rpbin/"
  fi
  run_step rp-tune timeout 45 "$rpbin/tune_softmax" --rowpipe
  # Caps: in the run of ff93dbb the full-size pipeline test did not finish in 45 s and racecheck not in 20 s.
  run_step rp-test timeout "${SMK_RP_TEST_S:-90}" "$rpbin/test_cuda_softmax" \
    --gtest_filter="${SMK_RP_TEST_FILTER:-*RowPipeline*:*BatchInvariance*}"
  run_step rp-bench timeout 40 "$rpbin/softmaxkit" bench --op softmax log_softmax logsumexp softmax_backward \
    log_softmax_backward --dtype f32 bf16 --shape 8192x32000 4096x16384 16384x4096 2048x65536 4096x151936 \
    --path auto --no-cudnn --target-ms 10 --format table --json "$OUT/bench_rowpipe.json"
  if [ "${SMK_RP_NCU:-1}" != 0 ]; then
    run_step rp-ncu timeout 35 ncu --clock-control none --kernel-name-base demangled -k regex:block_rows_kernel -c 6 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
      --section WarpStateStats --section MemoryWorkloadAnalysis "$rpbin/tune_softmax" --rowpipe-ncu
  fi
  run_step rp-memcheck timeout 25 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 "$rpbin/test_cuda_softmax" --gtest_filter='*RowPipeline*'
  run_step rp-racecheck timeout "${SMK_RP_RACE_S:-60}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool racecheck \
    --report-api-errors no --error-exitcode 9 "$rpbin/test_cuda_softmax" --gtest_filter='*RowPipeline*'
fi
# warpdiet: warp_per_row at fewer instructions (issue 3; docs/perf-notebook.md "warpdiet"). Builds its targets (no
# `build` needed) and benches the new build; if ab_warpdiet/warp_row.cu holds an older kernel (an untracked copy,
# never committed), builds the CLI with it and benches it: old beside new in one run. Then the GPU tests built before
# the swap (the new kernel): test_cuda_warp_row (many grid steps, aligned against unaligned rows), the GPU conformance
# suite, the accuracy report and our error beside torch's, memcheck over test_cuda_warp_row and test_cuda_softmax
# (SMK_GPU_TEST_SMALL). In that order, each bounded in time. The build alone takes ~50 s on the device; the run of
# 2026-11-30 used binaries built off the device instead (the notebook says why).
if want warpdiet; then
  export OUT
  [ -f build/default/build.ninja ] || run_step configure cmake --preset default
  run_step wd-build cmake --build --preset default --parallel "$jobs" --target softmaxkit_cli test_cuda_softmax \
    test_cuda_warp_row test_conformance_gpu accuracy_report || { printf '%s\n' "${summary[@]}"; exit 1; }
  wd_bench() {  # wd_bench CLI NAME
    "$1" bench --op softmax log_softmax logsumexp --dtype f32 bf16 f16 \
      --shape 262144x128 1048576x32 32768x1024 65536x512 16384x2048 --path auto --no-cudnn --target-ms 10 \
      --format table --json "$OUT/$2.json"
  }
  run_step wd-bench-new timeout 40 bash -c "$(declare -f wd_bench); wd_bench build/default/apps/softmaxkit/softmaxkit bench_new"
  if [ -f ab_warpdiet/warp_row.cu ]; then
    cp src/cuda/softmax/warp_row.cu /tmp/wd_new_warp_row.cu
    cp ab_warpdiet/warp_row.cu src/cuda/softmax/warp_row.cu
    run_step wd-build-old cmake --build --preset default --parallel "$jobs" --target softmaxkit_cli &&
      run_step wd-bench-old timeout 40 bash -c "$(declare -f wd_bench); wd_bench build/default/apps/softmaxkit/softmaxkit bench_old"
    cp /tmp/wd_new_warp_row.cu src/cuda/softmax/warp_row.cu
  fi
  run_step wd-warp-test timeout 30 build/default/tests/test_cuda_warp_row
  run_step wd-conformance timeout 30 build/default/tests/conformance/test_conformance_gpu
  acc_dump=$(mktemp -d)
  run_step accuracy timeout 30 build/default/tests/conformance/accuracy_report --gpu --out "$OUT/accuracy-gpu.md" \
    --dump "$acc_dump"
  run_step vs-torch timeout 30 python3 tests/conformance/vs_torch.py "$acc_dump" --out "$OUT/vs-torch.md"
  rm -rf "$acc_dump"
  for t in test_cuda_warp_row test_cuda_softmax; do
    run_step "wd-memcheck-$t" timeout 25 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "build/default/tests/$t"
  done
fi
# fewrows: issue 3's few long rows in one launch (grid_row.cu) on its own, ordered to fit a ~150 s call, timings
# first: binaries built on the workstation for sm_90a and carried ($SMK_FR_BIN: softmaxkit, test_cuda_grid_row,
# test_cuda_softmax), else built here (just those targets); the bench on the issue's few-row shapes, split_row (the
# old path), grid_row and the dispatcher's choice side by side in the same run ($SMK_FR_SHAPES replaces the shapes),
# grid_row's levers timed in one process (test_cuda_grid_row LeversTiming), grid_row's GPU test, split_row's cases
# of the softmax suite, then compute-sanitizer memcheck, racecheck and synccheck (the grid barrier) on
# SMK_GPU_TEST_SMALL, each capped. Logs go to /tmp/o; $OUT gets, as each step ends (so a call stopped at its limit
# still returns them), the bench table and JSON, the levers' table, the tests' summary; a tarball of every log last.
if want fewrows; then
  outer=$OUT
  OUT=/tmp/o && mkdir -p "$OUT"
  fr_summary() {
    grep -h -E "^\[  (PASSED|FAILED) |tests ran|ERROR SUMMARY|Failure|rror:|^\[  SKIPPED" "$OUT"/fr-test.log \
      "$OUT"/fr-split.log "$OUT"/fr-memcheck.log "$OUT"/fr-racecheck.log "$OUT"/fr-synccheck.log 2>/dev/null |
      head -n 300 >"$outer/fewrows-summary.txt"
    printf '%s\n' "${summary[@]}" >>"$outer/fewrows-summary.txt"
  }
  if [ -n "${SMK_FR_BIN:-}" ]; then
    frbin=$SMK_FR_BIN
  else
    [ -f build/default/build.ninja ] || run_step configure cmake --preset default
    run_step fr-build cmake --build --preset default --parallel "$jobs" --target softmaxkit_cli test_cuda_grid_row \
      test_cuda_softmax || { printf '%s\n' "${summary[@]}"; exit 1; }
    frbin=build/default/fr-bin
    mkdir -p "$frbin" && cp build/default/apps/softmaxkit/softmaxkit build/default/tests/test_cuda_grid_row \
      build/default/tests/test_cuda_softmax "$frbin/"
  fi
  run_step fr-bench timeout 60 "$frbin/softmaxkit" bench --op softmax,log_softmax,logsumexp --dtype f32,bf16 \
    --shape "${SMK_FR_SHAPES:-1x151936,32x128256,1x16777216,4x1000000,64x65537}" --path split_row,grid_row,auto \
    --no-cudnn --target-ms "${SMK_FR_TARGET_MS:-15}" --format table --json "$OUT/bench_fewrows.json"
  cp "$OUT/fr-bench.log" "$outer/bench_fewrows.txt"; cp "$OUT/bench_fewrows.json" "$outer/" 2>/dev/null
  # grid_row's levers (staging, the evict-first hint, cooperative or plain launch) beside split_row, in one process.
  run_step fr-levers timeout 40 env SMK_GRID_ROW_TIMING=1 "$frbin/test_cuda_grid_row" --gtest_filter='*LeversTiming*'
  cp "$OUT/fr-levers.log" "$outer/"
  run_step fr-test timeout 90 "$frbin/test_cuda_grid_row"
  fr_summary
  run_step fr-split timeout 60 "$frbin/test_cuda_softmax" \
    --gtest_filter='*BatchInvariance*:*NonFiniteRows*:*DominantScore*:*BitwiseDeterministic*'
  fr_summary
  for tool in memcheck racecheck synccheck; do
    run_step "fr-$tool" timeout 45 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool "$tool" --report-api-errors no \
      --error-exitcode 9 "$frbin/test_cuda_grid_row" --gtest_filter="${SMK_FR_SAN_FILTER:-*}"
    fr_summary
  done
  tar -czf "$outer/fewrows-logs.tgz" -C "$OUT" . 2>/dev/null
  OUT=$outer
fi
# fewrows-flush: grid_row's levers timing (test_cuda_grid_row LeversTiming, beside split_row) under three L2 flushes
# before each call: the bench's memset (write: dirty lines written back during the timed call), a 256 MB read (clean
# lines), none (inputs in L2); a 1×32 row gives each flush's floor. Binary from $SMK_FR_BIN (carried) or a build.
if want fewrows-flush; then
  frbin=${SMK_FR_BIN:-build/default/tests}
  for m in write read none; do
    run_step "fr-flush-$m" timeout 40 env SMK_GRID_ROW_TIMING=1 SMK_GRID_ROW_FLUSH=$m "$frbin/test_cuda_grid_row" \
      --gtest_filter='*LeversTiming*'
  done
fi
# wideblock: issue 3's wide block_per_row (1024 threads × 32 elements, backward × 16) in one ~150 s call, no build:
# binaries built on the workstation for sm_90a and carried compressed in build/wideblock-bin/bins.tar.xz (old/softmaxkit:
# the tree before the change; new/softmaxkit and new/test_cuda_softmax: with it). Timings first: the old and the new
# dispatcher (--path auto) on the mid rows and the control, old then new; then logsumexp forced on cluster_row and split_row
# (routing by op); the wide block's GPU tests; memcheck on its edge cases. Each step capped; logs straight into $OUT.
if want wideblock; then
  outer=$OUT
  OUT=/tmp/wbo && mkdir -p "$OUT"
  wb_keep() {  # after each step: the tables, a summary and every log back in $outer (at most 8 files come back)
    for f in wb-old wb-new wb-lse; do [ -f "$OUT/$f.log" ] && cp "$OUT/$f.log" "$outer/$f.txt"; done
    { cat "$OUT/wb-ldd.txt" 2>/dev/null; printf '%s\n' "${summary[@]}"
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:" "$OUT"/wb-test.log \
        "$OUT"/wb-memcheck.log 2>/dev/null | head -n 200; } >"$outer/wb-summary.txt"
    tar -czf "$outer/wb-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  wb=/tmp/wb && mkdir -p "$wb" && tar -xJf build/wideblock-bin/bins.tar.xz -C "$wb"
  # The bench links cuDNN and fmt: the image's own first, then cuDNN's wheel and the carried fmt.
  wb_cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${wb_cudnn:+$wb_cudnn:}$wb/lib"
  ldd "$wb/old/softmaxkit" "$wb/new/test_cuda_softmax" | grep -E "not found|cudnn|fmt" >"$OUT/wb-ldd.txt"
  wb_bench() {  # wb_bench CLI NAME [extra bench flags]
    local cli=$1 name=$2; shift 2
    "$cli" bench --dtype f32,bf16 --no-cudnn --target-ms 5 --format table --json "$OUT/$name.json" "$@"
  }
  wb_grid="--op softmax,log_softmax,logsumexp,softmax_backward --shape 4096x16384,8192x32000,2048x24576,16384x4096"
  run_step wb-old timeout 30 bash -c "$(declare -f wb_bench); OUT=$OUT wb_bench $wb/old/softmaxkit bench_old $wb_grid --path auto"
  wb_keep
  run_step wb-new timeout 30 bash -c "$(declare -f wb_bench); OUT=$OUT wb_bench $wb/new/softmaxkit bench_new $wb_grid --path auto"
  wb_keep
  run_step wb-lse timeout 25 bash -c "$(declare -f wb_bench); OUT=$OUT wb_bench $wb/new/softmaxkit bench_lse \
    --op logsumexp --shape 4096x16384,8192x32000,2048x65536,4096x40000 --path auto,cluster_row,split_row"
  wb_keep
  run_step wb-test timeout 35 "$wb/new/test_cuda_softmax" --gtest_filter='*WideBlock*:*ForcedPathsRefuse*'
  wb_keep
  run_step wb-memcheck timeout 25 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$wb/new/test_cuda_softmax" --gtest_filter='*WideBlockEdges*'
  wb_keep
  OUT=$outer
fi
# bw16: issue 3's bandwidth gaps against torch.compile (docs/perf-notebook.md "bw16"): the backward's wide block with
# dy in shared memory (16385..32768), the forward's wide block staged, the short rows' configurations. No build:
# binaries built on the workstation for sm_90a, carried in build/bw16-bin.tar.xz (new/{softmaxkit,test_cuda_softmax,
# tune_softmax}, lib/libfmt). In order, each capped: tune_softmax --bw16 (the kernels before and after side by side in
# one process), the GPU tests of the new paths, memcheck on them (SMK_GPU_TEST_SMALL; SMK_BW_SAN="memcheck racecheck"
# adds racecheck), Nsight Compute on
# six kernels (tune_softmax --bw16-ncu; SMK_BW_NCU=0 skips it), the bench (the dispatcher) on $SMK_BW_SHAPES. The tune
# mode is $SMK_BW_TUNE (--bw16, run 1; --bw16b, run 2), each step's cap SMK_BW_TUNE_S / SMK_BW_TEST_S; test_cuda_warp_row
# runs when carried. Logs in /tmp/o; after each step the tables, a summary and a tarball of every log go to $OUT.
if want bw16; then
  outer=$OUT
  OUT=/tmp/o && mkdir -p "$OUT"
  bw_keep() {
    for f in bw-tune bw-bench bw-ncu; do [ -f "$OUT/$f.log" ] && cp "$OUT/$f.log" "$outer/$f.txt"; done
    { cat "$OUT/bw-ldd.txt" 2>/dev/null; printf '%s\n' "${summary[@]}"
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:" "$OUT"/bw-test.log \
        "$OUT"/bw-warp-test.log "$OUT"/bw-memcheck*.log "$OUT"/bw-racecheck*.log 2>/dev/null | head -n 200
    } >"$outer/bw-summary.txt"
    tar -czf "$outer/bw-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  bw=/tmp/bw && mkdir -p "$bw" && tar -xJf build/bw16-bin.tar.xz -C "$bw"
  bw_cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${bw_cudnn:+$bw_cudnn:}$bw/lib"
  ldd "$bw/new/softmaxkit" "$bw/new/test_cuda_softmax" | grep -E "not found|cudnn|fmt" >"$OUT/bw-ldd.txt"
  run_step bw-tune timeout "${SMK_BW_TUNE_S:-45}" "$bw/new/tune_softmax" "${SMK_BW_TUNE:---bw16}"
  bw_keep
  run_step bw-test timeout "${SMK_BW_TEST_S:-30}" "$bw/new/test_cuda_softmax" \
    --gtest_filter="${SMK_BW_TEST_FILTER:-*WideShared*:*ForcedPathsRefuse*}"
  bw_keep
  # warp_per_row over many steps of its persistent grid (the staged kernel's two buffers), when carried.
  if [ -x "$bw/new/test_cuda_warp_row" ]; then
    run_step bw-warp-test timeout 25 "$bw/new/test_cuda_warp_row"
    bw_keep
  fi
  for tool in ${SMK_BW_SAN:-memcheck}; do
    run_step "bw-$tool" timeout 12 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool "$tool" --report-api-errors no \
      --error-exitcode 9 "$bw/new/test_cuda_softmax" --gtest_filter='*WideShared*'
    bw_keep
    if [ -x "$bw/new/test_cuda_warp_row" ]; then
      run_step "bw-$tool-warp" timeout 12 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool "$tool" \
        --report-api-errors no --error-exitcode 9 "$bw/new/test_cuda_warp_row"
      bw_keep
    fi
  done
  [ "${SMK_BW_NCU:-1}" = 0 ] || run_step bw-ncu timeout 25 ncu --clock-control none --kernel-name-base demangled \
    -k regex:'warp_rows_kernel|block_rows_kernel|backward_block_kernel|backward_wide_shared_kernel' -c 6 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
    --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis \
    "$bw/new/tune_softmax" --bw16-ncu
  bw_keep
  run_step bw-bench timeout 20 "$bw/new/softmaxkit" bench \
    --op softmax,log_softmax,softmax_backward,log_softmax_backward --dtype f32,bf16 \
    --shape ${SMK_BW_SHAPES:-8192x32000,4096x16384,2048x24576} --path auto --no-cudnn --target-ms 5 \
    --format table --json "$OUT/bench_bw16.json"
  bw_keep
  OUT=$outer
fi
# fixcost: issue 3's fixed cost of a call and the few long rows (docs/perf-notebook.md "fixcost"). No build: binaries
# built on the workstation for sm_90a, carried in build/fixcost-bin/bins.tar.xz (old/softmaxkit: the dispatcher before
# the change, tree of 2feaa39; new/{softmaxkit,test_cuda_few_rows,test_cuda_grid_row,test_cuda_softmax}; lib/libfmt).
# In order, each capped: the new bench on the few-row shapes (with the host / loop / graph columns) and 4096x151936
# (the many-row check of the same row length), the fixed-cost timing (test_cuda_few_rows FixedCostTiming: PDL on /
# off, the wide cluster's sizes, the parts of a call's host time), the new GPU tests, the old bench on the few-row
# shapes, split_row's and the dispatcher's existing tests, memcheck on the small cases. Logs in /tmp/fco; after each step the tables, a summary and a tarball of every log go to $OUT.
if want fixcost; then
  outer=$OUT
  OUT=/tmp/fco && mkdir -p "$OUT"
  fc_keep() {
    for f in fc-old fc-new fc-timing; do [ -f "$OUT/$f.log" ] && cp "$OUT/$f.log" "$outer/$f.txt"; done
    { cat "$OUT/fc-ldd.txt" 2>/dev/null; printf '%s\n' "${summary[@]}"
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:|host parts" "$OUT"/fc-test*.log \
        "$OUT"/fc-memcheck.log "$OUT"/fc-timing.log 2>/dev/null | head -n 200; } >"$outer/fc-summary.txt"
    tar -czf "$outer/fc-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  fc=/tmp/fc && mkdir -p "$fc" && tar -xJf build/fixcost-bin/bins.tar.xz -C "$fc"
  # The bench links cuDNN and fmt: the image's own first, then cuDNN's wheel and the carried fmt.
  fc_cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${fc_cudnn:+$fc_cudnn:}$fc/lib"
  ldd "$fc/old/softmaxkit" "$fc/new/softmaxkit" "$fc/new/test_cuda_few_rows" | grep -E "not found|cudnn|fmt" \
    >"$OUT/fc-ldd.txt"
  fc_ops="--op softmax,log_softmax,logsumexp,softmax_backward,log_softmax_backward --dtype f32,bf16 --no-cudnn"
  fc_few="1x32,1x151936,32x128256,1x16777216"
  run_step fc-new timeout 40 "$fc/new/softmaxkit" bench $fc_ops --shape "$fc_few,4096x151936" \
    --path auto,split_row,cluster_row --target-ms 3 --max-reps 100 --format table --json "$OUT/bench_new.json"
  fc_keep
  run_step fc-timing timeout 20 env SMK_FEW_ROWS_TIMING=1 "$fc/new/test_cuda_few_rows" --gtest_filter='*FixedCostTiming*'
  fc_keep
  run_step fc-test timeout 30 "$fc/new/test_cuda_few_rows"
  fc_keep
  run_step fc-old timeout 20 "$fc/old/softmaxkit" bench $fc_ops --shape "$fc_few" --path auto,cluster_row \
    --target-ms 3 --max-reps 100 --format table --json "$OUT/bench_old.json"
  fc_keep
  run_step fc-test-grid timeout 15 "$fc/new/test_cuda_grid_row" \
    --gtest_filter='*IssueLengthsFewRows*:*TemperatureMasksNonFinite*:*RefusesBackward*'
  fc_keep
  run_step fc-test-softmax timeout 15 "$fc/new/test_cuda_softmax" --gtest_filter='*ForcedPathsRefuse*:*BatchInvariance*'
  fc_keep
  run_step fc-memcheck timeout 20 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 "$fc/new/test_cuda_few_rows" --gtest_filter='*WideClusterRows*:*SplitRowDependent*:*Graph*'
  fc_keep
  OUT=$outer
fi
# fixcost2: the second fixcost call: split_row's one-launch variant (a cluster per row, bitwise the three kernels)
# beside the three kernels. Binaries carried in build/fixcost-bin2/bins.tar.xz (new/{softmaxkit,test_cuda_few_rows,
# test_cuda_grid_row}, lib/libfmt). The bench (auto, split_row: the variant where it serves) on the few-row shapes and
# 4096x151936, the fixed-cost timing (one launch / three kernels / no PDL / cluster_row), the GPU tests (the variant
# bitwise the three kernels; grid_row bitwise split_row), memcheck and racecheck on the small cases.
if want fixcost2; then
  outer=$OUT
  OUT=/tmp/fco2 && mkdir -p "$OUT"
  fc2_keep() {
    for f in fc2-bench fc2-timing; do [ -f "$OUT/$f.log" ] && cp "$OUT/$f.log" "$outer/$f.txt"; done
    { printf '%s\n' "${summary[@]}"
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:|host parts" "$OUT"/fc2-test*.log \
        "$OUT"/fc2-memcheck.log "$OUT"/fc2-racecheck.log "$OUT"/fc2-timing.log 2>/dev/null | head -n 200; } \
      >"$outer/fc2-summary.txt"
    tar -czf "$outer/fc2-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  fc=/tmp/fc2 && mkdir -p "$fc" && tar -xJf build/fixcost-bin2/bins.tar.xz -C "$fc"
  fc_cudnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${fc_cudnn:+$fc_cudnn:}$fc/lib"
  run_step fc2-bench timeout 40 "$fc/new/softmaxkit" bench \
    --op softmax,log_softmax,logsumexp,softmax_backward,log_softmax_backward --dtype f32,bf16 --no-cudnn \
    --shape 1x151936,4x151936,32x128256,64x65537,1x16777216,4096x151936 --path auto,split_row \
    --target-ms 3 --max-reps 100 --format table --json "$OUT/bench_new2.json"
  fc2_keep
  run_step fc2-timing timeout 20 env SMK_FEW_ROWS_TIMING=1 "$fc/new/test_cuda_few_rows" --gtest_filter='*FixedCostTiming*'
  fc2_keep
  run_step fc2-test timeout 40 "$fc/new/test_cuda_few_rows"
  fc2_keep
  run_step fc2-test-grid timeout 25 "$fc/new/test_cuda_grid_row" \
    --gtest_filter='*IssueLengthsFewRows*:*TemperatureMasksNonFinite*:*SlicedStrided*'
  fc2_keep
  for tool in memcheck racecheck; do
    run_step "fc2-$tool" timeout 20 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool "$tool" --report-api-errors no \
      --error-exitcode 9 "$fc/new/test_cuda_few_rows" --gtest_filter='*OneLaunch*:*SplitRowDependent*:*Graph*'
    fc2_keep
  done
  OUT=$outer
fi
# ce3: the fused cross-entropy kernel (issue 5, fused.cu: one state exchange a row, the wide block, the next row's
# target with its staging) beside the previous fused.cu in one run, torch's F.cross_entropy beside both, memcheck,
# then linear cross-entropy's logit_rows splits beside its default at the issue's row. Binaries built here for
# sm_90a and carried as build/ce3-bin.tar.xz (old/: tune_cross_entropy with the previous fused.cu; new/:
# test_cuda_cross_entropy, tune_cross_entropy, libsmk_lce_capi.so). At most 8 files come back: the ce3-*.txt logs,
# a summary and a tarball of everything.
if want ce3; then
  ce3_outer=$OUT
  OUT=/tmp/ce3o && mkdir -p "$OUT"
  ce3_keep() {
    for f in ce3-test ce3-tune-new ce3-tune-old ce3-torch ce3-lce; do [ -f "$OUT/$f.log" ] && cp "$OUT/$f.log" "$ce3_outer/$f.txt"; done
    { printf '%s\n' "${summary[@]}"
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:" "$OUT"/ce3-test.log \
        "$OUT"/ce3-memcheck.log 2>/dev/null | head -n 200; } >"$ce3_outer/ce3-summary.txt"
    tar -czf "$ce3_outer/ce3-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  ce3b=/tmp/ce3b && mkdir -p "$ce3b" && tar -xJf build/ce3-bin.tar.xz -C "$ce3b"
  run_step ce3-test timeout 45 "$ce3b/new/test_cuda_cross_entropy" --gtest_filter='CrossEntropyGpuFused.*'
  ce3_keep
  run_step ce3-tune-new timeout 25 "$ce3b/new/tune_cross_entropy" --reps 7 --json "$OUT/tune_new.json"
  ce3_keep
  run_step ce3-tune-old timeout 25 "$ce3b/old/tune_cross_entropy" --reps 7 --json "$OUT/tune_old.json"
  ce3_keep
  run_step ce3-torch timeout 30 python3 scripts/compare_torch_ce.py --tune-json "$OUT/tune_new.json" \
    --old-tune-json "$OUT/tune_old.json" --out "$OUT" --rep-ms 50
  ce3_keep
  run_step ce3-memcheck timeout 30 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 "$ce3b/new/test_cuda_cross_entropy" --gtest_filter='CrossEntropyGpuFused.*'
  ce3_keep
  if [ -f "$ce3b/new/libsmk_lce_capi.so" ]; then  # carried only when linear cross-entropy is to be timed
    run_step ce3-lce timeout 60 python3 scripts/compare_torch_lce.py --lib "$ce3b/new/libsmk_lce_capi.so" --out "$OUT" \
      --shapes 8192x4096x151936 --chunks 0,1024/256,1024/384,1280/256,1536/192 --reps 5
    ce3_keep
  fi
  OUT=$ce3_outer
fi
# ce4 (session 6, issue 5): the fused cross-entropy kernel with the 16-bit tier (a 16-bit gradient's exponentials
# without the TwoSum) and bulk-copy staging of the next row (row_stage.cuh), and the forward's chunk kernel taking two
# chunks a block for 16-bit logits; old (HEAD before ce4: tune_cross_entropy) beside new in one call, torch's
# F.cross_entropy beside both, then the cross-entropy GPU suite and memcheck on it. Binaries built here for sm_90a
# and carried as build/ce4-bin.tar.xz (old/tune_cross_entropy; new/test_cuda_cross_entropy, new/tune_cross_entropy).
# fwd0/ (optional): tune_cross_entropy linked with an older forward.cu, timing the forward alone (--only forward).
# SMK_CE4_TESTS=0 skips the suite and memcheck. At most 8 files come back: machine.txt, the tune / torch / test logs
# as ce4-*.txt, a summary (memcheck's verdict in it), and a tarball of everything.
if want ce4; then
  ce4_outer=$OUT
  OUT=/tmp/ce4o && mkdir -p "$OUT"
  ce4_keep() {
    for f in ce4-tune-new ce4-tune-old ce4-tune-fwd0 ce4-torch ce4-test; do [ -f "$OUT/$f.log" ] && cp "$OUT/$f.log" "$ce4_outer/$f.txt"; done
    { printf '%s\n' "${summary[@]}"
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:" "$OUT"/ce4-test.log \
        "$OUT"/ce4-memcheck.log 2>/dev/null | head -n 200; } >"$ce4_outer/ce4-summary.txt"
    tar -czf "$ce4_outer/ce4-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  ce4b=/tmp/ce4b && mkdir -p "$ce4b" && tar -xJf build/ce4-bin.tar.xz -C "$ce4b"
  # In the order of what matters most; each step's logs kept as it ends (a call cut short still brings them back).
  run_step ce4-tune-new timeout 35 "$ce4b/new/tune_cross_entropy" --reps 5 --json "$OUT/tune_new.json"
  ce4_keep
  run_step ce4-tune-old timeout 35 "$ce4b/old/tune_cross_entropy" --reps 5 --json "$OUT/tune_old.json"
  ce4_keep
  if [ -x "$ce4b/fwd0/tune_cross_entropy" ]; then  # the forward alone with the pre-ce4 chunk kernel
    run_step ce4-tune-fwd0 timeout 30 "$ce4b/fwd0/tune_cross_entropy" --reps 5 --only forward --json "$OUT/tune_fwd0.json"
    ce4_keep
  fi
  if [ "${SMK_CE4_TESTS:-1}" != 0 ]; then
    run_step ce4-test timeout 60 "$ce4b/new/test_cuda_cross_entropy"
    ce4_keep
  fi
  run_step ce4-torch timeout 45 python3 scripts/compare_torch_ce.py --tune-json "$OUT/tune_new.json" \
    --old-tune-json "$OUT/tune_old.json" --out "$OUT" --rep-ms 50
  ce4_keep
  if [ "${SMK_CE4_TESTS:-1}" != 0 ]; then
    run_step ce4-memcheck timeout 60 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
      --error-exitcode 9 "$ce4b/new/test_cuda_cross_entropy" --gtest_filter='CrossEntropyGpuFused.*:CrossEntropyGpu.EveryDtype*:CrossEntropyGpu.InPlace*'
    ce4_keep
  fi
  OUT=$ce4_outer
fi
# pfx: issue 7 round (session 5): the non-finite-V fix on the causal diagonal and the warp-specialised wgmma variant
# (producer warpgroup, ping-pong), old beside new in one call. Binaries built on the workstation for sm_90a and carried
# (build/pfx-bin/bins.tar.xz: new/ and old/ tune_prefill and test_cuda_prefill; old = the kernels of the parent
# commit). Timings first (tune_prefill's TMA columns, old then new, on SMK_PFX_ROWS, default the issue's four rows;
# torch's SDPA backends on the same rows), then the new prefill test, the new non-finite test on the old kernels
# (expected to fail: it shows the test sees the leak), memcheck and racecheck on the smallest wgmma cases.
if want pfx; then
  outer=$OUT
  OUT=/tmp/o && mkdir -p "$OUT"
  pb=/tmp/pfxbin && mkdir -p "$pb" && tar -xJf build/pfx-bin/bins.tar.xz -C "$pb"
  pfx_keep() {
    cp "$OUT"/prefill_vs_sdpa.md "$OUT"/tune_*.json "$outer/" 2>/dev/null
    { printf '%s\n' "${summary[@]}"; grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure" \
        "$OUT"/pfx-test*.log "$OUT"/pfx-*check.log 2>/dev/null | head -n 120; } >"$outer/pfx-summary.txt"
    tar -czf "$outer/pfx-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  rows=${SMK_PFX_ROWS:-issue}
  run_step pfx-tune-old env SMK_TUNE_TMA="${SMK_PFX_TMA-only}" SMK_TUNE_ROWS="$rows" timeout 60 "$pb/old/tune_prefill" \
    --json "$OUT/tune_old_raw.json"
  # The old binary's columns as "old ...", its ws2 column dropped (the old kernels have no producer warpgroup).
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
for x in r: x["tflops"]={"old "+k: v for k, v in x["tflops"].items() if not k.startswith("ws2")}
json.dump(r, open(sys.argv[2], "w"))' "$OUT/tune_old_raw.json" "$OUT/tune_old.json"
  run_step pfx-tune-new env SMK_TUNE_TMA="${SMK_PFX_TMA-only}" SMK_TUNE_ROWS="$rows" timeout 60 "$pb/new/tune_prefill" \
    --json "$OUT/tune_new.json"
  # Old again after new (A B A): the H200's clock drifts over a run by a few per cent, so one order would favour one.
  if [ -n "${SMK_PFX_ABA:-}" ]; then
    run_step pfx-tune-old2 env SMK_TUNE_TMA="${SMK_PFX_TMA-only}" SMK_TUNE_ROWS="$rows" timeout 60 \
      "$pb/old/tune_prefill" --json "$OUT/tune_old2_raw.json"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
for x in r: x["tflops"]={"old2 "+k: v for k, v in x["tflops"].items() if not k.startswith("ws2")}
json.dump(r, open(sys.argv[2], "w"))' "$OUT/tune_old2_raw.json" "$OUT/tune_old2.json"
  fi
  pfx_keep
  run_step pfx-sdpa timeout 60 python3 scripts/bench_sdpa.py --ours "$OUT/tune_new.json" "$OUT/tune_old.json" \
    $(ls "$OUT/tune_old2.json" 2>/dev/null) \
    --out "$OUT/prefill_vs_sdpa.md" --save-sdpa "$OUT/tune_sdpa.json"
  pfx_keep
  run_step pfx-test-nf timeout 40 "$pb/new/test_cuda_prefill" --gtest_filter='*NonFiniteV*'
  pfx_keep
  run_step pfx-test timeout "${SMK_PFX_TEST_S:-80}" "$pb/new/test_cuda_prefill" \
    --gtest_filter="${SMK_PFX_FILTER:--*NonFiniteV*}"
  pfx_keep
  run_step pfx-memcheck timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$pb/new/test_cuda_prefill" --gtest_filter='*WgmmaSameBits*:*ClearErrors*'
  pfx_keep
  [ -n "${SMK_PFX_OLD_TEST-1}" ] && run_step pfx-test-old timeout 20 "$pb/old/test_cuda_prefill" --gtest_filter='*NonFiniteV*'
  run_step pfx-racecheck timeout 20 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$pb/new/test_cuda_prefill" --gtest_filter='*WgmmaSameBits*'
  pfx_keep
  OUT=$outer
fi
# split6: issue 3's few long rows (split_row's one-launch cluster, its fallback, 1x16M). Binaries built here for
# sm_90a and carried as build/split6-bin.tar.xz: old/softmaxkit (the tree before), lib/libfmt, and new/ (softmaxkit
# and the three softmax GPU suites) when present. SMK_S6=prof: Nsight Compute (--set full) on split_row's kernels at
# 1x32, 1x151936 and 1x16777216 (f32/bf16, softmax/logsumexp) and on cluster_row at 1x151936, old binary (and new when
# carried). SMK_S6=ab (default): the bench old beside new on the few-row shapes (host/loop/graph columns), the
# variants' graph timings, the GPU suites, memcheck on the few-row cases. At most 8 files come back: s6-*.txt and a
# tarball of the rest.
if want split6; then
  carried s6 build/split6-bin.tar.xz
  s6=$bin
  s6_keep() { keep_logs s6; }
  s6_ops="--op softmax,log_softmax,logsumexp,softmax_backward,log_softmax_backward --dtype f32,bf16 --no-cudnn"
  if [ "${SMK_S6:-ab}" = prof ]; then
    s6_ncu() {  # s6_ncu NAME BIN KERNEL-REGEX COUNT BENCH-ARGS...
      local name=$1 bin=$2 k=$3 c=$4; shift 4
      run_step "s6x-ncu-$name" timeout 60 ncu --set full --clock-control none --kernel-name-base demangled \
        -k "regex:$k" -c "$c" --print-summary none -o "$OUT/ncu-$name" "$bin" bench --no-cudnn --min-reps 1 \
        --max-reps 1 --target-ms 0.01 "$@"
      ncu --import "$OUT/ncu-$name.ncu-rep" --page details --print-units base >"$OUT/s6x-ncu-$name.txt" 2>&1
      grep -E "^  [a-z_]+.*\(|Duration|Elapsed Cycles|DRAM Throughput|Registers Per|Achieved Occupancy|Waves Per SM|Block Limit|Cluster|Theoretical Occ|Memory Throughput|L2 Hit|Executed Ipc|Stall|One or More|No Eligible" \
        "$OUT/s6x-ncu-$name.txt" >>"$OUT/s6-ncu.log"
    }
    for b in old new; do
      [ -x "$s6/$b/softmaxkit" ] || continue
      for dt in f32 bf16; do
        for op in softmax logsumexp; do
          s6_ncu "$b-$op-$dt-32" "$s6/$b/softmaxkit" cluster_split 1 --op $op --dtype $dt --shape 1x32 --path split_row
          s6_ncu "$b-$op-$dt-151936" "$s6/$b/softmaxkit" cluster_split 1 --op $op --dtype $dt --shape 1x151936 \
            --path split_row
        done
        s6_ncu "$b-softmax-$dt-16M" "$s6/$b/softmaxkit" "chunk_states|merge_states|normalize_kernel" 3 --op softmax \
          --dtype $dt --shape 1x16777216 --path split_row
      done
      s6_ncu "$b-cluster-row-f32-151936" "$s6/$b/softmaxkit" block_rows 1 --op softmax --dtype f32 --shape 1x151936 \
        --path cluster_row
      s6_keep
    done
  else
    # In the order of what matters most, each step's logs kept as it ends (a call cut short still brings them back).
    s6_few="1x32,1x151936,32x128256,1x16777216,4096x151936"
    run_step s6x-test-few timeout 90 "$s6/new/test_cuda_few_rows"
    s6_keep
    run_step s6-timing timeout 30 env SMK_FEW_ROWS_TIMING=1 "$s6/new/test_cuda_few_rows" --gtest_filter='*Split6Timing*'
    s6_keep
    run_step s6x-memcheck timeout 30 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
      --error-exitcode 9 "$s6/new/test_cuda_few_rows" --gtest_filter='*OneLaunch*:*ManyChunks*:*NoCluster*:*Graph*'
    s6_keep
    run_step s6-bench-new timeout 25 "$s6/new/softmaxkit" bench $s6_ops --shape "$s6_few" --path auto \
      --target-ms 2 --max-reps 50 --format table --json "$OUT/bench_new.json"
    s6_keep
    run_step s6-bench-old timeout 25 "$s6/old/softmaxkit" bench $s6_ops --shape "$s6_few" --path auto \
      --target-ms 2 --max-reps 50 --format table --json "$OUT/bench_old.json"
    s6_keep
    run_step s6x-test-grid timeout 30 "$s6/new/test_cuda_grid_row" --gtest_filter='-*LeversTiming*'
    s6_keep
    run_step s6x-test-softmax timeout 40 "$s6/new/test_cuda_softmax" \
      --gtest_filter="${SMK_S6_SOFTMAX_FILTER:-*EveryPathEveryLength*:*BatchInvariance*:*ForcedPaths*:*NonFiniteRows*}"
    s6_keep
  fi
  OUT=$outer
fi
# pfx2 (session 6, issue 7): the producer-warpgroup wgmma kernel with 128-key tiles (ptx.cuh's mbar_wait: no trap
# under setmaxnreg) and the producer warpgroup's scan of the diagonal tiles' V, old beside new in one call. Binaries
# built here for sm_90a and carried as build/pfx2-bin.tar.xz: new/ (tune_prefill, test_cuda_prefill), old/ (HEAD's
# prefill sources), nocheck/ (new with the diagonal check compiled out: timing only), cscan/ (new with the consumer
# warpgroups' scan instead of the producer's). Timings (TMA columns): old, new (issue rows and the sweep), nocheck,
# cscan, old again, new again; torch's SDPA backends on every row; then the prefill test, memcheck and racecheck.
if want pfx2; then
  pfx2_outer=$OUT
  OUT=/tmp/pfx2o && mkdir -p "$OUT"
  pb=/tmp/pfx2bin && mkdir -p "$pb" && tar -xJf build/pfx2-bin.tar.xz -C "$pb"
  pfx2_keep() {
    cp "$OUT"/prefill_vs_sdpa.md "$OUT"/tune_new_all.json "$pfx2_outer/" 2>/dev/null
    { printf '%s\n' "${summary[@]}"; grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure" \
        "$OUT"/pfx2-test*.log "$OUT"/pfx2-*check.log 2>/dev/null | head -n 120; } >"$pfx2_outer/pfx2-summary.txt"
    tar -czf "$pfx2_outer/pfx2-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  # SMK_PFX2_TUNES: the timings in order, each a binary's name with an optional repeat number (old2: old again).
  # "new" and "nocheck" time the issue's rows and the sweep, the others (and their repeats) the issue's rows.
  others=()
  for v in ${SMK_PFX2_TUNES:-old new nocheck cscan old2 new2}; do
    bin=${v%%[0-9]*}
    rows=issue && [[ "$v" = new || "$v" = nocheck ]] && rows=all
    run_step "pfx2-tune-$v" env SMK_TUNE_TMA=only SMK_TUNE_ROWS="$rows" timeout 60 "$pb/$bin/tune_prefill" \
      --json "$OUT/tune_$v.json"
    [ "$v" = new ] || others+=("$v=$OUT/tune_$v.json")
  done
  cp "$OUT/tune_new.json" "$OUT/tune_new_all.json"
  pfx2_keep
  # bench_sdpa.py: "ours" is the new binary's best column; the others join as prefixed columns.
  run_step pfx2-sdpa timeout 90 python3 scripts/bench_sdpa.py --ours "$OUT/tune_new.json" "${others[@]}" \
    --out "$OUT/prefill_vs_sdpa.md" --save-sdpa "$OUT/tune_sdpa.json"
  pfx2_keep
  run_step pfx2-test timeout "${SMK_PFX2_TEST_S:-100}" "$pb/new/test_cuda_prefill"
  pfx2_keep
  run_step pfx2-memcheck timeout "${SMK_PFX2_MEMCHECK_S:-40}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$pb/new/test_cuda_prefill" --gtest_filter="${SMK_PFX2_MEMCHECK:-*WgmmaSameBits*:*ClearErrors*}"
  pfx2_keep
  run_step pfx2-racecheck timeout 30 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$pb/new/test_cuda_prefill" --gtest_filter='*WgmmaSameBits*'
  pfx2_keep
  OUT=$pfx2_outer
fi
# tier16 (session 6, issue 3): the 16-bit-output tier of the element arithmetic (common.cuh out_exp) and the log ops'
# terms by log_term_exp_ftz on the block / cluster / split paths. No build: binaries built on the workstation for
# sm_90a, carried as build/tier16-bin.tar.xz: old/softmaxkit (the tree before, db68988), lib/libfmt, and new/
# (softmaxkit, test_cuda_softmax, test_cuda_warp_row, test_cuda_few_rows, test_cuda_grid_row, accuracy_report). In
# order, each capped: the bench old beside new (softmax, log-softmax, logsumexp; f32, bf16, f16; the issue grid but
# the few-row shapes), 4096x151936 forced on cluster_row and on split_row (new), the tier's own GPU case in full, the
# accuracy report and vs torch, few rows, grid_row and warp_row (the bitwise one-launch / three-kernel / grid_row
# checks), the softmax suite on small rows, memcheck. Logs in /tmp/o; at most 8 files come back: t16-*.txt, a summary and a tarball.
if want tier16; then
  carried t16 build/tier16-bin.tar.xz
  t16=$bin
  t16_keep() { keep_logs t16; }
  # SMK_T16=acc: only the accuracy report, one path at a time (each its own table and verdict, so a cap cuts whole
  # paths), on the paths of SMK_T16_PATHS.
  if [ "${SMK_T16:-ab}" = acc ]; then
    for path in ${SMK_T16_PATHS:-warp_per_row block_per_row cluster_row split_row}; do
      run_step "t16-acc-$path" timeout 40 "$t16/new/accuracy_report" --backend "gpu_$path" \
        --out "$OUT/accuracy-$path.md"
      t16_keep
    done
  else
    t16_shapes=${SMK_T16_SHAPES:-4096x151936,8192x32000,4096x16384,16384x4096,32768x1024,262144x128,1048576x32}
    t16_bench="bench --op softmax,log_softmax,logsumexp --dtype f32,bf16,f16 --no-cudnn --target-ms 2 --min-reps 5"
    t16_bench="$t16_bench --max-reps 50 --format table --shape $t16_shapes"
    run_step t16-bench-new timeout "${SMK_T16_BENCH_S:-70}" "$t16/new/softmaxkit" $t16_bench --path auto \
      --json "$OUT/bench_new.json"
    t16_keep
    run_step t16-bench-old timeout "${SMK_T16_BENCH_S:-70}" "$t16/old/softmaxkit" $t16_bench --path auto \
      --json "$OUT/bench_old.json"
    t16_keep
    run_step t16-paths timeout 30 "$t16/new/softmaxkit" bench --op softmax,log_softmax,logsumexp --dtype bf16,f16,f32 \
      --shape 4096x151936 --path cluster_row,split_row --no-cudnn --target-ms 2 --min-reps 5 --max-reps 20 \
      --format table --json "$OUT/bench_paths.json"
    t16_keep
    run_step t16x-tier timeout 30 "$t16/new/test_cuda_softmax" --gtest_filter='*SixteenBit*'
    t16_keep
    t16_dump=$(mktemp -d)
    run_step t16-accuracy timeout 60 "$t16/new/accuracy_report" --gpu --out "$OUT/accuracy-gpu.md" --dump "$t16_dump"
    run_step t16-vs-torch timeout 60 python3 tests/conformance/vs_torch.py "$t16_dump" --out "$OUT/vs-torch.md"
    rm -rf "$t16_dump"
    t16_keep
    run_step t16x-few timeout 40 "$t16/new/test_cuda_few_rows"
    run_step t16x-grid timeout 30 "$t16/new/test_cuda_grid_row"
    run_step t16x-warp timeout 25 "$t16/new/test_cuda_warp_row"
    t16_keep
    run_step t16x-softmax-small timeout 60 env SMK_GPU_TEST_SMALL=1 "$t16/new/test_cuda_softmax"
    t16_keep
    run_step t16x-memcheck timeout 40 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$t16/new/test_cuda_softmax" \
      --gtest_filter='*EveryPathEveryLength*:*SixteenBit*:*WideBlockRows*'
    t16_keep
  fi
  OUT=$outer
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
if want final || want final-tests || want final-san || want final-compare; then
  run_step configure cmake --preset default
  run_step build timeout 240 cmake --build --preset default --parallel "$jobs" || { printf '%s\n' "${summary[@]}"; exit 1; }
fi
if want final || want final-tests; then
  # SMK_FINAL_CTEST_R narrows the suite to the tests a late fix touched (ctest -R); SMK_FINAL_SKIP_ACCURACY=1 skips
  # the accuracy tables (for such a re-run after an unchanged-arithmetic fix).
  run_step test timeout 300 ctest --preset default -L gpu -LE gpu-large --parallel 6 --timeout 240 \
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
  san_new() {
    local t
    for t in test_cuda_block_row test_cuda_warp_row; do
      compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "build/default/tests/$t" || return 9
    done
    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 build/default/tests/test_cuda_few_rows \
      --gtest_filter='*Stream*:*NormalizeHints*' || return 9
    compute-sanitizer --tool racecheck --error-exitcode 9 build/default/tests/test_cuda_cluster_stage \
      --gtest_filter='*StagesRefill*' || return 9
    # Session 9: the Triton-style mid-row backward, the fused cross-entropy's dependent launches, the prefill's trimmed
    # diagonal tile and causal schedule.
    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      build/default/tests/test_cuda_backward_reread || return 9
    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      build/default/tests/test_cuda_cross_entropy --gtest_filter='*Pdl*:*TargetEntry*:*RowLoop*' || return 9
    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      build/default/tests/test_cuda_prefill --gtest_filter='*CausalScheduleAndTrim*' || return 9
    # Session 10: row_loop (forward and backward; racecheck on its shared chunk states), the decode's TMA tiles. The
    # packed 16-bit warp kernels and lse_stream are in test_cuda_warp_row / test_cuda_block_row above.
    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      build/default/tests/test_cuda_row_loop \
      --gtest_filter="${SMK_SAN_ROW_LOOP:-GpuRowLoop.BackwardBitwiseTheThreeKernels:GpuRowLoop.One*Case}" || return 9
    compute-sanitizer --tool racecheck --error-exitcode 9 build/default/tests/test_cuda_row_loop \
      --gtest_filter="${SMK_RACE_ROW_LOOP:-GpuRowLoop.One*Case}" || return 9
    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      build/default/tests/test_cuda_decode --gtest_filter='*Tma*' || return 9
    # Session 11: the dense f32 warp backward (test_cuda_warp_backward), the dense forward (in test_cuda_warp_row
    # above), split_row's hinted normalising kernel (*NormalizeHints* above), the cross-entropy row loop (*RowLoop*).
    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      build/default/tests/test_cuda_warp_backward
  }
  run_step san-new env SMK_GPU_TEST_SMALL=1 SMK_ROW_LOOP_FEW=1 timeout 240 bash -c "$(declare -f san_new); san_new"
  # Cross-entropy's accuracy beside torch's (issue 5: never less accurate than PyTorch), on the build's C entry.
  run_step vs-torch-ce timeout 60 python3 scripts/vs_torch_ce.py --lib build/default/tests/libsmk_lce_capi.so --out "$OUT"
fi
if want final || want final-compare; then
  # The issue grid (for the comparison) and the row-length sweep (for the README's plot), cuDNN beside ours; then
  # torch eager and torch.compile on the issue grid, in whatever time the call has left (compare.md is rewritten after
  # every case, so a cut comparison still comes back).
  run_step bench timeout 90 build/default/apps/softmaxkit/softmaxkit bench --op softmax log_softmax logsumexp \
    softmax_backward log_softmax_backward --dtype f32 bf16 --shape issue sweep --path auto --target-ms 8 \
    --format table --json "$OUT/bench.json"
  python3 scripts/plot_bench.py "$OUT/bench.json" --out "$OUT/bench_bandwidth.png"
  # The dispatcher's choice beside the path it replaced, where session 7 moved it (cluster_stage for 16-bit rows of
  # 32769..262144, f32 up to 40000; batch invariance keeps one path per length, so few rows and many rows share it).
  run_step paths timeout 40 build/default/apps/softmaxkit/softmaxkit bench --op softmax log_softmax --dtype bf16 \
    --shape 1x151936 32x128256 4096x151936 1024x262144 4096x40000 --path auto split_row --no-cudnn --target-ms 2 \
    --min-reps 5 --max-reps 30 --format table
  # Session 8 (vocab8): f32 rows up to 65536 on cluster_stage's 256-thread slices; f32 log-softmax of >= 256 rows at
  # 151936 on split_stream (inside the split_row path, so auto and split_row name the same kernel there).
  run_step paths-f32 timeout 30 build/default/apps/softmaxkit/softmaxkit bench --op softmax log_softmax --dtype f32 \
    --shape 4096x40000 1x40000 8192x65536 1x65536 --path auto cluster_row split_row --no-cudnn --target-ms 2 \
    --min-reps 5 --max-reps 30 --format table
  run_step compare timeout "$(( ${SMK_FINAL_DEADLINE_S:-570} - SECONDS ))" env PYTHONUNBUFFERED=1 python3 scripts/compare_torch.py \
    --bench-json "$OUT/bench.json" --out "$OUT" --compile-budget-s "${SMK_FINAL_COMPILE_S:-110}"
fi

# decode-r4: decode round 4 (the counters' lease, the spread cluster merge at 16 splits, the fixed cost counted), old
# beside new in one call: binaries built on the workstation for sm_90a and carried in build/dec4-bin.tar.xz (new/:
# bench_decode, test_cuda_decode; old/: round 3's bench_decode, from the tree of a002de0); bench_decode new then old,
# torch SDPA FLASH and cuDNN (clean L2 too) beside them, the GPU test, then memcheck last on the cases with the fewest
# keys and the merges' bitwise test. Logs in /tmp/o; $OUT gets the table, the JSONs, the summary and a tarball.
if want decode-r4; then
  outer=$OUT
  OUT=/tmp/o && mkdir -p "$OUT"
  d4=/tmp/d4 && mkdir -p "$d4" && tar -xJf build/dec4-bin.tar.xz -C "$d4"
  command -v cuobjdump >/dev/null && cuobjdump --dump-resource-usage "$d4/new/bench_decode" 2>/dev/null |
    grep -A1 decode_mma_kernel | grep -o "REG:[0-9]*\|STACK:[0-9]*\|SHARED:[0-9]*\|LOCAL:[0-9]*" | paste - - - - |
    sort | uniq -c >"$OUT/decode-registers.txt"
  run_step decode-bench timeout 45 "$d4/new/bench_decode" --json "$OUT/bench_decode.json"
  run_step decode-bench-old timeout 35 "$d4/old/bench_decode" --json "$OUT/bench_decode_old.json"
  run_step decode-sdpa timeout 50 python3 scripts/bench_decode.py --ours "$OUT/bench_decode.json" \
    --old "$OUT/bench_decode_old.json" --clean --out "$OUT/decode_vs_sdpa.md"
  cp "$OUT"/decode_vs_sdpa.md "$OUT"/bench_decode*.json "$outer/" 2>/dev/null  # kept if a later step runs out of time
  run_step decode-test timeout "${SMK_DEC_TEST_S:-60}" "$d4/new/test_cuda_decode" \
    --gtest_filter="${SMK_DEC_TEST_FILTER:-*}"
  run_step decode-memcheck timeout 35 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$d4/new/test_cuda_decode" --gtest_filter='*CausalBand*:*BadInputs*:*ClusterMerge*:*KeptCounters*:*Strided*'
  grep -h -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran|ERROR SUMMARY" "$OUT"/decode-test.log \
    "$OUT"/decode-memcheck.log >"$OUT/decode-summary.txt" 2>/dev/null
  cat "$OUT/decode-registers.txt" >>"$OUT/decode-summary.txt" 2>/dev/null
  cp "$OUT"/decode_vs_sdpa.md "$OUT"/bench_decode*.json "$OUT/decode-summary.txt" "$outer/" 2>/dev/null
  tar -czf "$outer/decode-r4-logs.tgz" -C "$OUT" . 2>/dev/null
  OUT=$outer
fi

# dec5: decode session 6 (issue 8; the split kernel as a programmatic dependent launch, the fixed cost split by Nsight
# Compute), in one call of at most ~140 s: binaries built on the workstation for sm_90a and carried in
# build/dec5-bin.tar.xz (bench_decode, test_cuda_decode; old/bench_decode: the tree of 77c64e6, before session 6's
# decode changes, whose kernel is round 4's, e84495d's); bench_decode --quick (the dispatcher beside the plain launch,
# alone and after a small kernel, the empty calls, the merge's share, clean L2), the old one beside it, torch SDPA
# FLASH and cuDNN (clean L2 too); the GPU tests that exercise the session's changes; ncu (--set full) on the empty
# call and the (1, 32768) call; memcheck on the smallest cases and the programmatic launch's own test; the table,
# JSONs, summary, ncu page and a tarball of the logs go to $OUT; then the rest of the GPU test, whose log goes
# straight to $OUT (the call may end during it).
if want dec5; then
  outer=$OUT
  OUT=/tmp/o && mkdir -p "$OUT"
  d5=/tmp/d5 && mkdir -p "$d5" && tar -xJf build/dec5-bin.tar.xz -C "$d5"
  command -v cuobjdump >/dev/null && cuobjdump --dump-resource-usage "$d5/bench_decode" 2>/dev/null |
    grep -A1 decode_mma_kernel | grep -o "REG:[0-9]*\|STACK:[0-9]*\|SHARED:[0-9]*\|LOCAL:[0-9]*" | paste - - - - |
    sort | uniq -c >"$OUT/decode-registers.txt"
  run_step decode-bench timeout 30 "$d5/bench_decode" --quick --json "$OUT/bench_decode.json"
  oldjson=()
  run_step decode-bench-old timeout 25 "$d5/old/bench_decode" --json "$OUT/bench_decode_old.json" &&
    oldjson=(--old "$OUT/bench_decode_old.json")
  [ "${SMK_DEC5_SHORT:-0}" = 1 ] ||  # SMK_DEC5_SHORT=1: benches, the tests the changes touch and memcheck only
    run_step decode-sdpa timeout 30 python3 scripts/bench_decode.py --ours "$OUT/bench_decode.json" "${oldjson[@]}" \
    --clean --out "$OUT/decode_vs_sdpa.md"
  cp "$OUT"/decode_vs_sdpa.md "$OUT"/bench_decode*.json "$outer/" 2>/dev/null  # kept if a later step runs out of time
  run_step decode-test timeout 30 "$d5/test_cuda_decode" \
    --gtest_filter='*Programmatic*:*ClusterMerge*:*BitwiseDeterministic*:*GraphCapture*:*CausalBand*:*CausalMulti*'
  if [ "${SMK_DEC5_NCU:-1}" != 0 ] && [ "${SMK_DEC5_SHORT:-0}" != 1 ]; then  # SMK_DEC5_NCU=0: no profile
    run_step decode-ncu timeout 20 ncu --clock-control none --set full -k regex:decode_mma_kernel --launch-skip 2 \
      --launch-count 2 -f -o "$OUT/dec5" "$d5/bench_decode" --ncu
    ncu -i "$OUT/dec5.ncu-rep" --page details >"$OUT/ncu-details.txt" 2>&1
    ncu -i "$OUT/dec5.ncu-rep" --page raw --csv >"$OUT/ncu-raw.csv" 2>&1
  fi
  run_step decode-memcheck timeout 12 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$d5/test_cuda_decode" --gtest_filter='*BadInputs*:*Programmatic*'
  grep -h -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|^\[       OK \]|tests ran|ERROR SUMMARY" "$OUT"/decode-test.log \
    "$OUT"/decode-memcheck.log >"$OUT/decode-summary.txt" 2>/dev/null
  cat "$OUT/decode-registers.txt" >>"$OUT/decode-summary.txt" 2>/dev/null
  cp "$OUT"/decode_vs_sdpa.md "$OUT"/bench_decode*.json "$OUT/decode-summary.txt" "$OUT/ncu-details.txt" "$outer/" \
    2>/dev/null
  tar -czf "$outer/dec5-logs.tgz" -C "$OUT" . 2>/dev/null
  OUT=$outer
  [ "${SMK_DEC5_SHORT:-0}" = 1 ] || run_step decode-test-rest timeout "${SMK_DEC_REST_S:-40}" "$d5/test_cuda_decode" \
    --gtest_filter='*IssueLengths*:*KeptCounters*:*Strided*:*MergeOp*:*SplitRule*:*BadInputs*'
fi
if want mid16; then
  # mid16 (issue 3: 16-bit forward rows of 1025..12288), one call from binaries built for sm_90a off the device
  # (build/mid16-bin.tar.xz: new/ the tree's tune_softmax, softmaxkit and test_cuda_softmax, old/ the softmaxkit of the
  # commit before): the kernels side by side (tune_softmax --mid16: direct beside lane-staged at 1-3 rows ahead), the
  # bench old beside new per dtype (the sweep's lengths at 2^26 elements and the issue's shapes), the GPU tests small
  # and memcheck. Line-buffered, so a step cut by its limit keeps what it printed.
  carried m16 build/mid16-bin.tar.xz
  m16=$bin
  m16_keep() {
    for f in tune bench; do cat "$OUT"/m16-$f*.log >"$outer/m16-$f.txt" 2>/dev/null; done
    { printf '%s\n' "${summary[@]}"
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:" "$OUT"/m16x-*.log \
        2>/dev/null | head -n 200; } >"$outer/m16-summary.txt"
    tar -czf "$outer/m16-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  run_step m16-tune timeout "${SMK_M16_TUNE_S:-25}" stdbuf -oL "$m16/new/tune_softmax" --mid16
  m16_keep
  m16_shapes=${SMK_M16_SHAPES:-32768x1024,32768x2048,16384x4096,8192x8192,5461x12288,4096x16384}
  for dt in bf16 f16 f32; do
    for v in new old; do
      run_step "m16-bench-$dt-$v" timeout "${SMK_M16_BENCH_S:-7}" stdbuf -oL "$m16/$v/softmaxkit" bench \
        --op softmax,log_softmax,logsumexp,softmax_backward,log_softmax_backward --dtype $dt --no-cudnn \
        --target-ms 1 --min-reps 5 --max-reps 30 --format table --shape "$m16_shapes" --path auto
    done
    m16_keep
  done
  run_step m16x-lane timeout "${SMK_M16_LANE_S:-8}" "$m16/new/test_cuda_softmax" --gtest_filter='*LaneStaged*'
  run_step m16x-softmax-small timeout "${SMK_M16_TEST_S:-12}" env SMK_GPU_TEST_SMALL=1 "$m16/new/test_cuda_softmax" \
    --gtest_filter='*EveryPathEveryLength*:*BatchInvariance*:*TemperatureAndMasks*:*SixteenBit*'
  m16_keep
  run_step m16x-memcheck timeout "${SMK_M16_SAN_S:-15}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$m16/new/test_cuda_softmax" --gtest_filter='*LaneStaged*'
  m16_keep
  OUT=$outer
fi
# fwd16 (session 7, issue 3: the forward ops on rows up to 32768, 16-bit first), one call from binaries built off the
# device for sm_90a (build/fwd16-bin.tar.xz: new/{softmaxkit,test_cuda_softmax,test_cuda_warp_row,tune_softmax,
# accuracy_report} from the tree, old/softmaxkit from the commit before), in this order of need: the lane-staged
# block_per_row's bitwise test in full (more rows than any persistent grid) and under memcheck, the dispatcher's GPU
# tests (small rows) and test_cuda_warp_row, the bench old beside new, the accuracy report beside torch, tune_softmax
# --fwd16 (warp_per_row's elements a lane per op), ncu on the short rows' warp kernels. SMK_F16_SKIP: parts to leave
# out, of "lane tests bench acc tune ncu"; a part starts only while the call is younger than SMK_F16_DEADLINE_S.
# Logs in /tmp/o; the tables, a summary and a tarball of every log come back.
if want fwd16; then
  carried f16 build/fwd16-bin.tar.xz
  f16=$bin
  f16_t0=$SECONDS
  # A part runs only while the call is younger than SMK_F16_DEADLINE_S (default 140 s): the parts go in order of need.
  f16_go() { [[ " ${SMK_F16_SKIP:-} " != *" $1 "* ]] && (( SECONDS - f16_t0 < ${SMK_F16_DEADLINE_S:-140} )); }
  if f16_go lane; then
    run_step f16x-lane timeout "${SMK_F16_LANE_S:-40}" "$f16/new/test_cuda_softmax" --gtest_filter='*LaneStaged*'
    keep_logs f16
    run_step f16x-lanemem timeout "${SMK_F16_SAN_S:-35}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$f16/new/test_cuda_softmax" --gtest_filter='*LaneStaged*'
    keep_logs f16
  fi
  if f16_go tests; then
    run_step f16x-softmax timeout "${SMK_F16_TEST_S:-25}" env SMK_GPU_TEST_SMALL=1 "$f16/new/test_cuda_softmax" \
      --gtest_filter='*EveryPathEveryLength*:*BatchInvariance*:*TemperatureAndMasks*:*SixteenBit*'
    [ -x "$f16/new/test_cuda_warp_row" ] && run_step f16x-warp timeout 20 "$f16/new/test_cuda_warp_row"
    keep_logs f16
  fi
  if f16_go bench; then
    f16_shapes=${SMK_F16_SHAPES:-1048576x32,262144x128,131072x256,65536x512,32768x1024,32768x2048,16384x4096,8192x8192}
    f16_shapes=${SMK_F16_SHAPES:-$f16_shapes,5461x12288,4096x16384,8192x32000}
    f16_bench="bench --op softmax,log_softmax,logsumexp --dtype ${SMK_F16_DTYPES:-bf16,f32} --no-cudnn --target-ms 1"
    f16_bench="$f16_bench --min-reps 5 --max-reps 30 --format table --path auto --shape $f16_shapes"
    run_step f16-bench-old timeout "${SMK_F16_BENCH_S:-25}" stdbuf -oL "$f16/old/softmaxkit" $f16_bench
    keep_logs f16
    run_step f16-bench-new timeout "${SMK_F16_BENCH_S:-25}" stdbuf -oL "$f16/new/softmaxkit" $f16_bench
    keep_logs f16
  fi
  if f16_go acc; then
    f16_dump=$(mktemp -d)
    run_step f16x-acc timeout "${SMK_F16_ACC_S:-35}" "$f16/new/accuracy_report" --backend gpu_automatic \
      --backend gpu_warp_per_row --backend gpu_block_per_row --out "$OUT/f16-accuracy.md" --dump "$f16_dump"
    run_step f16x-vstorch timeout 30 python3 tests/conformance/vs_torch.py "$f16_dump" --out "$OUT/f16-vs-torch.md"
    cat "$OUT/f16-accuracy.md" "$OUT/f16-vs-torch.md" >>"$OUT/f16x-vstorch.log" 2>/dev/null
    rm -rf "$f16_dump"
    keep_logs f16
  fi
  if f16_go tune; then
    run_step f16-tune timeout "${SMK_F16_TUNE_S:-20}" stdbuf -oL "$f16/new/tune_softmax" --fwd16
    keep_logs f16
  fi
  if f16_go ncu; then
    f16_ncu() {  # the dispatcher's warp_per_row kernel on one short-row shape per call: stalls, issue, bytes in flight
      local spec specs="softmax:bf16:262144x128 logsumexp:bf16:262144x128 logsumexp:bf16:1048576x32"
      for spec in ${SMK_F16_NCU:-$specs softmax:f32:1048576x32}; do
        IFS=: read -r op dt shape <<<"$spec"
        echo "=== ncu: $op $dt $shape"
        timeout 12 ncu --clock-control none --kernel-name-base demangled -k regex:warp_rows_kernel -c 1 \
          --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
          --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis \
          "$f16/new/softmaxkit" bench --op "$op" --dtype "$dt" --shape "$shape" --no-cudnn --min-reps 1 --max-reps 1 \
          --target-ms 0.01 --path auto --format csv
      done
    }
    run_step f16-ncu f16_ncu
    keep_logs f16
  fi
  end_carried
fi
if want vocab7; then
  # vocab7 (issue 3: vocabulary-size forward rows, cluster_stage.cu), one call from binaries built for sm_90a off the
  # device (build/vocab7-bin.tar.xz: bin/ softmaxkit and test_cuda_cluster_stage of the tree, lib/ libfmt): the GPU
  # test, its timing (cluster sizes, old path), the bench, new (--path auto: cluster_stage) beside the old
  # paths in the same binary (--path split_row, cluster_row: what the dispatcher took before) on the issue's long
  # rows, then memcheck and racecheck on the test's small cases.
  carried v7 build/vocab7-bin.tar.xz
  v7=$bin
  run_step v7x-test timeout "${SMK_V7_TEST_S:-40}" "$v7/bin/test_cuda_cluster_stage"
  keep_logs v7
  run_step v7-timing timeout "${SMK_V7_TIMING_S:-25}" env SMK_CLUSTER_STAGE_TIMING=1 stdbuf -oL \
    "$v7/bin/test_cuda_cluster_stage" --gtest_filter='*Timing*'
  keep_logs v7
  for dt in f32 bf16; do
    run_step "v7-bench-$dt" timeout "${SMK_V7_BENCH_S:-25}" stdbuf -oL "$v7/bin/softmaxkit" bench \
      --op softmax,log_softmax,logsumexp --dtype $dt --no-cudnn --target-ms 2 --min-reps 5 --max-reps 30 \
      --format table --shape "${SMK_V7_SHAPES:-4096x151936,8192x65536,1024x262144,4096x40000}" \
      --path auto,split_row,cluster_row
    keep_logs v7
  done
  for tool in memcheck racecheck; do
    run_step "v7x-$tool" timeout "${SMK_V7_SAN_S:-20}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool $tool \
      --report-api-errors no --error-exitcode 9 "$v7/bin/test_cuda_cluster_stage" \
      --gtest_filter="${SMK_V7_SAN_FILTER:-*EveryOpEveryLength*:*Bitwise*}"
    keep_logs v7
  done
  end_carried
fi
# ce5 (session 7, issue 5: the fused cross-entropy in 16-bit; the forward alone), one call from binaries built off the
# device for sm_90a (build/ce5-bin.tar.xz: old/ and new/ tune_cross_entropy and test_cuda_cross_entropy; old = HEAD
# before ce5's kernel change, new = the tree). SMK_CE5_PARTS picks, of "ncu tune test memcheck torch" (default all):
#   ncu      Nsight Compute --set full on the fused kernel (bf16 8192x32000 and 4096x151936) and the forward's chunk
#            kernel (bf16 8192x32000), of $SMK_CE5_NCU_BIN (old|new, default old): the details page and the SASS
#            source page (executed instructions and stall samples per instruction) as text, in the tarball
#            (SMK_CE5_NCU_WHICH: a subset of "fused32k fused152k fwd32k");
#   tune     tune_cross_entropy new then old (--reps ${SMK_CE5_REPS:-5}) over $SMK_CE5_DTYPES, $SMK_CE5_SHAPES and
#            the variants $SMK_CE5_ONLY (old: SMK_CE5_OLD_DTYPES, _SHAPES, _ONLY where set);
#   test     the new cross-entropy GPU suite; memcheck: the same under compute-sanitizer (small rows);
#   torch    scripts/compare_torch_ce.py beside new and old.
# Back: machine.txt, ce5-tune-new.txt, ce5-tune-old.txt, ce5-torch.txt, ce5-summary.txt, ce5-logs.tgz.
if want ce5; then
  carried ce5 build/ce5-bin.tar.xz
  c5=$bin
  c5_part() { [[ " ${SMK_CE5_PARTS:-ncu tune test memcheck torch} " == *" $1 "* ]]; }
  c5_dt=${SMK_CE5_DTYPES:-bf16,f16,f32}
  c5_sh=${SMK_CE5_SHAPES:-4096x151936,8192x32000,4096x65536,16384x8192}
  if c5_part ncu; then
    c5_ncu() {  # c5_ncu NAME KERNEL-REGEX VARIANT SHAPE
      run_step "ce5n-$1" timeout 60 ncu --set full --clock-control none --kernel-name-base demangled -k "regex:$2" \
        -c 1 -o "$OUT/ncu-$1" "$c5/${SMK_CE5_NCU_BIN:-old}/tune_cross_entropy" --only "$3" --reps 1 --dtypes bf16 \
        --shapes "$4"
      ncu --import "$OUT/ncu-$1.ncu-rep" --page details --print-units base >"$OUT/ce5n-$1-details.txt" 2>&1
      ncu --import "$OUT/ncu-$1.ncu-rep" --page source --csv --print-source sass >"$OUT/ce5n-$1-sass.csv" 2>&1
      rm -f "$OUT/ncu-$1.ncu-rep"
      keep_logs ce5
    }
    c5_which=${SMK_CE5_NCU_WHICH:-fused32k fused152k fwd32k}
    [[ " $c5_which " == *" fused32k "* ]] && c5_ncu fused32k fused_kernel fused 8192x32000
    [[ " $c5_which " == *" fused152k "* ]] && c5_ncu fused152k fused_kernel fused 4096x151936
    [[ " $c5_which " == *" fwd32k "* ]] && c5_ncu fwd32k stats_kernel forward 8192x32000
  fi
  if c5_part tune; then
    run_step ce5-tune-new timeout "${SMK_CE5_TUNE_S:-60}" stdbuf -oL "$c5/new/tune_cross_entropy" \
      --reps "${SMK_CE5_REPS:-5}" --dtypes "$c5_dt" --shapes "$c5_sh" --only "${SMK_CE5_ONLY:-}" \
      --json "$OUT/tune_new.json"
    keep_logs ce5
    run_step ce5-tune-old timeout "${SMK_CE5_TUNE_S:-60}" stdbuf -oL "$c5/old/tune_cross_entropy" \
      --reps "${SMK_CE5_REPS:-5}" --dtypes "${SMK_CE5_OLD_DTYPES:-$c5_dt}" --shapes "${SMK_CE5_OLD_SHAPES:-$c5_sh}" \
      --only "${SMK_CE5_OLD_ONLY:-${SMK_CE5_ONLY:-}}" --json "$OUT/tune_old.json"
    keep_logs ce5
  fi
  if c5_part test; then
    run_step ce5x-test timeout "${SMK_CE5_TEST_S:-90}" "$c5/new/test_cuda_cross_entropy"
    keep_logs ce5
  fi
  if c5_part memcheck; then
    run_step ce5x-memcheck timeout "${SMK_CE5_SAN_S:-60}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$c5/new/test_cuda_cross_entropy" \
      --gtest_filter='CrossEntropyGpuFused.*:CrossEntropyGpu.EveryDtype*:CrossEntropyGpu.InPlace*'
    keep_logs ce5
  fi
  if c5_part torch && [ -f "$OUT/tune_new.json" ]; then
    run_step ce5-torch timeout "${SMK_CE5_TORCH_S:-60}" python3 scripts/compare_torch_ce.py --tune-json \
      "$OUT/tune_new.json" $([ -f "$OUT/tune_old.json" ] && echo --old-tune-json "$OUT/tune_old.json") \
      --out "$OUT" --rep-ms 50
    keep_logs ce5
  fi
  end_carried
fi
# ce6 (session 8, issue 5): the fused cross-entropy's cluster shapes at 151936 classes (every size from
# tune_cross_entropy --clusters, with each launch's resident clusters), f32 / bf16 8192x32000 timed three times,
# Nsight Compute --set full on the fastest 151936 shape, the GPU tests and memcheck, linear cross-entropy's
# chunk_rows / logit_rows splits beside torch, cross-entropy's accuracy beside torch (scripts/vs_torch_ce.py).
# Binaries built off the device for sm_90a, carried as build/ce6-bin.tar.xz (new/: tune_cross_entropy,
# test_cuda_cross_entropy, test_cuda_linear_cross_entropy, libsmk_lce_capi.so). SMK_CE6_PARTS picks the parts.
if want ce6; then
  carried ce6 build/ce6-bin.tar.xz
  c6=$bin
  c6_keep() {  # at most 8 files come back: the summary, four concatenations, the tarball of every log
    { printf '%s\n' "${summary[@]}"
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|ERROR SUMMARY|Failure|rror:" "$OUT"/ce6x-*.log 2>/dev/null |
        head -n 200; } >"$outer/ce6-summary.txt"
    cat "$OUT"/ce6-tune.log "$OUT"/ce6-tune32k.log "$OUT"/ce6-torch.log >"$outer/ce6-tune.txt" 2>/dev/null
    cat "$OUT"/ce6-ncu-which.log "$OUT"/ce6-ncu-details.log >"$outer/ce6-ncu.txt" 2>/dev/null
    cat "$OUT"/ce6-lce-*.log >"$outer/ce6-lce.txt" 2>/dev/null
    cat "$OUT"/ce6-acc.log >"$outer/ce6-acc.txt" 2>/dev/null
    tar -czf "$outer/ce6-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  c6_part() { [[ " ${SMK_CE6_PARTS:-tune ncu test memcheck lce acc torch} " == *" $1 "* ]]; }
  if c6_part tune; then
    run_step ce6-tune timeout "${SMK_CE6_TUNE_S:-60}" stdbuf -oL "$c6/new/tune_cross_entropy" --reps "${SMK_CE6_REPS:-5}" \
      --dtypes "${SMK_CE6_DTYPES:-bf16,f32}" --shapes "${SMK_CE6_SHAPES:-4096x151936}" \
      --clusters "${SMK_CE6_CLUSTERS:-6,7,8,9,10,11,12,16}" --only "${SMK_CE6_ONLY:-fused,forward}" \
      --json "$OUT/tune_ce6.json"
    c6_keep
    run_step ce6-tune32k timeout "${SMK_CE6_TUNE_S:-60}" stdbuf -oL "$c6/new/tune_cross_entropy" --reps 5 \
      --dtypes bf16,f32 --shapes "${SMK_CE6_SHAPES32K:-8192x32000,8192x32000,8192x32000}" --only fused,forward \
      --json "$OUT/tune_ce6_32k.json"
    c6_keep
  fi
  if c6_part ncu && [ -f "$OUT/tune_ce6.json" ]; then
    # The fastest bf16 4096x151936 one-read variant of the tune above (fused = the dispatcher's 5 blocks).
    c6_win=$(python3 -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1])) if x["dtype"]=="bf16" and x["cols"]==151936 and (x["variant"]=="fused" or x["variant"].startswith("fused/c"))]; print(min(r,key=lambda x:x["median_us"])["variant"] if r else "fused")' "$OUT/tune_ce6.json")
    echo "ncu on $c6_win" >"$OUT/ce6-ncu-which.log"
    run_step ce6-ncu timeout "${SMK_CE6_NCU_S:-45}" ncu --set full --clock-control none --kernel-name-base demangled \
      -k regex:fused_kernel -c 1 -o "$OUT/ncu-ce6" "$c6/new/tune_cross_entropy" --only "$c6_win" --reps 1 \
      --dtypes bf16 --shapes 4096x151936 --clusters "${c6_win#fused/c}"
    ncu --import "$OUT/ncu-ce6.ncu-rep" --page details --print-units base >"$OUT/ce6-ncu-details.log" 2>&1
    rm -f "$OUT/ncu-ce6.ncu-rep"
    c6_keep
  fi
  if c6_part test; then
    run_step ce6x-test timeout "${SMK_CE6_TEST_S:-90}" "$c6/new/test_cuda_cross_entropy" \
      --gtest_filter="${SMK_CE6_TEST_FILTER:--*SixtyFourBit*}"
    c6_keep
  fi
  if c6_part lcetest; then
    run_step ce6x-lcetest timeout 60 "$c6/new/test_cuda_linear_cross_entropy"
    c6_keep
  fi
  if c6_part memcheck; then
    run_step ce6x-memcheck timeout "${SMK_CE6_SAN_S:-60}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$c6/new/test_cuda_cross_entropy" \
      --gtest_filter='CrossEntropyGpuFused.*:CrossEntropyGpu.EveryDtype*:CrossEntropyGpu.InPlace*'
    c6_keep
  fi
  if c6_part torch && [ -f "$OUT/tune_ce6.json" ]; then
    python3 -c 'import json,sys; json.dump(sum((json.load(open(f)) for f in sys.argv[2:] if __import__("os").path.exists(f)), []), open(sys.argv[1], "w"), indent=1)' \
      "$OUT/tune_ce6_all.json" "$OUT/tune_ce6.json" "$OUT/tune_ce6_32k.json"
    run_step ce6-torch timeout "${SMK_CE6_TORCH_S:-60}" python3 scripts/compare_torch_ce.py --tune-json \
      "$OUT/tune_ce6_all.json" --out "$OUT" --rep-ms 50
    c6_keep
  fi
  if c6_part lce; then  # both shapes in one process (one torch import), every split at each
    run_step ce6-lce timeout "${SMK_CE6_LCE_S:-90}" python3 scripts/compare_torch_lce.py \
      --lib "$c6/new/libsmk_lce_capi.so" --shapes "${SMK_CE6_LCE_SHAPES:-8192x4096x151936,4096x2048x32000}" \
      --chunks "${SMK_CE6_LCE_CHUNKS:-0,1024/256,1280/128,1536/128,1792/64,2048/128,4096/1024,8192/256}" \
      --out "$OUT/lce"
    cp "$OUT/lce/compare_lce.md" "$OUT/ce6-lce-table.log" 2>/dev/null
    c6_keep
  fi
  if c6_part acc; then
    run_step ce6-acc timeout "${SMK_CE6_ACC_S:-60}" python3 scripts/vs_torch_ce.py --lib "$c6/new/libsmk_lce_capi.so" \
      --out "$OUT"
    c6_keep
  fi
  end_carried
fi
# few7 (session 7, issue 3): split_row's compact kernels for the common call (one launch, the three kernels, the
# backward's), the 16-bit chunk terms, the backward's dependent launches; old beside new in one call. Binaries built
# here for sm_90a, carried as build/few7-bin.tar.xz: old/softmaxkit (the tree before), lib/libfmt, new/ (softmaxkit,
# test_cuda_few_rows, test_cuda_grid_row, test_cuda_softmax). In the order of what matters most, logs kept after each.
if want few7; then
  carried f7 build/few7-bin.tar.xz
  f7=$bin
  f7_bench="bench --op softmax,log_softmax,logsumexp,softmax_backward,log_softmax_backward --dtype f32,bf16 --no-cudnn"
  # split_row forced: the kernels this step compares (1x32 is the one-launch kernel's fixed cost; every other shape
  # takes split_row under the dispatcher of the tree before).
  f7_bench="$f7_bench --shape 1x32,1x151936,32x128256,1x16777216,4x65536 --path split_row --target-ms 2 --max-reps 50"
  run_step f7x-few timeout "${SMK_F7_TEST_S:-40}" "$f7/new/test_cuda_few_rows"
  keep_logs f7
  run_step f7-bench-new timeout 25 "$f7/new/softmaxkit" $f7_bench --format table --json "$OUT/bench_new.json"
  keep_logs f7
  run_step f7-bench-old timeout 25 "$f7/old/softmaxkit" $f7_bench --format table --json "$OUT/bench_old.json"
  keep_logs f7
  run_step f7-timing timeout 20 env SMK_FEW_ROWS_TIMING=1 "$f7/new/test_cuda_few_rows" \
    --gtest_filter='*SplitRowVariantsTiming*'
  keep_logs f7
  run_step f7x-memcheck timeout 20 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 "$f7/new/test_cuda_few_rows" --gtest_filter='*CommonCall*:*BackwardSplit*'
  keep_logs f7
  run_step f7x-racecheck timeout 15 env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$f7/new/test_cuda_few_rows" --gtest_filter='*CommonCall*'
  keep_logs f7
  run_step f7x-grid timeout "${SMK_F7_GRID_S:-30}" "$f7/new/test_cuda_grid_row" --gtest_filter='-*LeversTiming*'
  keep_logs f7
  run_step f7x-softmax timeout 20 env SMK_GPU_TEST_SMALL=1 "$f7/new/test_cuda_softmax" \
    --gtest_filter='*EveryPathEveryLength*:*BatchInvariance*'
  keep_logs f7
  end_carried
fi
if want dec6; then
  # dec6 (issue 8, session 7): decode attention's pieces taken from an atomic cursor, one call from binaries built for
  # sm_90a off the device (build/dec6-bin.tar.xz: new/ bench_decode and test_cuda_decode of 6545701 — run 2 05f387e's
  # bench_decode —, whose code was withdrawn after the runs (4252d28), old/bench_decode dec5's of e9af5e6, the kernel
  # of HEAD before this session). Old beside new, torch's FLASH and cuDNN in the same call
  # (scripts/compare_torch_decode.py), the GPU tests, memcheck and racecheck, Nsight Compute on 16 x 8192 (the rule of
  # sessions 2-6 and the default) and on (1, 32768). At most 8 files come back: d6_keep after each step.
  carried d6 build/dec6-bin.tar.xz
  d6=$bin
  d6_keep() {
    { printf '%s\n' "${summary[@]}"; cat "$OUT/d6-registers.txt" 2>/dev/null
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|^\[       OK \]|tests ran|ERROR SUMMARY|Failure|rror:" \
        "$OUT"/d6x-*.log 2>/dev/null | head -n 150; } >"$outer/d6-summary.txt"
    cat "$OUT"/d6-bench.log "$OUT"/d6-bench-old.log >"$outer/d6-bench.txt" 2>/dev/null
    cp "$OUT"/bench_decode.json "$OUT"/bench_decode_old.json "$OUT"/decode_vs_torch.md "$outer/" 2>/dev/null
    cat "$OUT"/d6-ncu-*.txt >"$outer/d6-ncu.txt" 2>/dev/null
    tar -czf "$outer/d6-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  command -v cuobjdump >/dev/null && cuobjdump --dump-resource-usage "$d6/new/bench_decode" 2>/dev/null |
    grep -A1 decode_mma_kernel | grep -o "REG:[0-9]*\|STACK:[0-9]*\|SHARED:[0-9]*\|LOCAL:[0-9]*" | paste - - - - |
    sort | uniq -c >"$OUT/d6-registers.txt"
  run_step d6-bench timeout 40 "$d6/new/bench_decode" --quick --json "$OUT/bench_decode.json"
  run_step d6-bench-old timeout 25 "$d6/old/bench_decode" --quick --json "$OUT/bench_decode_old.json"
  d6_keep
  [ "${SMK_DEC6_TORCH:-1}" = 0 ] || run_step d6-torch timeout 60 python3 scripts/compare_torch_decode.py --ours "$OUT/bench_decode.json" \
    --old "$OUT/bench_decode_old.json" --out "$OUT/decode_vs_torch.md" --torch-json "$OUT/torch.json"
  d6_keep
  [ "${SMK_DEC6_TESTS:-1}" = 0 ] || run_step d6x-test timeout 45 "$d6/new/test_cuda_decode" --gtest_filter='*PiecesFromACursor*:*BitwiseDeterministic*:*ClusterMerge*:*GraphCapture*:*Programmatic*:*CausalBand*:*CausalMulti*'
  d6_keep
  [ "${SMK_DEC6_TESTS:-1}" = 0 ] || run_step d6x-memcheck timeout 40 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$d6/new/test_cuda_decode" --gtest_filter='*PiecesFromACursorSmall*:*BadInputs*:*Programmatic*'
  [ "${SMK_DEC6_TESTS:-1}" = 0 ] || run_step d6x-racecheck timeout 30 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$d6/new/test_cuda_decode" --gtest_filter='*PiecesFromACursorSmall*'
  d6_keep
  [ "${SMK_DEC6_REST:-1}" = 0 ] || [ "${SMK_DEC6_TESTS:-1}" = 0 ] || run_step d6x-rest timeout "${SMK_DEC6_REST_S:-45}" "$d6/new/test_cuda_decode" \
    --gtest_filter='*IssueLengths*:*KeptCounters*:*Strided*:*MergeOp*:*SplitRule*:*BadInputs*'
  d6_keep
  [ "${SMK_DEC6_NCU:-1}" = 0 ] || for r in ${SMK_DEC6_NCU_ROWS:-2 0}; do  # SMK_DEC6_NCU=0: no profile
    run_step d6-ncu-$r timeout 30 ncu --clock-control none --section SpeedOfLight --section LaunchStats \
      --section Occupancy --section WarpStateStats --section SchedulerStats --metrics \
      sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_elapsed.avg \
      -k regex:decode_mma_kernel --launch-skip 2 --launch-count 2 "$d6/new/bench_decode" --ncu-row $r
    cp "$OUT/d6-ncu-$r.log" "$OUT/d6-ncu-$r.txt"
    d6_keep
  done
  end_carried
fi
# dec9 (session 9, issue 8): decode's K and V rows by the bulk copy engine (cp.async.bulk into padded rows, one
# transaction barrier a ring slot) instead of 16-byte cp.async. Binaries built off the device for sm_90a
# (build/dec9-bin.tar.xz: new/ bench_decode, test_cuda_decode, test_cuda; old/bench_decode: the same bench source
# linked with HEAD's decode_mma.cu before the change). In order of need, each part only while the call is younger
# than SMK_DEC9_DEADLINE_S (default 80 s): old beside new (bench_decode --ab: the dispatcher twice, 3 stages,
# head-major K and V), the decode GPU tests and the merge op's, memcheck on the small cases, torch's FLASH and cuDNN
# (scripts/compare_torch_decode.py), then more samples of both and the table redrawn from them. Back:
# d9-summary.txt, d9-bench.txt, decode_vs_torch.md, the JSONs, d9-logs.tgz.
if want dec9; then
  carried d9 build/dec9-bin.tar.xz
  d9=$bin
  d9_left() { [ $SECONDS -lt "${SMK_DEC9_DEADLINE_S:-80}" ]; }
  d9_keep() {
    { printf '%s\n' "${summary[@]}"; cat "$OUT/d9-registers.txt" 2>/dev/null
      grep -h -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|tests ran|ERROR SUMMARY|Failure|rror:" \
        "$OUT"/d9x-*.log 2>/dev/null | head -n 150; } >"$outer/d9-summary.txt"
    cat "$OUT"/d9-bench-*.log >"$outer/d9-bench.txt" 2>/dev/null
    cp "$OUT"/decode_vs_torch.md "$OUT"/torch.json "$outer/" 2>/dev/null
    tar -czf "$outer/d9-logs.tgz" -C "$OUT" . 2>/dev/null
  }
  command -v cuobjdump >/dev/null && cuobjdump --dump-resource-usage "$d9/new/bench_decode" 2>/dev/null |
    grep -A1 decode_mma_kernel | grep -o "REG:[0-9]*\|STACK:[0-9]*\|SHARED:[0-9]*\|LOCAL:[0-9]*" | paste - - - - |
    sort | uniq -c >"$OUT/d9-registers.txt"
  d9_new=() d9_old=()
  d9_ab() {  # one sample of each: d9_ab N
    run_step d9-bench-new$1 timeout 25 "$d9/new/bench_decode" --ab --json "$OUT/new$1.json" &&
      d9_new+=(--ours "$OUT/new$1.json")
    run_step d9-bench-old$1 timeout 25 "$d9/old/bench_decode" --ab --json "$OUT/old$1.json" &&
      d9_old+=(--old "$OUT/old$1.json")
    d9_keep
  }
  d9_ab 1
  d9_left && run_step d9x-test timeout 50 "$d9/new/test_cuda_decode"
  d9_left && run_step d9x-merge timeout 15 "$d9/new/test_cuda" --gtest_filter='*Merge*'
  d9_keep
  d9_left && run_step d9x-memcheck timeout 30 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 "$d9/new/test_cuda_decode" --gtest_filter='*CausalBand*:*CausalMulti*:*BadInputs*:*Programmatic*'
  d9_keep
  ((${#d9_new[@]})) && d9_left && run_step d9-torch timeout 40 python3 scripts/compare_torch_decode.py "${d9_new[@]}" \
    "${d9_old[@]}" --out "$OUT/decode_vs_torch.md" --torch-json "$OUT/torch.json"
  d9_keep
  for n in 2 3; do d9_left && d9_ab $n; done
  [ -f "$OUT/torch.json" ] && run_step d9-table timeout 10 python3 scripts/compare_torch_decode.py "${d9_new[@]}" \
    "${d9_old[@]}" --out "$OUT/decode_vs_torch.md" --torch-in "$OUT/torch.json"
  d9_keep
  end_carried
fi
# mid8 (session 8, issue 3): logsumexp / the state on block_per_row with the next rows' loads in flight in registers
# (block_row.cu block_rows_ahead_kernel). Binaries built off the device for sm_90a (build/mid8-bin.tar.xz: new/
# tune_softmax, test_cuda_block_row, test_cuda_softmax, lib/libfmt.so.9). In order of need, each part only while the
# call is younger than SMK_MID8_DEADLINE_S (default 150 s): the kernel's bitwise test; tune_softmax --mid8 (direct
# beside 1 / 2 rows ahead, plain / evict-first loads); Nsight Compute (full set) on our kernels (tune_softmax
# --mid8-ncu) and on torch.compile's (scripts/ncu_torch_mid8.py: f32 logsumexp 4096x16384, bf16 log-softmax backward
# 8192x32000); memcheck over the new test; the softmax suite's dispatcher cases. Back: mid8-summary.txt, mid8-tune.txt,
# mid8-ncu.txt, mid8-torch.txt, mid8-logs.tgz.
if want mid8; then
  carried mid8 build/mid8-bin.tar.xz
  m8=$bin
  m8_t0=$SECONDS
  m8_go() { [[ " ${SMK_MID8_SKIP:-} " != *" $1 "* ]] && (( SECONDS - m8_t0 < ${SMK_MID8_DEADLINE_S:-150} )); }
  m8_keep() {
    keep_logs mid8
    cat "$OUT"/mid8-ncu-ours.txt "$OUT"/mid8-ncu-ours.log >"$outer/mid8-ncu.txt" 2>/dev/null
    cat "$OUT"/mid8-ncu-torch.txt "$OUT"/mid8-ncu-torch.log >"$outer/mid8-torch.txt" 2>/dev/null
    rm -f "$outer"/mid8-ncu-*.txt
  }
  if m8_go test; then
    run_step mid8x-ahead timeout "${SMK_MID8_TEST_S:-40}" "$m8/new/test_cuda_block_row"
    m8_keep
  fi
  if m8_go tune; then
    run_step mid8-tune timeout "${SMK_MID8_TUNE_S:-40}" stdbuf -oL "$m8/new/tune_softmax" --mid8
    m8_keep
  fi
  if m8_go ncu; then
    run_step mid8-ncu-ours timeout "${SMK_MID8_NCU_S:-45}" ncu --set full --clock-control none \
      --kernel-name-base demangled -k regex:'block_rows|backward' -c 8 --print-summary none -o "$OUT/ncu-ours" \
      "$m8/new/tune_softmax" --mid8-ncu
    ncu --import "$OUT/ncu-ours.ncu-rep" --page details --print-units base >"$OUT/mid8-ncu-ours.txt" 2>&1
    rm -f "$OUT/ncu-ours.ncu-rep"
    m8_keep
  fi
  if m8_go torch; then
    run_step mid8-ncu-torch env TORCHINDUCTOR_CACHE_DIR=/tmp/mid8-inductor timeout "${SMK_MID8_TORCH_S:-70}" \
      ncu --set full --clock-control none --profile-from-start off -k regex:triton -c 4 --print-summary none \
      -o "$OUT/ncu-torch" python3 scripts/ncu_torch_mid8.py
    ncu --import "$OUT/ncu-torch.ncu-rep" --page details --print-units base >"$OUT/mid8-ncu-torch.txt" 2>&1
    rm -f "$OUT/ncu-torch.ncu-rep"
    m8_keep
  fi
  if m8_go memcheck; then
    run_step mid8x-memcheck timeout "${SMK_MID8_SAN_S:-35}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$m8/new/test_cuda_block_row"
    m8_keep
  fi
  if m8_go suite && [ -x "$m8/new/test_cuda_softmax" ]; then
    run_step mid8x-softmax timeout "${SMK_MID8_SUITE_S:-30}" env SMK_GPU_TEST_SMALL=1 "$m8/new/test_cuda_softmax" \
      --gtest_filter='*EveryPathEveryLength*:*BatchInvariance*:*TemperatureAndMasks*'
    m8_keep
  fi
  end_carried
fi
# vocab8 (session 8, issue 3: vocabulary-size rows): split_stream (split_row.cu: the three kernels' work in one
# persistent launch, a row's second read from L2), cluster_stage's review fixes and its one-row cost. One call from
# binaries built off the device for sm_90a (build/vocab8-bin.tar.xz: bin/ softmaxkit, test_cuda_cluster_stage,
# test_cuda_few_rows; lib/ libfmt). SMK_V8_PARTS picks, in this order, of
# "stage few stime otime ncu memcheck racecheck onencu torch bench" (default all):
#   stage     the whole cluster_stage GPU test (the review's StagesRefillAtFewClusters, DispatcherRule)
#   few       split_stream's bitwise test and the split_row tests it can change
#   stime     StreamTiming: split_stream by lag and hints beside the three kernels (SMK_STREAM_SHAPES=1: two shapes)
#   otime     cluster_stage's OneRowTiming (one row; slice caps)
#   ncu       Nsight Compute on split_row's chunk / normalising kernels and split_stream at f32 and bf16 4096x151936
#   memcheck, racecheck: compute-sanitizer on the small cases of both tests
#   onencu    Nsight Compute on one row: cluster_stage (bf16 1x65536, f32 1x40000) beside split_row's one launch
#   torch     Nsight Compute on torch.compile's kernels at 4096x151936 (scripts/ncu_torch_vocab8.py), Inductor's source
#   bench     softmaxkit bench, the dispatcher (--path auto) on the long rows
# Back: machine.txt, v8-summary.txt, v8-logs.tgz and the timing / profile logs as .txt (at most 8 files).
if want vocab8; then
  carried v8 build/vocab8-bin.tar.xz
  v8=$bin
  v8_go() { [[ " ${SMK_V8_PARTS:-stage few stime otime ncu memcheck racecheck onencu torch bench} " == *" $1 "* ]]; }
  v8_keep() {
    keep_logs v8
    rm -f "$outer"/v8x-*.txt  # the tests' logs travel in the tarball; the summary has their result lines
  }
  v8_ncu_sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy"
  v8_ncu_sections="$v8_ncu_sections --section WarpStateStats --section SchedulerStats"
  if v8_go stage; then
    run_step v8x-stage timeout "${SMK_V8_STAGE_S:-45}" "$v8/bin/test_cuda_cluster_stage" \
      --gtest_filter="${SMK_V8_STAGE_FILTER:-*}"
    v8_keep
  fi
  if v8_go few; then
    run_step v8x-few timeout "${SMK_V8_FEW_S:-45}" "$v8/bin/test_cuda_few_rows" \
      --gtest_filter="${SMK_V8_FEW_FILTER:-*StreamBitwise*:*ManyChunks*:*CommonCall*}"
    v8_keep
  fi
  if v8_go stime; then
    run_step v8-stime timeout "${SMK_V8_STIME_S:-30}" env SMK_STREAM_TIMING=1 stdbuf -oL "$v8/bin/test_cuda_few_rows" \
      --gtest_filter='*StreamTiming*'
    v8_keep
  fi
  if v8_go otime; then
    run_step v8-otime timeout "${SMK_V8_OTIME_S:-20}" env SMK_CLUSTER_STAGE_TIMING=1 stdbuf -oL \
      "$v8/bin/test_cuda_cluster_stage" --gtest_filter='*OneRowTiming*'
    v8_keep
  fi
  if v8_go ncu; then
    # f32 then bf16: chunk_states_plain, normalize_plain (the three kernels), split_stream.
    run_step v8-ncu timeout "${SMK_V8_NCU_S:-45}" env SMK_STREAM_NCU=1 ncu --clock-control none \
      --kernel-name-base demangled -k regex:"chunk_states_plain|normalize_plain|split_stream" -c 6 $v8_ncu_sections \
      --print-units base "$v8/bin/test_cuda_few_rows" --gtest_filter='*StreamProfileCalls*'
    v8_keep
  fi
  if v8_go memcheck; then
    run_step v8x-memcheck timeout "${SMK_V8_SAN_S:-25}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$v8/bin/test_cuda_cluster_stage" \
      --gtest_filter='*StagesRefill*:*Bitwise*:*DispatcherRule*'
    run_step v8x-memcheck-few timeout "${SMK_V8_SAN_S:-25}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$v8/bin/test_cuda_few_rows" --gtest_filter='*StreamBitwise*'
    v8_keep
  fi
  if v8_go racecheck; then
    run_step v8x-racecheck timeout "${SMK_V8_RACE_S:-15}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool racecheck \
      --error-exitcode 9 "$v8/bin/test_cuda_cluster_stage" --gtest_filter='*StagesRefill*'
    run_step v8x-racecheck-few timeout "${SMK_V8_RACE_S:-15}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer \
      --tool racecheck --error-exitcode 9 "$v8/bin/test_cuda_few_rows" --gtest_filter='*StreamBitwise*'
    v8_keep
  fi
  if v8_go onencu; then
    v8_onencu() {  # one row, GPU time and where it goes: cluster_stage (auto) beside split_row's one launch
      local spec
      command -v cuobjdump >/dev/null && cuobjdump -sass "$v8/bin/softmaxkit" 2>/dev/null |
        awk '/Function : /{f=$3} /^ +\/\*[0-9a-f]{4}\*\//{n[f]++} END{for (k in n) print n[k] * 16, k}' |
        grep -E "cluster_stage_kernel|cluster_split_plain" | sort -n
      for spec in auto:bf16:1x65536 split_row:bf16:1x65536 auto:f32:1x40000 split_row:f32:1x40000; do
        IFS=: read -r path dt shape <<<"$spec"
        echo "=== ncu: softmax $dt $shape --path $path"
        timeout 15 ncu --clock-control none --kernel-name-base demangled -k regex:"cluster_stage|cluster_split" -c 1 \
          --section SpeedOfLight --section LaunchStats --section WarpStateStats --section SchedulerStats \
          --section InstructionStats --metrics sm__cycles_active.max,sm__cycles_active.avg,gpu__time_duration.sum \
          --print-units base "$v8/bin/softmaxkit" bench --op softmax --dtype "$dt" --shape "$shape" --no-cudnn \
          --min-reps 1 --max-reps 1 --target-ms 0.01 --path "$path" --format csv
      done
    }
    run_step v8-onencu v8_onencu
    v8_keep
  fi
  if v8_go torch; then
    run_step v8-torch timeout "${SMK_V8_TORCH_S:-60}" env TORCH_LOGS=output_code ncu --profile-from-start off \
      --clock-control none $v8_ncu_sections --print-units base python3 scripts/ncu_torch_vocab8.py \
      ${SMK_V8_TORCH_SPECS:-softmax:f32 log_softmax:bf16}
    v8_keep
  fi
  if v8_go bench; then
    run_step v8-bench timeout "${SMK_V8_BENCH_S:-30}" stdbuf -oL "$v8/bin/softmaxkit" bench --op softmax,log_softmax \
      --dtype f32,bf16 --no-cudnn --target-ms 2 --min-reps 5 --max-reps 30 --format table \
      --shape "${SMK_V8_SHAPES:-4096x151936,1024x262144,32x128256,1x151936}" --path auto
    v8_keep
  fi
  end_carried
fi
# short8 (session 8): warp_per_row's short rows (issue 3). Binaries built off the device (build/short8-bin.tar.xz:
# softmaxkit, tune_softmax, test_cuda_warp_row, lib/). Parts in order of need, each started only while the call is
# younger than SMK_S8_DEADLINE_S (default 110 s): tune (tune_softmax --short8: every variant beside the kernel as it
# was), test (the variants bitwise the default kernel, which is checked against float64) and memcheck on it (small
# mode), ncu (Nsight Compute --set full on our warp kernels: f32 262144x128 and 1048576x32 softmax, bf16 1048576x32 and
# 32768x1024 softmax backward), torch (--set full on torch.compile's kernels for f32 262144x128 softmax and bf16
# 1048576x32 softmax backward, scripts/ncu_torch_short8.py, with their Triton source and PTX loads / stores), bench
# (softmaxkit bench on the short rows, the dispatcher's path; old/softmaxkit first where the tarball has one).
if want short8; then
  carried s8 build/short8-bin.tar.xz
  s8=$bin
  s8_t0=$SECONDS
  s8_go() { [[ " ${SMK_S8_SKIP:-} " != *" $1 "* ]] && (( SECONDS - s8_t0 < ${SMK_S8_DEADLINE_S:-110} )); }
  if s8_go tune; then
    run_step s8-tune timeout "${SMK_S8_TUNE_S:-30}" stdbuf -oL "$s8/tune_softmax" --short8
    keep_logs s8
  fi
  if s8_go test; then
    run_step s8x-test timeout "${SMK_S8_TEST_S:-35}" "$s8/test_cuda_warp_row" --gtest_filter="${SMK_S8_TESTS:-*Grids*}"
    keep_logs s8
  fi
  if s8_go memcheck; then
    run_step s8x-memcheck timeout "${SMK_S8_SAN_S:-25}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$s8/test_cuda_warp_row" --gtest_filter="${SMK_S8_TESTS:-*Grids*}"
    keep_logs s8
  fi
  if s8_go ncu; then
    s8_ncu() {
      local spec specs="softmax:f32:262144x128 softmax:f32:1048576x32 softmax_backward:bf16:1048576x32"
      for spec in ${SMK_S8_NCU:-$specs softmax_backward:bf16:32768x1024}; do
        IFS=: read -r op dt shape <<<"$spec"
        echo "=== ncu: $op $dt $shape"
        # A backward op's bench runs a forward softmax first (its y): match the backward kernel only.
        local kernel=warp_rows_kernel
        [[ $op == *backward ]] && kernel=backward_warp_kernel
        timeout 20 ncu --set full --clock-control none --kernel-name-base demangled --print-units base \
          -k regex:"$kernel" -c 1 "$s8/softmaxkit" bench --op "$op" --dtype "$dt" \
          --shape "$shape" --no-cudnn --min-reps 1 --max-reps 1 --target-ms 0.01 --path auto --format csv
      done
    }
    run_step s8-ncu s8_ncu
    keep_logs s8
  fi
  if s8_go torch; then
    run_step s8-torch timeout "${SMK_S8_TORCH_S:-50}" env TORCH_LOGS=output_code TRITON_CACHE_DIR=/tmp/s8-triton \
      ncu --profile-from-start off --set full --clock-control none --print-units base python3 scripts/ncu_torch_short8.py
    keep_logs s8
  fi
  if s8_go bench; then
    # The dispatcher's path; with old/softmaxkit in the tarball (run 2: the warp kernels as before short8's rule) old
    # then new, one after the other.
    for s8_which in old new; do
      s8_cli=$s8/softmaxkit
      [ "$s8_which" = old ] && { [ -x "$s8/old/softmaxkit" ] || continue; s8_cli=$s8/old/softmaxkit; }
      run_step "s8-bench-$s8_which" timeout "${SMK_S8_BENCH_S:-20}" stdbuf -oL "$s8_cli" bench \
        --op "${SMK_S8_OPS:-softmax,log_softmax,softmax_backward,log_softmax_backward}" --dtype f32,bf16 --no-cudnn \
        --target-ms 1 --min-reps 5 --max-reps 30 --format table --path auto \
        --shape "${SMK_S8_SHAPES:-262144x128,1048576x32,32768x1024}"
      keep_logs s8
    done
  fi
  end_carried
fi
# pfx8 (session 8, issue 7): the prefill kernel's softmax pinned ahead of the P·V wait (ptx.cuh keep_ahead_of_wait:
# ptxas had moved the wait above the exponentials) and three consumer warpgroups under the producer at D = 64
# (warps = 13). Binaries built here for sm_90a, carried as build/pfx8-bin.tar.xz (new/: tune_prefill,
# test_cuda_prefill; lib/): the unpinned and pinned builds are columns of one tune_prefill, so one binary is the A/B.
# SMK_PFX8_PARTS (default "tune sdpa test memcheck racecheck"; "sweep" adds the sequence-length sweep) picks, in this
# order, each capped: tune (issue rows, TMA columns), SDPA FLASH and cuDNN three times each, tune twice more (the
# second in reverse column order), the sweep, the prefill test, memcheck (SMK_PFX8_MEMCHECK: its gtest filter) and
# racecheck. Logs in /tmp/o; back: p8-*.txt, a summary and a tarball.
if want pfx8; then
  carried p8 build/pfx8-bin.tar.xz
  p8=$bin
  p8_go() { [[ " ${SMK_PFX8_PARTS:-tune sdpa test memcheck racecheck} " == *" $1 "* ]]; }
  # p8_tune NAME [ROWS [CAP [REVERSE]]]: REVERSE=1 times the columns in reverse order (tune_prefill says why).
  p8_tune() { run_step "$1" env SMK_TUNE_TMA=only SMK_TUNE_ROWS="${2:-issue}" SMK_TUNE_REVERSE="${4:-0}" \
    timeout "${3:-30}" "$p8/new/tune_prefill" --json "$OUT/$1.json"; keep_logs p8; }
  p8_go tune && p8_tune p8-tune1
  if p8_go sdpa; then
    run_step p8-sdpa timeout "${SMK_PFX8_SDPA_S:-60}" python3 scripts/bench_sdpa.py --ours "$OUT/p8-tune1.json" \
      --backends flash,cudnn --repeat 3 --out "$OUT/p8-vs-sdpa.md" --save-sdpa "$OUT/p8-sdpa.json"
    keep_logs p8
  fi
  p8_go tune && p8_tune p8-tune2 issue 30 1 && p8_tune p8-tune3
  p8_go sweep && p8_tune p8-sweep all "${SMK_PFX8_SWEEP_S:-60}"
  if p8_go test; then
    run_step p8x-test timeout "${SMK_PFX8_TEST_S:-60}" "$p8/new/test_cuda_prefill"
    keep_logs p8
  fi
  if p8_go memcheck; then
    run_step p8x-memcheck timeout "${SMK_PFX8_MEMCHECK_S:-30}" compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$p8/new/test_cuda_prefill" --gtest_filter="${SMK_PFX8_MEMCHECK:-*WgmmaSameBits*:*ClearErrors*}"
    keep_logs p8
  fi
  if p8_go racecheck; then
    run_step p8x-racecheck timeout "${SMK_PFX8_RACECHECK_S:-25}" compute-sanitizer --tool racecheck --error-exitcode 9 \
      "$p8/new/test_cuda_prefill" --gtest_filter='*WgmmaSameBits*'
    keep_logs p8
  fi
  end_carried
fi

# pfx9 (session 9, issue 7): the causal schedule (chunks of (batch, head) pairs, heaviest query block first) and the
# trimmed diagonal tile of the prefill kernel, A/B in one binary (tune_prefill SMK_TUNE_PFX9=1: base / sched / trim /
# both / dispatcher columns). Binaries built here for sm_90a, carried as build/pfx9-bin.tar.xz (new/: tune_prefill,
# test_cuda_prefill; lib/). Order, each capped: tune (issue rows), SDPA FLASH and cuDNN three times each, the prefill
# test, tune in reverse column order, memcheck and racecheck (WgmmaSameBits: causal cases on the new default), tune
# twice more (forward, reverse). Logs in /tmp/o; back: p9-*.txt, a summary and a tarball (8 files with machine.txt).
if want pfx9; then
  carried p9 build/pfx9-bin.tar.xz
  p9=$bin
  p9_tune() { run_step "$1" env SMK_TUNE_PFX9=1 SMK_TUNE_ROWS=issue SMK_TUNE_REVERSE="$2" timeout 20 \
    "$p9/new/tune_prefill" --json "$OUT/$1.json"; keep_logs p9; }
  p9_tune p9-tune1 0
  run_step p9-sdpa timeout "${SMK_PFX9_SDPA_S:-45}" python3 scripts/bench_sdpa.py --ours "$OUT/p9-tune1.json" \
    --backends flash,cudnn --repeat 3 --pick "64=both;128=both" --out "$OUT/p9-vs-sdpa.md" \
    --save-sdpa "$OUT/p9-sdpa.json"
  keep_logs p9
  run_step p9x-test timeout "${SMK_PFX9_TEST_S:-60}" "$p9/new/test_cuda_prefill"
  keep_logs p9
  p9_tune p9-tune2 1
  run_step p9x-memcheck timeout "${SMK_PFX9_MEMCHECK_S:-25}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$p9/new/test_cuda_prefill" --gtest_filter='*WgmmaSameBits*'
  keep_logs p9
  run_step p9x-racecheck timeout "${SMK_PFX9_RACECHECK_S:-25}" compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$p9/new/test_cuda_prefill" --gtest_filter='*WgmmaSameBits*'
  keep_logs p9
  p9_tune p9-tune3 0
  p9_tune p9-tune4 1
  end_carried
fi
# ce9 (session 9, issue 5): the fused cross-entropy's tail launch (the last partial round of a single-block launch on
# clusters, the same bits) and dependent launches, timed beside the launch before them in one binary; the f32 target
# entry formed in double (the mean's scale exact). Binaries built off the device for sm_90a, carried as
# build/ce9-bin.tar.xz (new/: tune_cross_entropy, test_cuda_cross_entropy, test_cuda_linear_cross_entropy,
# libsmk_lce_capi.so; old/: the tune binary of the tree before). In the order of what matters most, logs kept after each; SMK_CE9_PARTS picks the parts.
# (fixce9, after the review's F15 / F6: the tail launch is removed, with tune's fused/tN variants; the test that
# pinned its bits is now PdlRuleAndSameBits: the shipped rule's pdl flag and dependent launches bitwise plain.)
if want ce9; then
  carried ce9 build/ce9-bin.tar.xz
  c9=$bin
  c9_part() { [[ " ${SMK_CE9_PARTS:-tune test acc memcheck lcetest} " == *" $1 "* ]]; }
  if c9_part tune; then
    run_step ce9-tune32k timeout "${SMK_CE9_TUNE_S:-30}" stdbuf -oL "$c9/new/tune_cross_entropy" \
      --reps "${SMK_CE9_REPS:-9}" --dtypes f32,bf16 --shapes "${SMK_CE9_SHAPES:-8192x32000,8192x32000,8192x32000}" \
      --only fused --json "$OUT/tune_ce9_32k.json"
    keep_logs ce9
    # The tree before (old/: build/ce6's tune_cross_entropy, the kernels of HEAD before ce9), then ours again: the
    # dispatcher's launch before and after, beside each other in this run.
    if [ -x "$c9/old/tune_cross_entropy" ]; then
      run_step ce9-tuneold timeout 25 stdbuf -oL "$c9/old/tune_cross_entropy" --reps "${SMK_CE9_REPS:-9}" \
        --dtypes f32,bf16 --shapes 8192x32000,8192x32000,8192x32000 --only fused --json "$OUT/tune_ce9_old.json"
      run_step ce9-tunenew2 timeout 20 stdbuf -oL "$c9/new/tune_cross_entropy" --reps "${SMK_CE9_REPS:-9}" \
        --dtypes f32 --shapes 8192x32000,8192x32000 --only fused --json "$OUT/tune_ce9_new2.json"
      keep_logs ce9
    fi
    run_step ce9-tune152k timeout "${SMK_CE9_TUNE152_S:-25}" stdbuf -oL "$c9/new/tune_cross_entropy" --reps 7 \
      --dtypes bf16,f32 --shapes 4096x151936 --only fused/base,fused/pdl --json "$OUT/tune_ce9_152k.json"
    keep_logs ce9
  fi
  if c9_part test; then
    run_step ce9x-test timeout "${SMK_CE9_TEST_S:-60}" "$c9/new/test_cuda_cross_entropy" \
      --gtest_filter="${SMK_CE9_TEST_FILTER:--*SixtyFourBit*}"
    keep_logs ce9
  fi
  if c9_part acc; then
    run_step ce9-acc timeout "${SMK_CE9_ACC_S:-40}" python3 scripts/vs_torch_ce.py --lib "$c9/new/libsmk_lce_capi.so" \
      --out "$OUT"
    keep_logs ce9
  fi
  if c9_part memcheck; then
    run_step ce9x-memcheck timeout "${SMK_CE9_SAN_S:-40}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$c9/new/test_cuda_cross_entropy" \
      --gtest_filter='CrossEntropyGpuFused.PdlRule*:CrossEntropyGpu*.TargetEntry*:CrossEntropyGpuFused.EveryDtype*'
    keep_logs ce9
  fi
  if c9_part lcetest; then
    run_step ce9x-lcetest timeout "${SMK_CE9_LCE_S:-30}" "$c9/new/test_cuda_linear_cross_entropy"
    keep_logs ce9
  fi
  end_carried
fi
# ce10 (session 10, issue 5): the one-read cross-entropy's instruction diet (fused.cu diet_exp: FusedTuning::diet 2,
# bf16 on the wide block; diet 1 was removed after the run of 86188de) beside the dispatcher's kernel, and the mean's
# f32 target entries re-formed in double by the mean's kernel (on at 86188de; kFusedTargetFix off since, so the
# fused/pdl and fused/base lines are then the fix-off kernel) beside fused/nofix, all in one tune binary; then the
# GPU tests, memcheck (small), vs_torch_ce.py and the linear cross-entropy test. Binaries built off the device for
# sm_90a (build/ce10-bin.tar.xz: bin/ tune_cross_entropy, test_cuda_cross_entropy, test_cuda_linear_cross_entropy,
# libsmk_lce_capi.so; lib/). Caps: SMK_CE10_TUNE_S (default 45 s), SMK_CE10_TEST_S (90), SMK_CE10_ACC_S (40),
# SMK_CE10_SAN_S (40), SMK_CE10_LCE_S (30), SMK_CE10_NCU_S (30); SMK_CE10_PARTS picks the parts. Back:
# ce10-summary.txt, ce10-tune.txt, ce10-acc.txt, ce10-ncu.txt, ce10-logs.tgz (the tune's JSON and vs_torch_ce's tables).
# Ran on 86188de's binaries. Since review F14 (3eb5006) the diet variant (fused/diet, CrossEntropyGpuFused.Diet*) is
# removed: this step runs as written only from 86188de's tree.
if want ce10; then
  carried ce10 build/ce10-bin.tar.xz
  c10=$bin/bin
  c10_part() { [[ " ${SMK_CE10_PARTS:-tune test memcheck acc lcetest ncu} " == *" $1 "* ]]; }
  c10_t0=$SECONDS
  if c10_part tune; then
    c10_tune() {  # the samples: each shape listed n times is n samples of every variant picked
      local tb=$c10/tune_cross_entropy
      stdbuf -oL "$tb" --reps 7 --dtypes bf16 --only fused/base,fused/diet \
        --shapes 4096x151936,4096x151936,4096x151936,4096x151936 --json "$OUT/ce10_bf16_152k.json" || return 1
      stdbuf -oL "$tb" --reps 9 --dtypes bf16 --only fused/pdl,fused/diet \
        --shapes 8192x32000,8192x32000,8192x32000,8192x32000 --json "$OUT/ce10_bf16_32k.json" || return 1
      stdbuf -oL "$tb" --reps 15 --dtypes f32 --only fused/pdl,fused/nofix \
        --shapes 8192x32000,8192x32000,8192x32000,8192x32000,8192x32000,8192x32000,8192x32000 \
        --json "$OUT/ce10_f32_32k.json" || return 1
      stdbuf -oL "$tb" --reps 7 --dtypes f32 --only fused/base,fused/nofix --shapes 4096x151936,4096x151936 \
        --json "$OUT/ce10_f32_152k.json"
    }
    run_step ce10-tune timeout "${SMK_CE10_TUNE_S:-45}" bash -c "$(declare -f c10_tune); c10=$c10 OUT=$OUT c10_tune"
    keep_logs ce10
  fi
  if c10_part test; then
    # (ce10's call of 86188de capped this at 45 s: it ended inside PdlRuleAndSameBits, 25 of 32 done; give it 90.)
    run_step ce10x-test timeout "${SMK_CE10_TEST_S:-90}" "$c10/test_cuda_cross_entropy" --gtest_filter='-*SixtyFourBit*'
    keep_logs ce10
  fi
  if c10_part memcheck; then
    run_step ce10x-memcheck timeout "${SMK_CE10_SAN_S:-40}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$c10/test_cuda_cross_entropy" \
      --gtest_filter='CrossEntropyGpuFused.Diet*:CrossEntropyGpu*.TargetEntry*:CrossEntropyGpuFused.PdlRule*:CrossEntropyGpuFused.EveryDtype*'
    keep_logs ce10
  fi
  if c10_part acc; then
    run_step ce10-acc timeout "${SMK_CE10_ACC_S:-40}" python3 scripts/vs_torch_ce.py --lib "$c10/libsmk_lce_capi.so" \
      --out "$OUT"
    keep_logs ce10
  fi
  if c10_part lcetest; then
    run_step ce10x-lcetest timeout "${SMK_CE10_LCE_S:-30}" "$c10/test_cuda_linear_cross_entropy"
    keep_logs ce10
  fi
  # Instructions a logit of the three bf16 kernels at 4096×151936 (two launches each: --reps 0), by Nsight Compute's
  # counters, only while the step is younger than SMK_CE10_NCU_BEFORE_S (default 50 s).
  if c10_part ncu && ((SECONDS - c10_t0 < ${SMK_CE10_NCU_BEFORE_S:-50})); then
    run_step ce10-ncu timeout "${SMK_CE10_NCU_S:-30}" ncu --clock-control none --kernel-name-base demangled \
      -k regex:fused_kernel -c 6 --metrics smsp__inst_executed.sum,smsp__thread_inst_executed.sum,\
gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      "$c10/tune_cross_entropy" --reps 0 --dtypes bf16 --only fused/base,fused/diet --shapes 4096x151936
    keep_logs ce10
  fi
  end_carried
fi
# ce11 (session 11, issue 5): the row-loop cross-entropy (src/cuda/cross_entropy/row_loop.cuh) beside the one-read
# kernel, in one tune binary (fused/one: the dispatcher without the row loop, i.e. the one-read kernel or the two
# calls; loop/b2, loop/b1, loop/nohint: the row loop at two / one blocks an SM, without hints), the shapes listed
# twice (two samples); then its GPU tests (every row-loop test in small mode, then the row loop's bitwise, dispatcher
# and every-length tests at full size), memcheck (small) and vs_torch_ce.py. Binaries built off the device for sm_90a
# (build/ce11-bin.tar.xz: bin/ tune_cross_entropy, test_cuda_cross_entropy, libsmk_lce_capi.so; lib/). Caps (the
# step had 130 s of held time, cold start included): SMK_CE11_TUNE_S (default 25 s), SMK_CE11_SMALL_S (12),
# SMK_CE11_TEST_S (15), SMK_CE11_SAN_S (12), SMK_CE11_ACC_S (20); SMK_CE11_PARTS picks the parts. Back:
# ce11-summary.txt, ce11-tune.txt, ce11-acc.txt, ce11-logs.tgz (the tune's JSON, the test logs, vs_torch_ce's tables).
if want ce11; then
  carried ce11 build/ce11-bin.tar.xz
  c11=$bin/bin
  c11_part() { [[ " ${SMK_CE11_PARTS:-tune small test memcheck acc} " == *" $1 "* ]]; }
  if c11_part tune; then
    c11_tune() {
      local tb=$c11/tune_cross_entropy v=fused/one,loop/b2,loop/b1,loop/nohint
      stdbuf -oL "$tb" --reps 7 --dtypes bf16,f32 --only $v --shapes 4096x151936,4096x151936 \
        --json "$OUT/ce11_152k.json" || return 1
      stdbuf -oL "$tb" --reps 9 --dtypes bf16,f32 --only fused/one,loop/b2,loop/b1 --shapes 8192x32000,8192x32000 \
        --json "$OUT/ce11_32k.json" || return 1
      stdbuf -oL "$tb" --reps 7 --dtypes bf16,f32 --only fused/one,loop/b2,loop/b1 \
        --shapes 1024x262144,256x151936 --json "$OUT/ce11_other.json"
    }
    run_step ce11-tune timeout "${SMK_CE11_TUNE_S:-25}" bash -c "$(declare -f c11_tune); c11=$c11 OUT=$OUT c11_tune"
    keep_logs ce11
  fi
  if c11_part small; then
    run_step ce11x-small timeout "${SMK_CE11_SMALL_S:-12}" env SMK_GPU_TEST_SMALL=1 "$c11/test_cuda_cross_entropy" \
      --gtest_filter='CrossEntropyGpuRowLoop.*:CrossEntropyGpuFused.*'
    keep_logs ce11
  fi
  if c11_part test; then
    run_step ce11x-test timeout "${SMK_CE11_TEST_S:-15}" "$c11/test_cuda_cross_entropy" \
      --gtest_filter='CrossEntropyGpuRowLoop.SameBits*:CrossEntropyGpuRowLoop.Dispatcher*:CrossEntropyGpuRowLoop.EveryDtype*'
    keep_logs ce11
  fi
  if c11_part memcheck; then
    run_step ce11x-memcheck timeout "${SMK_CE11_SAN_S:-12}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$c11/test_cuda_cross_entropy" \
      --gtest_filter='CrossEntropyGpuRowLoop.SameBits*:CrossEntropyGpuRowLoop.InPlace*:CrossEntropyGpuRowLoop.BadTargets*'
    keep_logs ce11
  fi
  if c11_part acc; then
    run_step ce11-acc timeout "${SMK_CE11_ACC_S:-20}" python3 scripts/vs_torch_ce.py --lib "$c11/libsmk_lce_capi.so" \
      --out "$OUT"
    keep_logs ce11
  fi
  end_carried
fi
# vocab9 (session 9, issue 3: vocabulary rows): split_stream pipelined (split_row.cu split_stream_pipe_kernel) beside
# vocab8's kernel and the three kernels. Binaries built off the device for sm_90a (build/vocab9-bin.tar.xz: bin/
# test_cuda_few_rows, test_cuda_cluster_stage, lib/). First the timing alone on the GPU (test_few_rows StreamTiming:
# auto, three kernels, the unpipelined kernel, the pipelined one by lag and hints; 4096x151936, 1024x262144,
# 256x151936, 8192x65536; f32 and bf16 softmax / log-softmax), then in parallel: the whole cluster_stage and few_rows
# suites (small mode unless SMK_V9_SMALL=0; step 0's cached_occupancy / option_cases refactor), memcheck on the
# Stream tests and racecheck on StreamBitwise (small). Back: v9-summary.txt, v9-stime.txt, v9-logs.tgz.
# (fixsplit9, after the review's F14: the pipelined kernel is removed, so binaries of this tree time and test
# split_stream_kernel alone, StreamBitwise also on grids capped at 1, 3 and 7 blocks; StreamTiming ends skipped, a tool.)
if want vocab9; then
  carried v9 build/vocab9-bin.tar.xz
  v9=$bin
  v9_small=${SMK_V9_SMALL:-1}
  if [[ " ${SMK_V9_SKIP:-} " != *" stime "* ]]; then
    run_step v9-stime timeout "${SMK_V9_STIME_S:-45}" env SMK_STREAM_TIMING=1 stdbuf -oL "$v9/bin/test_cuda_few_rows" \
      --gtest_filter='*StreamTiming*'
    keep_logs v9
  fi
  v9_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  [[ " ${SMK_V9_SKIP:-} " == *" stage "* ]] ||
    v9_bg v9x-stage timeout "${SMK_V9_TEST_S:-70}" env SMK_GPU_TEST_SMALL="$v9_small" "$v9/bin/test_cuda_cluster_stage"
  v9_bg v9x-few timeout "${SMK_V9_TEST_S:-70}" env SMK_GPU_TEST_SMALL="$v9_small" "$v9/bin/test_cuda_few_rows"
  v9_bg v9x-memcheck timeout "${SMK_V9_SAN_S:-70}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$v9/bin/test_cuda_few_rows" --gtest_filter='*Stream*'
  v9_bg v9x-racecheck timeout "${SMK_V9_SAN_S:-70}" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool racecheck \
    --kernel-name kns=split_stream --error-exitcode 9 "$v9/bin/test_cuda_few_rows" --gtest_filter='*StreamBitwise*'
  wait
  for f in "$OUT"/v9x-*.log; do
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  keep_logs v9
  end_carried
fi
# mid9 (session 9, issue 3: middle rows): f32 logsumexp / the state re-read in four parts with the ftz terms
# (block_row.cu, kAheadReread4) and the backward passes read twice (backward_reread.cu). Binaries built off the device
# for sm_90a (build/mid9-bin.tar.xz: bin/ tune_softmax, test_cuda_block_row, test_cuda_backward_reread,
# test_cuda_softmax; lib/). First the timing alone on the GPU (tune_softmax --mid9: old beside new in one process),
# then in parallel: the two kernels' tests at full size, test_cuda_softmax's backward / invariance / wide-block tests,
# memcheck on both kernels' tests (small). Back: mid9-summary.txt, mid9-tune.txt, mid9-logs.tgz.
if want mid9; then
  carried mid9 build/mid9-bin.tar.xz
  m9=$bin
  if [[ " ${SMK_MID9_SKIP:-} " != *" tune "* ]]; then
    run_step mid9-tune timeout "${SMK_MID9_TUNE_S:-45}" stdbuf -oL "$m9/bin/tune_softmax" --mid9
    keep_logs mid9
  fi
  m9_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  # SMK_MID9_SKIP may also name blockrow bwd softmax memcheck; SMK_MID9_SMALL=1 runs the suites in small mode;
  # SMK_MID9_SOFTMAX_FILTER / SMK_MID9_BWD_FILTER narrow test_cuda_softmax / test_cuda_backward_reread.
  m9_skip() { [[ " ${SMK_MID9_SKIP:-} " == *" $1 "* ]]; }
  m9_t=${SMK_MID9_TEST_S:-50}
  m9_small=${SMK_MID9_SMALL:-0}
  m9_skip blockrow || m9_bg mid9x-blockrow timeout "$m9_t" env SMK_GPU_TEST_SMALL="$m9_small" "$m9/bin/test_cuda_block_row"
  m9_skip bwd || m9_bg mid9x-bwd timeout "$m9_t" env SMK_GPU_TEST_SMALL="$m9_small" \
    "$m9/bin/test_cuda_backward_reread" --gtest_filter="${SMK_MID9_BWD_FILTER:-*}"
  m9_skip softmax || m9_bg mid9x-softmax timeout "$m9_t" env SMK_GPU_TEST_SMALL="$m9_small" \
    "$m9/bin/test_cuda_softmax" --gtest_filter="${SMK_MID9_SOFTMAX_FILTER:-*BackwardEveryPath*:*BatchInvariance*:*BitwiseDeterministic*:*WideBlock*:*WideShared*}"
  if ! m9_skip memcheck; then
    m9_bg mid9x-memcheck-row timeout "$m9_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$m9/bin/test_cuda_block_row"
    m9_bg mid9x-memcheck-bwd timeout "$m9_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$m9/bin/test_cuda_backward_reread"
  fi
  wait
  for f in "$OUT"/mid9x-*.log; do
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  keep_logs mid9
  rm -f "$outer"/mid9x-*.txt  # their pass / fail lines are in mid9-summary.txt, the logs in mid9-logs.tgz
  end_carried
fi
# lse10 (session 10, issue 3: logsumexp and the state at the read bandwidth): lse_stream.cu's kernels beside the
# dispatcher's before (tune_softmax --lse10), then their tests, memcheck and Nsight Compute. Binaries built off the device
# for sm_90a (build/lse10-bin.tar.xz: bin/ tune_softmax, test_cuda_block_row, test_cuda_softmax; lib/). In order, each
# part only while the call is younger than SMK_LSE10_DEADLINE_S (default 50 s): the timing alone on the GPU; in
# parallel test_cuda_block_row at full size, test_cuda_softmax's forward cases, memcheck on the lse_stream tests
# (small); Nsight Compute (a few metrics) on ours (tune_softmax --lse10-ncu); the review's F4 timing (--lse10-f4);
# torch.compile's logsumexp under Nsight Compute (scripts/ncu_torch_lse10.py).
# Back: lse10-summary.txt, lse10-tune.txt, lse10-ncu.txt, lse10-f4.txt, lse10-torch.txt, lse10-logs.tgz.
if want lse10; then
  carried lse10 build/lse10-bin.tar.xz
  l10=$bin
  l10_t0=$SECONDS
  l10_go() { (( SECONDS - l10_t0 < ${SMK_LSE10_DEADLINE_S:-50} )); }
  l10_metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,smsp__inst_executed.sum,smsp__thread_inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers
  run_step lse10-tune timeout "${SMK_LSE10_TUNE_S:-30}" stdbuf -oL "$l10/bin/tune_softmax" --lse10
  keep_logs lse10
  if l10_go; then
    l10_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
      local name=$1; shift
      ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
    }
    l10_t=${SMK_LSE10_TEST_S:-25}
    l10_bg lse10x-blockrow timeout "$l10_t" "$l10/bin/test_cuda_block_row"
    l10_bg lse10x-softmax timeout "$l10_t" "$l10/bin/test_cuda_softmax" \
      --gtest_filter="${SMK_LSE10_SOFTMAX_FILTER:-*EveryPathEveryLength*:*SixteenBitLogTerms*:*SlicedStrided*:*TemperatureAndMasks*:*NonFiniteRows*:*DominantScore*:*BitwiseDeterministic*:*BatchInvariance*}"
    l10_bg lse10x-memcheck timeout "$l10_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$l10/bin/test_cuda_block_row" --gtest_filter='*LseStream*:*Dispatched*'
    # The plain kernels' SASS (instructions an element, counted off the device), into the logs' tarball only.
    ( timeout 15 cuobjdump -sass "$l10/bin/tune_softmax" | awk '/Function : .*lse_(block|warp)_kernel.*Lb0E/ {p = 1}
        p {print} /^[[:space:]]*[.]{10}/ {p = 0}' >"$OUT/lse10s-sass.log" 2>&1 ) &
    wait
    for f in "$OUT"/lse10x-*.log; do
      summary+=("$(tail -n 1 "$f")")
      [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
    done
    keep_logs lse10
  fi
  if l10_go; then
    run_step lse10-ncu timeout 12 ncu --metrics "$l10_metrics" --clock-control none -k regex:"lse_|rows_kernel" \
      "$l10/bin/tune_softmax" --lse10-ncu
    keep_logs lse10
  fi
  if l10_go; then
    run_step lse10-f4 timeout 12 stdbuf -oL "$l10/bin/tune_softmax" --lse10-f4
    keep_logs lse10
  fi
  if l10_go; then
    run_step lse10-torch env TORCHINDUCTOR_CACHE_DIR=/tmp/lse10-inductor timeout "${SMK_LSE10_TORCH_S:-20}" \
      ncu --metrics "$l10_metrics" --clock-control none --profile-from-start off -k regex:triton -c 1 \
      python3 scripts/ncu_torch_lse10.py
    keep_logs lse10
  fi
  rm -f "$outer"/lse10x-*.txt  # their pass / fail lines are in lse10-summary.txt, the logs in lse10-logs.tgz
  end_carried
fi
# short9 (session 9, issue 3: short rows' backward): the backward passes' warp configurations timed beside the
# dispatcher's before short9 in one process (tune_softmax --short9). Binaries built off the device for sm_90a
# (build/short9-bin.tar.xz: bin/ tune_softmax, test_cuda_warp_row, test_cuda_softmax; lib/). First the timing alone on
# the GPU, then in parallel: the warp grids' bitwise tests at full size (the dispatcher's configuration against
# float64), test_cuda_softmax's backward tests, memcheck on the backward grids (small). Each part capped; none starts
# after SMK_S9_DEADLINE_S (default 85 s). The run of c16e5c4 also profiled register variants with Nsight Compute
# (tune_softmax --short9-ncu, since removed with them). Back: short9-summary.txt, short9-tune.txt, short9-logs.tgz.
if want short9; then
  carried short9 build/short9-bin.tar.xz
  s9=$bin
  s9_t0=$SECONDS
  s9_go() { [[ " ${SMK_S9_SKIP:-} " != *" $1 "* ]] && (( SECONDS - s9_t0 < ${SMK_S9_DEADLINE_S:-85} )); }
  if s9_go tune; then
    run_step short9-tune timeout "${SMK_S9_TUNE_S:-30}" stdbuf -oL "$s9/bin/tune_softmax" --short9
    keep_logs short9
  fi
  s9_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  if s9_go test; then
    s9_t=${SMK_S9_TEST_S:-40}
    s9_bg short9x-warp timeout "$s9_t" "$s9/bin/test_cuda_warp_row" \
      --gtest_filter='*BackwardGrids*'
    s9_bg short9x-softmax timeout "$s9_t" "$s9/bin/test_cuda_softmax" --gtest_filter='*BackwardEveryPath*'
    s9_bg short9x-memcheck timeout "$s9_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$s9/bin/test_cuda_warp_row" --gtest_filter='*BackwardGrids*'
    wait
    for f in "$OUT"/short9x-*.log; do
      summary+=("$(tail -n 1 "$f")")
      [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
    done
    keep_logs short9
    rm -f "$outer"/short9x-*.txt  # their pass / fail lines are in short9-summary.txt, the logs in short9-logs.tgz
  fi
  end_carried
fi
# fair9 (session 9, issues 7 and 8): ours and torch SDPA's FLASH and cuDNN backends timed interleaved in ONE process on
# the same inputs (scripts/sdpa_interleaved.py: rounds, the order rotated each round, ratios formed within a round;
# nvidia-smi clocks / power read, never set, before and after each row), after a sanity gate against SDPA's output and
# the C entry points' error path. Binaries built off the device for sm_90a, carried as build/fair9-bin.tar.xz (bin/
# libsmk_attention_capi.so; lib/libfmt.so.9). SMK_FAIR9_S caps the script (default 80 s); it starts no row after
# SMK_FAIR9_DEADLINE_S (default 60 s); SMK_FAIR9_ROUNDS rounds (default 20). Back: fair9-sdpa.txt (the log),
# fair9.md, fair9.json, fair9-summary.txt, fair9-logs.tgz.
if want fair9; then
  carried fair9 build/fair9-bin.tar.xz
  f9=$bin
  run_step fair9-sdpa timeout "${SMK_FAIR9_S:-80}" env PYTHONUNBUFFERED=1 python3 scripts/sdpa_interleaved.py \
    --lib "$f9/bin/libsmk_attention_capi.so" --out "$OUT/fair9.md" --json "$OUT/fair9.json" \
    --rounds "${SMK_FAIR9_ROUNDS:-20}" --deadline-s "${SMK_FAIR9_DEADLINE_S:-60}"
  keep_logs fair9
  cp "$OUT/fair9.md" "$OUT/fair9.json" "$outer/" 2>/dev/null
  end_carried
fi
# vocab10 (session 10, issue 3): row_loop.cu, split_row's many-row calls in one persistent launch (each block walking
# whole rows twice, bitwise the three kernels). Binaries built off the device for sm_90a (build/vocab10-bin.tar.xz:
# bin/ tune_softmax, test_cuda_row_loop, test_cuda_few_rows; lib/). First the timing alone on the GPU (tune_softmax
# --vocab10: the dispatcher's split_row first and last, the row loop's variants between), then in parallel: the row
# loop's test at full size, test_cuda_few_rows in small mode, memcheck on the row loop's test (small). Caps:
# SMK_V10_TUNE_S (default 35 s), SMK_V10_TEST_S (45 s); SMK_V10_SKIP may name tune. Back: vocab10-summary.txt,
# vocab10-tune.txt, vocab10-logs.tgz.
if want vocab10; then
  carried vocab10 build/vocab10-bin.tar.xz
  v10=$bin
  if [[ " ${SMK_V10_SKIP:-} " != *" tune "* ]]; then
    run_step vocab10-tune timeout "${SMK_V10_TUNE_S:-35}" stdbuf -oL "$v10/bin/tune_softmax" --vocab10
    keep_logs vocab10
  fi
  v10_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  v10_t=${SMK_V10_TEST_S:-45}
  v10_bg vocab10x-loop timeout "$v10_t" "$v10/bin/test_cuda_row_loop"
  v10_bg vocab10x-few timeout "$v10_t" env SMK_GPU_TEST_SMALL=1 "$v10/bin/test_cuda_few_rows"
  v10_bg vocab10x-memcheck timeout "$v10_t" env SMK_GPU_TEST_SMALL=1 SMK_ROW_LOOP_FEW=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$v10/bin/test_cuda_row_loop"
  wait
  for f in "$OUT"/vocab10x-*.log; do
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  keep_logs vocab10
  rm -f "$outer"/vocab10x-*.txt  # their pass / fail lines are in vocab10-summary.txt, the logs in vocab10-logs.tgz
  end_carried
fi
# dec10 (session 10, issue 8): the decode kernel's K and V tiles by TMA (decode_mma.cu's TMA variant, DecodeConfig::
# tma) beside the cp.async tiles. Binaries built off the device for sm_90a (build/dec10-bin.tar.xz: bin/
# test_cuda_decode, test_cuda, bench_decode, libsmk_attention_capi.so; lib/). In order: the registers of both kernels;
# a smoke test (the TMA-vs-cp.async bitwise test, small); the timing alone on the GPU (bench_decode --tma: cp.async and
# TMA alternating, 4 samples each per row; then sdpa_interleaved.py's decode rows, ours = the TMA build's dispatcher,
# against cuDNN and FLASH); then in parallel: test_cuda_decode (all), test_cuda's merge tests, memcheck on the small
# TMA / causal-band / bad-input cases. Caps: SMK_DEC10_BENCH_S (25 s), SMK_DEC10_FAIR_S (30), SMK_DEC10_TEST_S (40).
# SMK_DEC10_PARTS picks the parts (default: smoke bench fair tests); SMK_DEC10_FILTER narrows test_cuda_decode.
# Back: dec10-summary.txt, dec10-bench.txt, dec10-fair.md, dec10-logs.tgz.
if want dec10; then
  carried dec10 build/dec10-bin.tar.xz
  d10=$bin
  d10_part() { [[ " ${SMK_DEC10_PARTS:-smoke bench fair tests} " == *" $1 "* ]]; }
  command -v cuobjdump >/dev/null && cuobjdump --dump-resource-usage "$d10/bin/bench_decode" 2>/dev/null |
    grep -A1 "decode_mma" | grep -o "decode_mma_[a-z]*kernel\|REG:[0-9]*\|STACK:[0-9]*\|SHARED:[0-9]*\|LOCAL:[0-9]*" |
    paste - - - - - | sort | uniq -c >"$OUT/dec10-registers.log"
  d10_part smoke && run_step dec10x-smoke timeout 20 env SMK_GPU_TEST_SMALL=1 "$d10/bin/test_cuda_decode" --gtest_filter='*TmaTiles*'
  keep_logs dec10
  d10_part bench && run_step dec10-bench timeout "${SMK_DEC10_BENCH_S:-25}" stdbuf -oL "$d10/bin/bench_decode" --tma \
    --json "$OUT/dec10-bench.json"
  keep_logs dec10
  d10_part fair && run_step dec10-fair timeout "${SMK_DEC10_FAIR_S:-30}" env PYTHONUNBUFFERED=1 python3 scripts/sdpa_interleaved.py \
    --lib "$d10/bin/libsmk_attention_capi.so" --only decode --out "$OUT/dec10-fair.md" --json "$OUT/dec10-fair.json" \
    --rounds "${SMK_DEC10_ROUNDS:-12}" --deadline-s 25
  keep_logs dec10
  d10_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  d10_t=${SMK_DEC10_TEST_S:-40}
  d10_bg dec10x-test timeout "$d10_t" "$d10/bin/test_cuda_decode" --gtest_filter="${SMK_DEC10_FILTER:-*}"
  d10_part tests || wait
  d10_part tests && d10_bg dec10x-merge timeout "$d10_t" "$d10/bin/test_cuda" --gtest_filter='*Merge*'
  d10_part tests && d10_bg dec10x-memcheck timeout "$d10_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$d10/bin/test_cuda_decode" \
    --gtest_filter='*TmaTiles*:*CausalBand*:*BadInputs*:*Programmatic*'
  wait
  for f in "$OUT"/dec10x-test.log "$OUT"/dec10x-merge.log "$OUT"/dec10x-memcheck.log; do
    [ -f "$f" ] || continue
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  keep_logs dec10
  cp "$OUT/dec10-fair.md" "$outer/" 2>/dev/null
  rm -f "$outer"/dec10x-*.txt "$outer"/dec10-registers.txt  # in dec10-summary.txt / dec10-logs.tgz
  cat "$OUT/dec10-registers.log" >>"$outer/dec10-summary.txt" 2>/dev/null
  end_carried
fi
# sbwd11 (session 11, issue 3: the backward passes on rows of 32 ... 1024): tune_softmax --sbwd11 alone on the GPU
# (the dispatcher's warp kernels timed first and last beside the f32 dense kernel's bounds, hints and grids, 16-bit
# rows of 1024 held packed, the packed rows' grids, block_per_row's 64-thread block at 1024), then in parallel, each
# capped: test_cuda_warp_backward (the dense kernel bitwise the general one) and test_cuda_warp_row's backward cases at
# full size, test_cuda_softmax's BackwardEveryPath / BatchInvariance, memcheck on test_cuda_warp_backward (small).
# Binaries built off the device for sm_90a (build/sbwd11-bin.tar.xz: bin/ tune_softmax, test_cuda_warp_backward,
# test_cuda_warp_row, test_cuda_softmax; lib/). Back: sbwd11-tune.txt, sbwd11-summary.txt, sbwd11-logs.tgz.
if want sbwd11; then
  carried sbwd11 build/sbwd11-bin.tar.xz
  sb11=$bin
  run_step sbwd11-tune timeout "${SMK_SB11_TUNE_S:-20}" stdbuf -oL "$sb11/bin/tune_softmax" --sbwd11
  keep_logs sbwd11
  sb11_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  sb11_t=${SMK_SB11_TEST_S:-25}
  sb11_bg sbwd11x-dense timeout "$sb11_t" "$sb11/bin/test_cuda_warp_backward"
  sb11_bg sbwd11x-warp timeout "$sb11_t" "$sb11/bin/test_cuda_warp_row" \
    --gtest_filter='*PackedBackward*:*BackwardLanes*:*BackwardGrids*:*PackedRule*'
  sb11_bg sbwd11x-softmax timeout "$sb11_t" "$sb11/bin/test_cuda_softmax" \
    --gtest_filter='*BackwardEveryPath*:*BatchInvariance*'
  sb11_bg sbwd11x-memcheck timeout "$sb11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$sb11/bin/test_cuda_warp_backward"
  wait
  for f in "$OUT"/sbwd11x-*.log; do
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  keep_logs sbwd11
  rm -f "$outer"/sbwd11x-*.txt  # their pass / fail lines are in sbwd11-summary.txt, the logs in sbwd11-logs.tgz
  end_carried
fi
# short10 (session 10, issue 3: 16-bit short rows, forward and backward): the rows held packed in registers
# (WarpConfig::packed, src/cuda/softmax/packed16.cuh) and rows of 32 on 4 lanes timed beside the dispatcher's kernels in
# one process (tune_softmax --short10), then the packed kernels' bitwise tests, the warp tests and softmax's backward
# cases at full size, and memcheck on the small bf16 packed cases, in parallel. Binaries built off the device for
# sm_90a (build/short10-bin.tar.xz: bin/ tune_softmax, test_cuda_warp_row, test_cuda_softmax; lib/). SMK_S10_DEADLINE_S
# (default 40) starts no part after it. Back: short10-summary.txt, short10-tune.txt, short10-logs.tgz.
if want short10; then
  carried short10 build/short10-bin.tar.xz
  s10=$bin
  s10_t0=$SECONDS
  s10_go() { (( SECONDS - s10_t0 < ${SMK_S10_DEADLINE_S:-40} )); }
  if s10_go; then
    run_step short10-tune timeout "${SMK_S10_TUNE_S:-25}" stdbuf -oL "$s10/bin/tune_softmax" --short10
    keep_logs short10
  fi
  s10_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  if s10_go; then
    # (The run of 809a984 capped these at 30 s with the grid tests first: the packed tests never finished at full size.
    # Since then the packed and lane tests alone, 60 s.)
    s10_t=${SMK_S10_TEST_S:-60}
    s10_bg short10x-warp timeout "$s10_t" "$s10/bin/test_cuda_warp_row" --gtest_filter='*Packed*:*BackwardLanes*'
    s10_bg short10x-softmax timeout "$s10_t" "$s10/bin/test_cuda_softmax" \
      --gtest_filter='*BackwardEveryPath*:*NonFiniteRows*:*SlicedStridedUnaligned*'
    s10_bg short10x-memcheck timeout "$s10_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$s10/bin/test_cuda_warp_row" --gtest_filter='*Packed*'
    wait
    for f in "$OUT"/short10x-*.log; do
      summary+=("$(tail -n 1 "$f")")
      [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
    done
    keep_logs short10
    rm -f "$outer"/short10x-*.txt  # their pass / fail lines are in short10-summary.txt, the logs in short10-logs.tgz
  fi
  end_carried
fi
# pfx10 (session 10, issue 7): the D = 128 prefill kernel's build with S_{j+1} = Q·K_{j+1}ᵀ issued into a second
# accumulator before tile j's softmax (PrefillConfig::s_ahead, prefill_wgmma.cu's kAhead) against the default, and
# review F9's varlen case of the trim / schedule test. Binaries built off the device for sm_90a, carried as
# build/pfx10-bin.tar.xz (bin/: test_cuda_prefill, tune_prefill, libsmk_attention_capi.so; lib/). In order, each
# capped: the variant's tests (reference, non-finite V, bitwise and batch invariance) with the trim / schedule test
# and the bad-config test; the interleaved timing (scripts/sdpa_interleaved.py --ahead: ours and the variant in both
# layouts, cuDNN and FLASH, one process, the order rotated each round; the issue's four rows); Nsight Compute, one
# launch each of the default and the variant at (4, 32, 4096, 128) full (tune_prefill SMK_TUNE_PROFILE=1; a few
# sections, then the raw pipe / stall / issue metrics of the report); memcheck and racecheck on the small bits test.
# Back: p10-sdpa.txt (the table), p10-ncu.txt, p10-summary.txt, p10-logs.tgz (every log, the .ncu-rep, the JSON).
# Ran on b1e44d1's binaries (results in 6a59875). Since review F16 the variant, its tests (*WgmmaAhead*),
# sdpa_interleaved.py --ahead and tune_prefill's SMK_TUNE_PROFILE are removed: this step runs only from b1e44d1's tree.
if want pfx10; then
  carried pfx10 build/pfx10-bin.tar.xz
  p10=$bin
  run_step p10x-test timeout "${SMK_PFX10_TEST_S:-30}" "$p10/bin/test_cuda_prefill" \
    --gtest_filter="${SMK_PFX10_TEST_FILTER:-*WgmmaAhead*:*WgmmaCausalScheduleAndTrim*:*ClearErrors*}"
  keep_logs p10
  run_step p10-sdpa timeout "${SMK_PFX10_SDPA_S:-40}" env PYTHONUNBUFFERED=1 python3 scripts/sdpa_interleaved.py \
    --lib "$p10/bin/libsmk_attention_capi.so" --only prefill --ahead --rounds "${SMK_PFX10_ROUNDS:-20}" \
    --out "$OUT/p10-sdpa.md" --json "$OUT/p10-sdpa.json"
  keep_logs p10
  p10_ncu() {  # (a shell function: each command carries its own timeout)
    timeout "${SMK_PFX10_NCU_S:-25}" ncu --clock-control none -k regex:prefill_wgmma_kernel -c 2 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
      --section LaunchStats -o "$OUT/p10" -f env SMK_TUNE_PROFILE=1 SMK_TUNE_ROWS=issue "$p10/bin/tune_prefill" &&
      timeout 10 ncu --import "$OUT/p10.ncu-rep" --page details &&
      timeout 10 ncu --import "$OUT/p10.ncu-rep" --page raw | grep -E "prefill_wgmma|pipe_tensor|gmma|inst_issued|\
issue_active|warps_eligible|stalled|cycles_elapsed.avg.per_second|sm__throughput|sm__cycles_active.avg "
  }
  run_step p10-ncu p10_ncu
  keep_logs p10
  run_step p10x-memcheck timeout "${SMK_PFX10_MEMCHECK_S:-15}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$p10/bin/test_cuda_prefill" --gtest_filter='*WgmmaAheadSameBits*'
  keep_logs p10
  run_step p10x-racecheck timeout "${SMK_PFX10_RACECHECK_S:-15}" compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$p10/bin/test_cuda_prefill" --gtest_filter='*WgmmaAheadSameBits*'
  keep_logs p10
  cp "$OUT/p10-sdpa.md" "$outer/" 2>/dev/null
  end_carried
fi
# pfx11 (session 11, issue 7): the prefill kernel's builds whose softmax takes the row max and sum as balanced trees
# (PrefillConfig::short_chains, prefill_wgmma.cu's kChains; the D = 128 and D = 64 defaults, TMA) against the default.
# Binaries built off the device for sm_90a, carried as build/pfx11-bin.tar.xz (bin/: test_cuda_prefill,
# tune_prefill, libsmk_attention_capi.so; lib/). In order, each capped: the variant's tests (*WgmmaChains*: reference,
# non-finite V, bitwise / batch invariance / trim and schedule) and the bad-config test; the interleaved timing
# (scripts/sdpa_interleaved.py --chains: ours in both layouts, the variant, cuDNN and FLASH in one process, order
# rotated each round; the issue's four rows); Nsight Compute, one launch each of the default and the variant at
# (4, 32, 4096, 128) full; memcheck and racecheck on the variant's bits test.
# Back: p11-sdpa.md (the table), p11-ncu.txt, p11-summary.txt, p11-logs.tgz (every log, the .ncu-rep, the JSON).
# Ran on 087be37's binaries at 16:51 UTC with SMK_PFX11_MEMCHECK_S=9 SMK_PFX11_RACECHECK_S=8 (40.9 s in all; results
# in docs/perf-notebook.md, "session 11 — pfx11").
if want pfx11; then
  carried pfx11 build/pfx11-bin.tar.xz
  p11=$bin
  run_step p11x-test timeout "${SMK_PFX11_TEST_S:-12}" "$p11/bin/test_cuda_prefill" \
    --gtest_filter="${SMK_PFX11_TEST_FILTER:-*WgmmaChains*:*ClearErrors*}"
  keep_logs p11
  run_step p11-sdpa timeout "${SMK_PFX11_SDPA_S:-24}" env PYTHONUNBUFFERED=1 python3 scripts/sdpa_interleaved.py \
    --lib "$p11/bin/libsmk_attention_capi.so" --only prefill --chains --rounds "${SMK_PFX11_ROUNDS:-12}" \
    --deadline-s "${SMK_PFX11_DEADLINE_S:-14}" --out "$OUT/p11-sdpa.md" --json "$OUT/p11-sdpa.json"
  keep_logs p11
  p11_ncu() {  # (a shell function: each command carries its own timeout)
    timeout "${SMK_PFX11_NCU_S:-12}" ncu --clock-control none -k regex:prefill_wgmma_kernel -c 2 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
      -o "$OUT/p11" -f env SMK_TUNE_PROFILE=1 SMK_TUNE_ROWS=issue "$p11/bin/tune_prefill" &&
      timeout 3 ncu --import "$OUT/p11.ncu-rep" --page raw | grep -E "prefill_wgmma|pipe_tensor|gmma|inst_issued|\
issue_active|warps_eligible|warps_active|stalled|cycles_elapsed.avg.per_second|gpu__time_duration.sum"
  }
  run_step p11-ncu p11_ncu
  keep_logs p11
  run_step p11x-memcheck timeout "${SMK_PFX11_MEMCHECK_S:-10}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$p11/bin/test_cuda_prefill" --gtest_filter='*WgmmaChainsSameBits*'
  keep_logs p11
  run_step p11x-racecheck timeout "${SMK_PFX11_RACECHECK_S:-10}" compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$p11/bin/test_cuda_prefill" --gtest_filter='*WgmmaChainsSameBits*'
  keep_logs p11
  cp "$OUT/p11-sdpa.md" "$outer/" 2>/dev/null
  end_carried
fi
# dec11 (session 11, issue 8: split-KV decode): the tensor-core kernel with 3 warps a block (4 blocks an SM) beside
# 4, cp.async and TMA tiles, over S_max 1024..32768 x B 1..64 and the issue's rows (bench_decode --sweep: the TMA
# rule's data too), then ours (4 warps) and ours w3 (the C entry point built with 3) interleaved with cuDNN and FLASH
# on the issue's rows, then test_cuda_decode whole in three shards, the merge tests and memcheck (small) on the 3-warp
# and bad-input tests, in parallel. Binaries built off the device for sm_90a (build/dec11-bin.tar.xz: bin/
# bench_decode, test_cuda_decode, test_cuda, libsmk_attention_capi.so; w3/libsmk_attention_capi.so; lib/).
# Back: dec11-summary.txt, dec11-sweep.txt, dec11-fair.md, dec11-logs.tgz.
if want dec11; then
  carried dec11 build/dec11-bin.tar.xz
  d11=$bin
  if [ -n "${SMK_DEC11_GRIDS:-}" ]; then  # only the SDPA backends' kernels and grids (scripts/decode_kernel_grids.py)
    run_step dec11-grids timeout 40 env PYTHONUNBUFFERED=1 python3 scripts/decode_kernel_grids.py \
      --out "$OUT/dec11-grids.md" --json "$OUT/dec11-grids.json"
    keep_logs dec11
    cp "$OUT/dec11-grids.md" "$outer/" 2>/dev/null
  else
  command -v cuobjdump >/dev/null && cuobjdump --dump-resource-usage "$d11/bin/bench_decode" 2>/dev/null |
    grep -A1 "decode_mma" | grep -o "decode_mma_[a-z]*kernel[^ ]*\|REG:[0-9]*\|SHARED:[0-9]*\|LOCAL:[0-9]*" |
    paste - - - - | sort | uniq -c >"$OUT/dec11-registers.log"
  run_step dec11-sweep timeout "${SMK_DEC11_SWEEP_S:-30}" stdbuf -oL "$d11/bin/bench_decode" --sweep \
    --json "$OUT/dec11-sweep.json"
  keep_logs dec11
  run_step dec11-fair timeout "${SMK_DEC11_FAIR_S:-30}" env PYTHONUNBUFFERED=1 python3 scripts/sdpa_interleaved.py \
    --lib "$d11/bin/libsmk_attention_capi.so" --decode-lib2 "$d11/w3/libsmk_attention_capi.so" --only decode \
    --out "$OUT/dec11-fair.md" --json "$OUT/dec11-fair.json" --rounds "${SMK_DEC11_ROUNDS:-8}" --deadline-s 22
  keep_logs dec11
  d11_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  d11_t=${SMK_DEC11_TEST_S:-40}
  d11_a='*IssueLengths*:*CausalMultiToken*:*CausalBand*:*StridedViews*'
  d11_b='*Tma*:*ThreeWarp*:*Bitwise*'
  d11_bg dec11x-testa timeout "$d11_t" "$d11/bin/test_cuda_decode" --gtest_filter="$d11_a"
  d11_bg dec11x-testb timeout "$d11_t" "$d11/bin/test_cuda_decode" --gtest_filter="$d11_b"
  d11_bg dec11x-testc timeout "$d11_t" "$d11/bin/test_cuda_decode" --gtest_filter="-$d11_a:$d11_b"
  d11_bg dec11x-merge timeout "$d11_t" "$d11/bin/test_cuda" --gtest_filter='*Merge*'
  d11_bg dec11x-memcheck timeout "$d11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$d11/bin/test_cuda_decode" --gtest_filter='*ThreeWarp*:*BadInputs*'
  wait
  for f in "$OUT"/dec11x-*.log; do
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  keep_logs dec11
  cp "$OUT/dec11-fair.md" "$outer/" 2>/dev/null
  rm -f "$outer"/dec11x-*.txt "$outer"/dec11-registers.txt "$outer"/dec11-fair.txt  # in the summary / logs.tgz
  cat "$OUT/dec11-registers.log" >>"$outer/dec11-summary.txt" 2>/dev/null
  fi
  end_carried
fi
# short11 (session 11, issue 3: the forward ops on rows of 32 ... 1024): the dense warp kernel (WarpConfig::dense,
# warp_rows_dense_kernel: fewer registers, more blocks an SM), 16-bit log-softmax packed at 1024 and block_per_row on
# small blocks at 1024, timed beside the dispatcher's kernels before short11 in one binary (tune_softmax --short11),
# alone on the GPU; then in parallel: test_cuda_warp_row whole (6 shards), test_cuda_softmax's cases that cover the warp
# path (3 shards), memcheck on the small Dense cases. Binaries built off the device for sm_90a
# (build/short11-bin.tar.xz: bin/{tune_softmax,test_cuda_warp_row,test_cuda_softmax}, lib/). Caps: SMK_S11_TUNE_S (25
# s), SMK_S11_TEST_S (30). Back: short11-tune.txt, short11-summary.txt, short11-logs.tgz.
if want short11; then
  carried short11 build/short11-bin.tar.xz
  s11=$bin
  run_step short11-tune timeout "${SMK_S11_TUNE_S:-25}" stdbuf -oL "$s11/bin/tune_softmax" --short11
  keep_logs short11
  s11_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  s11_t=${SMK_S11_TEST_S:-30}
  # gtest's shards (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX): the float64 references on 16 CPUs at once, every test
  # run once across the shards.
  for i in 0 1 2 3 4 5; do
    s11_bg "short11x-warp$i" env GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout "$s11_t" "$s11/bin/test_cuda_warp_row"
  done
  for i in 0 1 2; do
    s11_bg "short11x-softmax$i" env GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout "$s11_t" \
      "$s11/bin/test_cuda_softmax" --gtest_filter='*EveryPathEveryLength*:*NonFiniteRows*:*SlicedStridedUnaligned*:*BatchInvariance*:*SixteenBitSoftmaxWithinItsPlainExponentialBound*'
  done
  s11_bg short11x-memcheck timeout "$s11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$s11/bin/test_cuda_warp_row" --gtest_filter='*DenseKernelBitwiseF32*:*DenseKernelBitwiseBf16*'
  wait
  for f in "$OUT"/short11x-*.log; do
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  keep_logs short11
  rm -f "$outer"/short11x-*.txt  # their pass / fail lines are in short11-summary.txt, the logs in short11-logs.tgz
  end_carried
fi
# one11 (session 11, issue 3): split_row's few-row levers (SplitRowTuning::l2_hints, chunk_ahead) timed beside the
# library's split_row in one binary (tune_softmax --one11), then the GPU tests of the area in parallel: the levers'
# bitwise test alone (test_cuda_few_rows AheadAndHints*), the rest of test_cuda_few_rows, test_cuda_row_loop and
# test_cuda_grid_row whole, memcheck on the small cases. Binaries built off the device for sm_90a
# (build/one11-bin.tar.xz: bin/{tune_softmax,test_cuda_few_rows,test_cuda_row_loop,test_cuda_grid_row}, lib/).
# Caps: SMK_O11_TUNE_S (25 s), SMK_O11_TEST_S (30). SMK_O11_PASS=2: the second run's test filters (below).
# Back: one11-tune.txt, one11-summary.txt, one11-logs.tgz.
if want one11; then
  carried one11 build/one11-bin.tar.xz
  o11=$bin
  run_step one11-tune timeout "${SMK_O11_TUNE_S:-25}" stdbuf -oL "$o11/bin/tune_softmax" --one11
  keep_logs one11
  o11_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  o11_t=${SMK_O11_TEST_S:-30}
  if [ "${SMK_O11_PASS:-1}" = 1 ]; then  # the first run (ec84571): the levers' test, then each suite from its start
    o11_bg one11x-levers timeout "$o11_t" "$o11/bin/test_cuda_few_rows" --gtest_filter='*AheadAndHints*'
    o11_bg one11x-few timeout "$o11_t" "$o11/bin/test_cuda_few_rows" --gtest_filter='-*AheadAndHints*'
    o11_bg one11x-loop timeout "$o11_t" "$o11/bin/test_cuda_row_loop"
    o11_bg one11x-grid timeout "$o11_t" "$o11/bin/test_cuda_grid_row"
    o11_bg one11x-memcheck timeout "$o11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$o11/bin/test_cuda_few_rows" --gtest_filter='*AheadAndHints*'
  else  # the second run (the shipped form): the hints' test, and the suites' tests the first run's caps cut
    o11_bg one11x-levers timeout "$o11_t" "$o11/bin/test_cuda_few_rows" --gtest_filter='*NormalizeHints*:*CommonCall*'
    o11_bg one11x-few timeout "$o11_t" "$o11/bin/test_cuda_few_rows" --gtest_filter='*NoCluster*:*Stream*'
    o11_bg one11x-loop timeout "$o11_t" "$o11/bin/test_cuda_row_loop" \
      --gtest_filter='-*ForwardBitwise*:*BackwardBitwise*:*OneForward*:*OneBackward*:*CallsItDoesNot*'
    o11_bg one11x-grid timeout "$o11_t" "$o11/bin/test_cuda_grid_row" --gtest_filter='-*IssueLengthsFewRows*'
    o11_bg one11x-memcheck timeout "$o11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$o11/bin/test_cuda_few_rows" --gtest_filter='*NormalizeHints*'
  fi
  wait
  for f in "$OUT"/one11x-*.log; do
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  keep_logs one11
  rm -f "$outer"/one11x-*.txt  # their pass / fail lines are in one11-summary.txt, the logs in one11-logs.tgz
  end_carried
fi
# mid11 (session 11, issue 3: the 16-bit backward re-read kernel without its bf16 spill; softmax backward on it).
# Binaries built off the device for sm_90a (build/mid11-bin.tar.xz: bin/ tune_softmax, tune_softmax_old (the re-read
# kernel of HEAD before the fix), test_cuda_backward_reread, test_cuda_softmax; lib/). In order, each capped: the
# timing alone on the GPU, old / new / old (tune_softmax --mid11 [old]; each prints FNV hashes of the re-read dx, which
# must agree between the builds: the fix leaves the arithmetic unchanged); then in parallel test_cuda_backward_reread
# at full size, test_cuda_softmax's BackwardEveryPath at full size, memcheck on test_cuda_backward_reread (small).
# Back: mid11-old1.txt, mid11-tune.txt, mid11-old2.txt, mid11-summary.txt, mid11-logs.tgz.
if want mid11; then
  carried mid11 build/mid11-bin.tar.xz
  m11=$bin
  # SMK_MID11_SKIP=tune: the tests alone (mid11's run of 7d1df6d timed, then hit its limit before the tests; the
  # tarball since holds the test binaries of 432ed13's rule, ~30 s of tests).
  if [[ " ${SMK_MID11_SKIP:-} " != *" tune "* ]]; then
    run_step mid11-old1 timeout "${SMK_MID11_OLD_S:-12}" stdbuf -oL "$m11/bin/tune_softmax_old" --mid11 old
    keep_logs mid11
    run_step mid11-tune timeout "${SMK_MID11_TUNE_S:-30}" stdbuf -oL "$m11/bin/tune_softmax" --mid11
    keep_logs mid11
    run_step mid11-old2 timeout "${SMK_MID11_OLD_S:-12}" stdbuf -oL "$m11/bin/tune_softmax_old" --mid11 old
    keep_logs mid11
  fi
  m11_bg() {  # NAME COMMAND...: in the background, its exit status the log's last line
    local name=$1; shift
    ( "$@" >"$OUT/$name.log" 2>&1; echo "exit $? $name" >>"$OUT/$name.log" ) &
  }
  m11_t=${SMK_MID11_TEST_S:-30}
  m11_bg mid11x-bwd timeout "$m11_t" "$m11/bin/test_cuda_backward_reread"
  m11_bg mid11x-softmax timeout "$m11_t" "$m11/bin/test_cuda_softmax" --gtest_filter='*BackwardEveryPath*'
  m11_bg mid11x-memcheck timeout "$m11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$m11/bin/test_cuda_backward_reread"
  wait
  for f in "$OUT"/mid11x-*.log; do
    summary+=("$(tail -n 1 "$f")")
    [[ "$(tail -n 1 "$f")" == "exit 0 "* ]] || failed=$((failed + 1))
  done
  { grep -h "^hash" "$OUT"/mid11-*.log | sort | uniq -c; } >"$OUT/mid11-hashes.log"
  keep_logs mid11
  rm -f "$outer"/mid11x-*.txt  # their pass / fail lines are in mid11-summary.txt, the logs in mid11-logs.tgz
  end_carried
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
