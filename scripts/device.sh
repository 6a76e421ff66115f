#!/usr/bin/env bash
# The one script for the GPU device machine (run it there through the device tool, carrying .devdeps/):
#   builds softmaxkit for the H200, runs the whole test suite (GPU tests included), compute-sanitizer memcheck and
#   racecheck over the GPU tests, the demo, and the benchmarks; prints a short table last.
# Logs go to $OUT (the device tool brings that folder back) or ./out.
#   usage: scripts/device.sh [steps...]   steps:
#     build test sanitize demo bench compare python accuracy tune (default: build test sanitize demo bench compare
#       python accuracy)
#     the lead's integrated run: final (= final-tests final-san final-compare, each also a step of its own)
#     one area at a time, built here: prefill ce decode lce; fair9 (ours beside torch SDPA, interleaved)
#     older one-off steps that build here (or take $SMK_*_BIN): wgmma cefused excess decode-mma decode-r2 decode-r3
#       logterm rowpipe warpdiet fewrows fewrows-flush
#     sessions 10 / 11's one-off A/B steps, on carried build/<name>-bin.tar.xz: ce10 ce11 lse10 vocab10 dec10 sbwd11
#       short10 pfx10 dec11 short11 one11 mid11 (pfx11: removed, see its note); session 12's: short12 dec12 one12
#       mid12 sbwd12 ce12 (pfx12: removed, see its note)
#   Steps of past sessions whose carried binaries are gone (decode-r4 wideblock bw16 fixcost fixcost2 ce3 ce4 pfx
#   split6 pfx2 tier16 dec5 mid16 fwd16 vocab7 ce5 ce6 few7 dec6 dec9 mid8 vocab8 short8 pfx8 pfx9 ce9 vocab9 mid9
#   short9) live in git history: `git show afd6839:scripts/device.sh` has every one of them.
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
      --gtest_filter='*Stream*:*NormalizeHints*:*L2Prefetch*' || return 9
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
      build/default/tests/test_cuda_warp_backward || return 9
    # Session 12: split_row's L2 prefetch (*L2Prefetch* above), the 16-bit dense warp forward at 16 a lane and the
    # packed backward at 8 blocks (in test_cuda_warp_row / test_cuda_warp_backward above), the re-read backward's forms
    # (test_cuda_backward_reread above), the decode's TMA by the grid (*Tma* above); racecheck on the cross-entropy
    # row loop's staged steps (shared memory written in pass 1, read in pass 2).
    compute-sanitizer --tool racecheck --error-exitcode 9 build/default/tests/test_cuda_cross_entropy \
      --gtest_filter='*StagedSameBits*'
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
# ce12 (session 12, issue 5): the row loop with its first steps staged in shared memory (row_loop.cuh kStaged) beside
# the build before, and review F21 (the one-read kernel's bits before and after its row formulas moved to common.cuh).
# Binaries built off the device for sm_90a (build/ce12-bin.tar.xz, bin/: libsmk_lce_capi.so (da49fbb's library, with
# the C entry point), tune_cross_entropy and ce_dump_new linked to it; libsmk_head.so (the same with 775cf6d's
# fused.cu.o) and tune_old (775cf6d's tune) on it; libsmk_old.so (e44d455's cross-entropy objects) and ce_dump_old on
# it; test_cuda_cross_entropy). Parts (SMK_CE12_PARTS, default all, in this order; each starts only while the step is
# younger than SMK_CE12_DEADLINE_S, default 40 s): tune (old and new alternating at bf16 / f32 4096x151936, twice;
# new at 8192x32000, 1024x262144, 256x151936; old: forward, fused/one, loop/b2, whose choice by ce11's rule is the old
# dispatcher; new: forward, fused, fused/one, loop/s0, loop/s3, loop/b1s6); bg, side by side: the row-loop and fused
# GPU tests in 6 shards at full size, memcheck (small) on the staged and row-loop tests, F21 (old writes its outputs,
# new compares them byte for byte), vs_torch_ce.py; torch (compare_torch_ce.py on the issue's shapes, new rows with
# old:* beside). Caps: SMK_CE12_TUNE_S (18), SMK_CE12_BG_S (20), SMK_CE12_TORCH_S (14). Back: ce12-summary.txt,
# ce12-tune.txt, ce12-torch.txt, ce12x-f21.txt, ce12-logs.tgz.
# Ran once (2026-11-30 19:32 UTC, cold, 38.7 s, SMK_CE12_DEADLINE_S=36 TUNE_S=17 BG_S=19): the tune cap cut the shapes
# after bf16 8192x32000, the test cap two shards, the deadline the torch part; perf-notebook "session 12 — ce12".
if want ce12; then
  carried ce12 build/ce12-bin.tar.xz
  c12=$bin/bin
  c12_t0=$SECONDS
  c12_part() { [[ " ${SMK_CE12_PARTS:-tune bg torch} " == *" $1 "* ]] && (( SECONDS - c12_t0 < ${SMK_CE12_DEADLINE_S:-40} )); }
  if c12_part tune; then
    c12_tune() {
      local v='forward$,fused$,fused/one$,loop/s0,loop/s3,loop/b1s6' k
      for k in 1 2; do
        stdbuf -oL "$c12/tune_old" --reps 7 --dtypes bf16,f32 --only forward,fused/one,loop/b2 --shapes 4096x151936 \
          --json "$OUT/ce12_old$k.json" || return 1
        stdbuf -oL "$c12/tune_cross_entropy" --reps 7 --dtypes bf16,f32 --only "$v" --shapes 4096x151936 \
          --json "$OUT/ce12_new$k.json" || return 1
      done
      stdbuf -oL "$c12/tune_cross_entropy" --reps 9 --dtypes bf16,f32 --only "$v" \
        --shapes 8192x32000,1024x262144,256x151936 --json "$OUT/ce12_new3.json"
    }
    run_step ce12-tune timeout "${SMK_CE12_TUNE_S:-18}" bash -c "$(declare -f c12_tune); c12=$c12 OUT=$OUT c12_tune"
    keep_logs ce12
  fi
  if c12_part bg; then
    c12_t=${SMK_CE12_BG_S:-20}
    for k in 0 1 2 3 4 5; do
      bg_step "ce12x-test$k" timeout "$c12_t" env GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$k "$c12/test_cuda_cross_entropy" \
        --gtest_filter='CrossEntropyGpuRowLoop.*:CrossEntropyGpuFused.*'
    done
    bg_step ce12x-memcheck timeout "$c12_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$c12/test_cuda_cross_entropy" \
      --gtest_filter='CrossEntropyGpuRowLoop.StagedSameBits:CrossEntropyGpuRowLoop.InPlace*:CrossEntropyGpuRowLoop.BadTargets*'
    bg_step ce12x-f21 timeout "$c12_t" bash -c "'$c12/ce_dump_old' --write /tmp/ce12_f21.bin && '$c12/ce_dump_new' --compare /tmp/ce12_f21.bin"
    bg_step ce12x-acc timeout "$c12_t" python3 scripts/vs_torch_ce.py --lib "$c12/libsmk_lce_capi.so" --out "$OUT"
    bg_tally
    keep_logs ce12
    cp "$OUT/ce12x-f21.log" "$outer/ce12x-f21.txt" 2>/dev/null
  fi
  if c12_part torch; then
    c12_merge() {  # the issue's shapes: new rows (sample 2 at 151936) and old rows, for compare_torch_ce.py
      python3 - "$OUT" <<'PY'
import json, sys
o = sys.argv[1]
def rows(names):
    out = []
    for n in names:
        try:
            out += [r for r in json.load(open(f"{o}/{n}")) if (r["rows"], r["cols"]) in ((4096, 151936), (8192, 32000))]
        except (OSError, ValueError):
            pass
    return out
json.dump(rows(["ce12_new2.json", "ce12_new3.json"]), open(f"{o}/ce12_new_issue.json", "w"))
json.dump(rows(["ce12_old2.json"]), open(f"{o}/ce12_old_issue.json", "w"))
PY
      python3 scripts/compare_torch_ce.py --tune-json "$OUT/ce12_new_issue.json" --old-tune-json "$OUT/ce12_old_issue.json" \
        --out "$OUT" --rep-ms 100
    }
    run_step ce12-torch timeout "${SMK_CE12_TORCH_S:-14}" bash -c "$(declare -f c12_merge); OUT=$OUT c12_merge"
    keep_logs ce12
  fi
  end_carried
