#!/usr/bin/env bash
# Builds the libFuzzer target (tests/fuzz/fuzz_softmax.cpp) with clang, AddressSanitizer and UBSan, CPU only, in
# build/fuzz, and runs it for a bounded time seeded with the kept corpus tests/fuzz/corpus/.
#   usage: tests/fuzz/run.sh [seconds]     (default 60; scripts/test.sh runs it after ctest)
# New interesting inputs go to build/fuzz/corpus-new (merge them into tests/fuzz/corpus/ with
# `build/fuzz/tests/fuzz/fuzz_softmax -merge=1 tests/fuzz/corpus build/fuzz/corpus-new`). A crash or contract
# violation fails this script and leaves the input as build/fuzz/crash-*: copy it into tests/fuzz/corpus/, where
# the fuzz.corpus_replay test of every build replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
if ! command -v clang++ >/dev/null; then
  if [ -n "${CI:-}" ]; then echo "fuzz: clang++ not found (scripts/setup.sh installs clang)"; exit 1; fi
  echo "fuzz: clang++ not found; skipped (scripts/setup.sh installs clang and libclang-rt-14-dev)"
  exit 0
fi
dir=build/fuzz
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOFTMAXKIT_ENABLE_CUDA=OFF \
  -DSOFTMAXKIT_BUILD_APPS=OFF \
  "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link" >/dev/null
cmake --build "$dir" --target fuzz_softmax --parallel "$(nproc)"
mkdir -p "$dir/corpus-new"
rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*
echo "fuzz: running fuzz_softmax for ${seconds}s (log: $dir/fuzz.log)"
if SMK_FUZZ_STATS=1 "$dir/tests/fuzz/fuzz_softmax" "$dir/corpus-new" tests/fuzz/corpus -max_total_time="$seconds" \
    -max_len=4096 -timeout=20 -rss_limit_mb=4096 -artifact_prefix="$dir/" -print_final_stats=1 >"$dir/fuzz.log" 2>&1; then
  grep -E "^Done|fuzz_softmax:|stat::number_of_executed_units" "$dir/fuzz.log" || true
  echo "fuzz: no crash and no contract violation"
else
  tail -n 40 "$dir/fuzz.log"
  echo "fuzz: FAILED; the input is saved as: $(ls "$dir"/crash-* "$dir"/timeout-* "$dir"/oom-* "$dir"/leak-* 2>/dev/null | tr '\n' ' ')"
  echo "fuzz: add it to tests/fuzz/corpus/ as a regression case once fixed"
  exit 1
fi