fi
# lse10 (session 10, issue 3: logsumexp and the state at the read bandwidth): lse_stream.cu's kernels beside the
# dispatcher's before (tune_softmax --lse10), then their tests, memcheck and Nsight Compute. Binaries built off the device
# for sm_90a (build/lse10-bin.tar.xz: bin/ tune_softmax, test_cuda_block_row, test_cuda_softmax; lib/). In order, each
# part only while the call is younger than SMK_LSE10_DEADLINE_S (default 50 s): the timing alone on the GPU; in
# parallel test_cuda_block_row at full size, test_cuda_softmax's forward cases, memcheck on the lse_stream tests
# (small); Nsight Compute (a few metrics) on ours (tune_softmax --lse10-ncu); the review's F4 timing (--lse10-f4);
# torch.compile's logsumexp under Nsight Compute (scripts/ncu_torch.py).
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
    l10_t=${SMK_LSE10_TEST_S:-25}
    bg_step lse10x-blockrow timeout "$l10_t" "$l10/bin/test_cuda_block_row"
    bg_step lse10x-softmax timeout "$l10_t" "$l10/bin/test_cuda_softmax" \
      --gtest_filter="${SMK_LSE10_SOFTMAX_FILTER:-*EveryPathEveryLength*:*SixteenBitLogTerms*:*SlicedStrided*:*TemperatureAndMasks*:*NonFiniteRows*:*DominantScore*:*BitwiseDeterministic*:*BatchInvariance*}"
    bg_step lse10x-memcheck timeout "$l10_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$l10/bin/test_cuda_block_row" --gtest_filter='*LseStream*:*Dispatched*'
    # The plain kernels' SASS (instructions an element, counted off the device), into the logs' tarball only.
    ( timeout 15 cuobjdump -sass "$l10/bin/tune_softmax" | awk '/Function : .*lse_(block|warp)_kernel.*Lb0E/ {p = 1}
        p {print} /^[[:space:]]*[.]{10}/ {p = 0}' >"$OUT/lse10s-sass.log" 2>&1 ) &
    bg_tally
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
      python3 scripts/ncu_torch.py --op logsumexp --shape 4096x16384 --scale 4 --shift 20
    keep_logs lse10
  fi
  rm -f "$outer"/lse10x-*.txt  # their pass / fail lines are in lse10-summary.txt, the logs in lse10-logs.tgz
  end_carried
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
  v10_t=${SMK_V10_TEST_S:-45}
  bg_step vocab10x-loop timeout "$v10_t" "$v10/bin/test_cuda_row_loop"
  bg_step vocab10x-few timeout "$v10_t" env SMK_GPU_TEST_SMALL=1 "$v10/bin/test_cuda_few_rows"
  bg_step vocab10x-memcheck timeout "$v10_t" env SMK_GPU_TEST_SMALL=1 SMK_ROW_LOOP_FEW=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$v10/bin/test_cuda_row_loop"
  bg_tally
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
  d10_t=${SMK_DEC10_TEST_S:-40}
  bg_step dec10x-test timeout "$d10_t" "$d10/bin/test_cuda_decode" --gtest_filter="${SMK_DEC10_FILTER:-*}"
  d10_part tests || wait
  d10_part tests && bg_step dec10x-merge timeout "$d10_t" "$d10/bin/test_cuda" --gtest_filter='*Merge*'
  d10_part tests && bg_step dec10x-memcheck timeout "$d10_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$d10/bin/test_cuda_decode" \
    --gtest_filter='*TmaTiles*:*CausalBand*:*BadInputs*:*Programmatic*'
  bg_tally
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
  sb11_t=${SMK_SB11_TEST_S:-25}
  bg_step sbwd11x-dense timeout "$sb11_t" "$sb11/bin/test_cuda_warp_backward"
  bg_step sbwd11x-warp timeout "$sb11_t" "$sb11/bin/test_cuda_warp_row" \
    --gtest_filter='*PackedBackward*:*BackwardLanes*:*BackwardGrids*:*PackedRule*'
  bg_step sbwd11x-softmax timeout "$sb11_t" "$sb11/bin/test_cuda_softmax" \
    --gtest_filter='*BackwardEveryPath*:*BatchInvariance*'
  bg_step sbwd11x-memcheck timeout "$sb11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$sb11/bin/test_cuda_warp_backward"
  bg_tally
  keep_logs sbwd11
  rm -f "$outer"/sbwd11x-*.txt  # their pass / fail lines are in sbwd11-summary.txt, the logs in sbwd11-logs.tgz
  end_carried
fi
# sbwd12 (session 12, issue 3: the backward passes on rows of 32 ... 1024): tune_softmax --sbwd12 alone on the GPU
# (the dispatcher's warp kernels timed first and last beside the packed kernel's variants — streaming stores, 8 blocks
# an SM, 2 / 4 row groups a lane group at once, grids — and the f32 dense kernel at E8 and with streaming stores);
# Nsight Compute (a few metrics) on one launch each of our softmax backward at bf16 1048576x32 / 262144x128 and f32
# 1048576x32 (tune_softmax --sbwd12-ncu); then in parallel, each capped: test_cuda_warp_backward whole (every variant
# bitwise the kernel it replaces) and test_cuda_warp_row's packed / lanes / grid backward tests at full size,
# test_cuda_softmax's BackwardEveryPath / BatchInvariance, memcheck on test_cuda_warp_backward (small), and
# torch.compile's softmax backward at the two bf16 shapes compiled meanwhile, profiled once the tests are done
# (scripts/ncu_torch.py; SMK_SB12_TORCH=0 skips it). Binaries built off the device for sm_90a
# (build/sbwd12-bin.tar.xz: bin/{tune_softmax,test_cuda_warp_backward,test_cuda_warp_row,test_cuda_softmax}, lib/).
# Caps: SMK_SB12_TUNE_S (25 s), SMK_SB12_NCU_S (15), SMK_SB12_TEST_S (25), SMK_SB12_TORCH_S (45).
# Back: sbwd12-tune.txt, sbwd12-ncu.txt, sbwd12-torch.txt, sbwd12-summary.txt, sbwd12-logs.tgz.
# Ran on 69c6ce5's binaries (19:11 UTC, SMK_SB12_TORCH=0, caps 20 / 12 / 20; results in 084e539 and the perf notebook).
# Since 084e539 the variants are removed and --sbwd12 times the shipped rule against the configuration before; the
# packed-variant test (*PackedVariants*) is gone.
if want sbwd12; then
  carried sbwd12 build/sbwd12-bin.tar.xz
  sb12=$bin
  sb12_metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,\
dram__bytes_write.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,launch__block_size,launch__occupancy_limit_registers,\
sm__warps_active.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,\
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
  run_step sbwd12-tune timeout "${SMK_SB12_TUNE_S:-25}" stdbuf -oL "$sb12/bin/tune_softmax" --sbwd12
  keep_logs sbwd12
  run_step sbwd12-ncu timeout "${SMK_SB12_NCU_S:-15}" ncu --metrics "$sb12_metrics" --clock-control none \
    -k regex:"backward_warp" "$sb12/bin/tune_softmax" --sbwd12-ncu
  keep_logs sbwd12
  rm -f /tmp/sb12-go
  if [[ "${SMK_SB12_TORCH:-1}" == 1 ]]; then
    bg_step sbwd12-torch env TORCHINDUCTOR_CACHE_DIR=/tmp/sb12-inductor \
      timeout "${SMK_SB12_TORCH_S:-45}" ncu --metrics "$sb12_metrics" --clock-control none --profile-from-start off \
      -k regex:triton -c 2 python3 scripts/ncu_torch.py --op softmax_backward --dtype bf16 \
      --shape 1048576x32 262144x128 --go /tmp/sb12-go
  fi
  sb12_t=${SMK_SB12_TEST_S:-25}
  sb12_pids=()
  bg_step sbwd12x-warpbwd timeout "$sb12_t" "$sb12/bin/test_cuda_warp_backward"
  sb12_pids+=($!)
  bg_step sbwd12x-warp timeout "$sb12_t" "$sb12/bin/test_cuda_warp_row" \
    --gtest_filter='*PackedBackward*:*BackwardLanes*:*BackwardGrids*:*PackedRule*'
  sb12_pids+=($!)
  bg_step sbwd12x-softmax timeout "$sb12_t" "$sb12/bin/test_cuda_softmax" \
    --gtest_filter='*BackwardEveryPath*:*BatchInvariance*'
  sb12_pids+=($!)
  bg_step sbwd12x-memcheck timeout "$sb12_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$sb12/bin/test_cuda_warp_backward"
  sb12_pids+=($!)
  wait "${sb12_pids[@]}"
  touch /tmp/sb12-go  # the tests are done: torch.compile's kernels are profiled alone on the GPU
  bg_tally
  keep_logs sbwd12
  rm -f "$outer"/sbwd12x-*.txt  # their pass / fail lines are in sbwd12-summary.txt, the logs in sbwd12-logs.tgz
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
  if s10_go; then
    # (The run of 809a984 capped these at 30 s with the grid tests first: the packed tests never finished at full size.
    # Since then the packed and lane tests alone, 60 s.)
    s10_t=${SMK_S10_TEST_S:-60}
    bg_step short10x-warp timeout "$s10_t" "$s10/bin/test_cuda_warp_row" --gtest_filter='*Packed*:*BackwardLanes*'
    bg_step short10x-softmax timeout "$s10_t" "$s10/bin/test_cuda_softmax" \
      --gtest_filter='*BackwardEveryPath*:*NonFiniteRows*:*SlicedStridedUnaligned*'
    bg_step short10x-memcheck timeout "$s10_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "$s10/bin/test_cuda_warp_row" --gtest_filter='*Packed*'
    bg_tally
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
# pfx11 (session 11, issue 7; ran on 087be37's binaries at 16:51 UTC, results in docs/perf-notebook.md, "session 11
# — pfx11"): removed with the variant it timed (prefill_wgmma.cu's kChains, review F16); `git show a99afd6:scripts/
# device.sh` has the step, 087be37 the code it needs.
# dec11 (session 11, issue 8: split-KV decode): the tensor-core kernel's cp.async and TMA tiles over S_max
# 1024..32768 x B 1..64 and the issue's rows (bench_decode --sweep: the TMA rule's data; outputs compared bit for bit),
# with the decode kernels' registers; or, with SMK_DEC11_GRIDS set, only the SDPA backends' kernels and grids
# (scripts/decode_kernel_grids.py). Binaries built off the device for sm_90a (build/dec11-bin.tar.xz: bin/bench_decode;
# lib/). Session 11's step also timed and tested blocks of 3 warps (DecodeConfig::mma_warps) and the C entry point
# built with them (--decode-lib2); those were removed after the review (F17): `git show a99afd6:scripts/device.sh`
# has that step, e16cc07 the code it needs.
# Back: dec11-summary.txt, dec11-sweep.txt (or dec11-grids.md), dec11-logs.tgz.
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
  rm -f "$outer"/dec11-registers.txt  # in the summary / logs.tgz
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
  s11_t=${SMK_S11_TEST_S:-30}
  # gtest's shards (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX): the float64 references on 16 CPUs at once, every test
  # run once across the shards.
  for i in 0 1 2 3 4 5; do
    bg_step "short11x-warp$i" env GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout "$s11_t" "$s11/bin/test_cuda_warp_row"
  done
  for i in 0 1 2; do
    bg_step "short11x-softmax$i" env GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout "$s11_t" \
      "$s11/bin/test_cuda_softmax" --gtest_filter='*EveryPathEveryLength*:*NonFiniteRows*:*SlicedStridedUnaligned*:*BatchInvariance*:*SixteenBitSoftmaxWithinItsPlainExponentialBound*'
  done
  bg_step short11x-memcheck timeout "$s11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$s11/bin/test_cuda_warp_row" --gtest_filter='*DenseKernelBitwise*'
  bg_tally
  keep_logs short11
  rm -f "$outer"/short11x-*.txt  # their pass / fail lines are in short11-summary.txt, the logs in short11-logs.tgz
  end_carried
fi
# one11 (session 11, issue 3): split_row's normalising kernel with its cache hints (SplitRowTuning::l2_hints) timed
# beside the kernel without (hints 0) in one binary (tune_softmax --one11), then the GPU tests of the area in parallel:
# the hints' tests (test_cuda_few_rows *NormalizeHints*:*CommonCall*), test_cuda_few_rows' *NoCluster*:*Stream*,
# test_cuda_row_loop and test_cuda_grid_row less the tests ec84571's run passed before its caps, memcheck on the
# small hints' cases (*NormalizeHints*). Binaries built off the device for sm_90a
# (build/one11-bin.tar.xz: bin/{tune_softmax,test_cuda_few_rows,test_cuda_row_loop,test_cuda_grid_row}, lib/).
# Caps: SMK_O11_TUNE_S (25 s), SMK_O11_TEST_S (30). (ec84571's first run also timed chunk_ahead and ran its
# AheadAndHints test; both were removed in a449afe, and with them this step's first-run filters.)
# Back: one11-tune.txt, one11-summary.txt, one11-logs.tgz.
if want one11; then
  carried one11 build/one11-bin.tar.xz
  o11=$bin
  run_step one11-tune timeout "${SMK_O11_TUNE_S:-25}" stdbuf -oL "$o11/bin/tune_softmax" --one11
  keep_logs one11
  o11_t=${SMK_O11_TEST_S:-30}
  bg_step one11x-levers timeout "$o11_t" "$o11/bin/test_cuda_few_rows" --gtest_filter='*NormalizeHints*:*CommonCall*'
  bg_step one11x-few timeout "$o11_t" "$o11/bin/test_cuda_few_rows" --gtest_filter='*NoCluster*:*Stream*'
  bg_step one11x-loop timeout "$o11_t" "$o11/bin/test_cuda_row_loop" \
    --gtest_filter='-*ForwardBitwise*:*BackwardBitwise*:*OneForward*:*OneBackward*:*CallsItDoesNot*'
  bg_step one11x-grid timeout "$o11_t" "$o11/bin/test_cuda_grid_row" --gtest_filter='-*IssueLengthsFewRows*'
  bg_step one11x-memcheck timeout "$o11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$o11/bin/test_cuda_few_rows" --gtest_filter='*NormalizeHints*'
  bg_tally
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
  m11_t=${SMK_MID11_TEST_S:-30}
  bg_step mid11x-bwd timeout "$m11_t" "$m11/bin/test_cuda_backward_reread"
  bg_step mid11x-softmax timeout "$m11_t" "$m11/bin/test_cuda_softmax" --gtest_filter='*BackwardEveryPath*'
  bg_step mid11x-memcheck timeout "$m11_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$m11/bin/test_cuda_backward_reread"
  bg_tally
  { grep -h "^hash" "$OUT"/mid11-*.log | sort | uniq -c; } >"$OUT/mid11-hashes.log"
  keep_logs mid11
  rm -f "$outer"/mid11x-*.txt  # their pass / fail lines are in mid11-summary.txt, the logs in mid11-logs.tgz
  end_carried
fi
# short12 (session 12, issue 3: the forward ops on rows of 32 ... 1024): 16-bit softmax on two lanes of 16 at 32 (the
# 16-bit tier at E16, the dense kernel at E16) and packed E16 log ops, timed beside the dispatcher's kernels before
# short12 in one binary (tune_softmax --short12), alone on the GPU; Nsight Compute (a few metrics) on one launch of
# each of our kernels at 1048576x32 (tune_softmax --short12-ncu: f32 softmax, bf16 softmax old / new, bf16
# log-softmax); then in parallel: test_cuda_warp_row's forward tests at full size (6 shards), test_cuda_softmax's
# cases that cover the warp path (3 shards), memcheck on the small Dense cases, and torch.compile's two softmax kernels
# at 1048576x32 compiled meanwhile and profiled under the same metrics once the tests are done
# (scripts/ncu_torch.py; SMK_S12_TORCH=0 skips it). Binaries built off the device for sm_90a
# (build/short12-bin.tar.xz: bin/{tune_softmax,test_cuda_warp_row,test_cuda_softmax}, lib/). Caps: SMK_S12_TUNE_S (25
# s), SMK_S12_TEST_S (25), SMK_S12_TORCH_S (50). Back: short12-tune.txt, short12-ncu.txt, short12-torch.txt,
# short12-summary.txt, short12-logs.tgz.
if want short12; then
  carried short12 build/short12-bin.tar.xz
  s12=$bin
  s12_metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,\
dram__bytes_write.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,launch__block_size,launch__occupancy_limit_registers,\
sm__warps_active.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,\
l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,\
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
  run_step short12-tune timeout "${SMK_S12_TUNE_S:-25}" stdbuf -oL "$s12/bin/tune_softmax" --short12
  keep_logs short12
  run_step short12-ncu timeout "${SMK_S12_NCU_S:-15}" ncu --metrics "$s12_metrics" --clock-control none \
    -k regex:"warp_rows" "$s12/bin/tune_softmax" --short12-ncu
  keep_logs short12
  rm -f /tmp/s12-go
  if [[ "${SMK_S12_TORCH:-1}" == 1 ]]; then
    bg_step short12-torch env TORCHINDUCTOR_CACHE_DIR=/tmp/s12-inductor TRITON_CACHE_DIR=/tmp/s12-triton \
      timeout "${SMK_S12_TORCH_S:-50}" ncu --metrics "$s12_metrics" --clock-control none \
      --profile-from-start off -k regex:triton -c 2 python3 scripts/ncu_torch.py --op softmax --dtype f32 bf16 \
      --shape 1048576x32 --go /tmp/s12-go --ptx
  fi
  s12_t=${SMK_S12_TEST_S:-25}
  s12_pids=()
  for i in 0 1 2 3 4 5; do
    bg_step "short12x-warp$i" env GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout "$s12_t" \
      "$s12/bin/test_cuda_warp_row" --gtest_filter='-*Backward*'
    s12_pids+=($!)
  done
  for i in 0 1 2; do
    bg_step "short12x-softmax$i" env GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout "$s12_t" \
      "$s12/bin/test_cuda_softmax" --gtest_filter='*EveryPathEveryLength*:*NonFiniteRows*:*SlicedStridedUnaligned*:*BatchInvariance*:*SixteenBitSoftmaxWithinItsPlainExponentialBound*'
    s12_pids+=($!)
  done
  bg_step short12x-memcheck timeout "$s12_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$s12/bin/test_cuda_warp_row" --gtest_filter='*Dense*:-*Backward*'
  s12_pids+=($!)
  wait "${s12_pids[@]}"
  touch /tmp/s12-go  # the tests are done: torch.compile's kernels are profiled alone on the GPU
  bg_tally
  keep_logs short12
  rm -f "$outer"/short12x-*.txt  # their pass / fail lines are in short12-summary.txt, the logs in short12-logs.tgz
  end_carried
fi
# one12 (session 12, issue 3): split_row's compact chunk and normalising kernels prefetching into L2 the chunk of the
# next wave (split_row.cu l2_ahead) timed beside the kernels without in one binary (tune_softmax --one12), then the
# GPU tests of the area in parallel (test_cuda_few_rows in four shards, test_cuda_row_loop and test_cuda_grid_row in
# two, whole but their timing tests; memcheck on the small prefetch cases), then Nsight Compute (a few metrics) of the chunk, merge and
# normalising kernels at 1x16777216 softmax, before and with the levers (one launch each). Binaries built off the device for sm_90a
# (build/one12-bin.tar.xz: bin/{tune_softmax,test_cuda_few_rows,test_cuda_row_loop,test_cuda_grid_row}).
# Caps: SMK_O12_TUNE_S (22 s), SMK_O12_TEST_S (25), SMK_O12_NCU_S (12; 0 skips it).
# Back: one12-tune.txt, one12-summary.txt, one12-ncu.txt, one12-logs.tgz.
# Its run of f219827 (2026-11-30 19:20 UTC, cold, 33.5 s, caps 16 / 18 / 9): the timing 8 s, Nsight Compute 5 s;
# the tests' 18 s cut six of the nine shards (docs/perf-notebook.md "one12" lists what passed); give them ≥ 60 s.
# Since then tune_softmax --one12 [ncu] times the shipped levers (132 chunks ahead, the merge preloading).
if want one12; then
  carried one12 build/one12-bin.tar.xz
  o12=$bin
  run_step one12-tune timeout "${SMK_O12_TUNE_S:-22}" stdbuf -oL "$o12/bin/tune_softmax" --one12
  keep_logs one12
  o12_t=${SMK_O12_TEST_S:-25}
  o12_skip='*Timing*:*ProfileCalls*'
  for i in 0 1 2 3; do
    bg_step "one12x-few$i" env GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout "$o12_t" \
      "$o12/bin/test_cuda_few_rows" --gtest_filter="-$o12_skip"
  done
  for i in 0 1; do
    bg_step "one12x-loop$i" env GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i timeout "$o12_t" \
      "$o12/bin/test_cuda_row_loop" --gtest_filter="-$o12_skip"
    bg_step "one12x-grid$i" env GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i timeout "$o12_t" \
      "$o12/bin/test_cuda_grid_row" --gtest_filter="-$o12_skip"
  done
  bg_step one12x-memcheck timeout "$o12_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$o12/bin/test_cuda_few_rows" --gtest_filter='*L2Prefetch*'
  bg_tally
  keep_logs one12
  if [[ "${SMK_O12_NCU_S:-12}" != 0 ]]; then
    o12_m=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum
    o12_m=$o12_m,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active
    o12_m=$o12_m,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread
    run_step one12-ncu timeout "${SMK_O12_NCU_S:-12}" ncu --clock-control none --kernel-name-base demangled \
      -k regex:"chunk_states_plain|merge_states|normalize_plain" -c 12 --metrics "$o12_m" \
      "$o12/bin/tune_softmax" --one12 ncu
    cp "$OUT/one12-ncu.log" "$outer/one12-ncu.txt" 2>/dev/null
    keep_logs one12
  fi
  rm -f "$outer"/one12x-*.txt  # their pass / fail lines are in one12-summary.txt, the logs in one12-logs.tgz
  end_carried
fi
# dec12 (session 12, issue 8: split-KV decode): the TMA choice by the grid (DecodeConfig::tma_grid) beside the
# dispatcher's (by S_max), and the split rule's cap at 24 and 32 on the single-sequence rows, in one binary
# (bench_decode --dec12: 3 samples of each alternating, the two TMA rules' outputs compared bit for bit), alone on the
# GPU; then sdpa_interleaved.py's decode rows (ours: the dispatcher, dec12's build) against cuDNN and FLASH, alone;
# then in parallel: test_cuda_decode whole (4 shards), test_cuda's merge tests, memcheck on the small grid-rule and
# bad-input cases. Binaries built off the device for sm_90a (build/dec12-bin.tar.xz: bin/test_cuda_decode,
# bench_decode, test_cuda, libsmk_attention_capi.so; lib/libfmt.so.9). Caps: SMK_DEC12_BENCH_S (20 s),
# SMK_DEC12_FAIR_S (25; 0 skips it), SMK_DEC12_TEST_S (35).
# Back: dec12-summary.txt, dec12-bench.txt, dec12-fair.md, dec12-logs.tgz.
if want dec12; then
  carried dec12 build/dec12-bin.tar.xz
  d12=$bin
  run_step dec12-bench timeout "${SMK_DEC12_BENCH_S:-20}" stdbuf -oL "$d12/bin/bench_decode" --dec12 \
    --json "$OUT/dec12-bench.json"
  keep_logs dec12
  d12_f=${SMK_DEC12_FAIR_S:-25}
  if [ "$d12_f" != 0 ]; then
    run_step dec12-fair timeout "$d12_f" env PYTHONUNBUFFERED=1 python3 scripts/sdpa_interleaved.py \
      --lib "$d12/bin/libsmk_attention_capi.so" --only decode --out "$OUT/dec12-fair.md" \
      --json "$OUT/dec12-fair.json" --rounds "${SMK_DEC12_ROUNDS:-6}" --deadline-s $((d12_f - 6))
    keep_logs dec12
  fi
  d12_t=${SMK_DEC12_TEST_S:-35}
  for i in 0 1 2 3; do
    bg_step "dec12x-test$i" env GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout "$d12_t" "$d12/bin/test_cuda_decode"
  done
  bg_step dec12x-merge timeout "$d12_t" "$d12/bin/test_cuda" --gtest_filter='*Merge*'
  bg_step dec12x-memcheck timeout "$d12_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$d12/bin/test_cuda_decode" --gtest_filter='*TmaByTheGrid*:*BadInputs*'
  bg_tally
  keep_logs dec12
  cp "$OUT/dec12-fair.md" "$outer/" 2>/dev/null
  end_carried
fi
# mid12 (session 12, issue 3): the re-read backward's forms (backward_reread.hpp kReread*: evict-last first loop,
# streaming dx, two vectors a step) beside form 0 and the dy-shared block in one binary (tune_softmax --mid12, alone
# on the GPU; dx hashed after each form: every form must print form 0's), then in parallel: test_cuda_backward_reread
# whole, test_cuda_softmax *BackwardEveryPath* at full size, memcheck on the small re-read cases. Binaries built off the
# device for sm_90a (build/mid12-bin.tar.xz: bin/{tune_softmax,test_cuda_backward_reread,test_cuda_softmax}).
# Caps: SMK_MID12_TUNE_S (25 s), SMK_MID12_TEST_S (40), SMK_MID12_NCU_S (0: no Nsight Compute; else one launch of
# forms 0 and 7 at bf16 8192x32000 log-softmax backward, tune_softmax --mid12 ncu). Back: mid12-tune.txt,
# mid12-hashes.txt, mid12-summary.txt, mid12-logs.tgz (mid12-ncu.txt where profiled).
if want mid12; then
  carried mid12 build/mid12-bin.tar.xz
  m12=$bin
  run_step mid12-tune timeout "${SMK_MID12_TUNE_S:-25}" stdbuf -oL "$m12/bin/tune_softmax" --mid12
  { grep -h "^hash" "$OUT/mid12-tune.log" | awk '{print $2, $3, $4, $7}' | sort | uniq -c; } >"$OUT/mid12-hashes.log"
  keep_logs mid12
  m12_t=${SMK_MID12_TEST_S:-40}
  bg_step mid12x-bwd timeout "$m12_t" "$m12/bin/test_cuda_backward_reread"
  bg_step mid12x-softmax timeout "$m12_t" "$m12/bin/test_cuda_softmax" --gtest_filter='*BackwardEveryPath*'
  bg_step mid12x-memcheck timeout "$m12_t" env SMK_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck \
    --report-api-errors no --error-exitcode 9 "$m12/bin/test_cuda_backward_reread"
  bg_tally
  keep_logs mid12
  if [[ "${SMK_MID12_NCU_S:-0}" != 0 ]]; then
    run_step mid12-ncu timeout "$SMK_MID12_NCU_S" ncu --clock-control none --kernel-name-base demangled \
      -k regex:backward_reread -c 2 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum \
      "$m12/bin/tune_softmax" --mid12 ncu
    keep_logs mid12
  fi
  rm -f "$outer"/mid12x-*.txt  # their pass / fail lines are in mid12-summary.txt, the logs in mid12-logs.tgz
  end_carried
fi
# pfx12 (session 12, issue 7; ran at 19:15 UTC, docs/perf-notebook.md "session 12 — pfx12"): removed with the variant
# it timed (8d74bb0; review F12); `git show 2b771c8:scripts/device.sh` has the step, 46ce98c the code it needs.
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
