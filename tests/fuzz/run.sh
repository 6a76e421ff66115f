#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/CMakeLists.txt) with clang, AddressSanitizer and UBSan, CPU only, in
# build/fuzz, and runs each for a bounded time, seeded with its kept corpus.
#   usage: tests/fuzz/run.sh [seconds] [target...]   (default 40 s a target, every target; scripts/test.sh runs it
#                                                     after ctest)
#   SMK_FUZZ_SEED: libFuzzer's -seed (default 1). With a fixed seed a run is one deterministic sequence of inputs that
#     a slower machine only cuts shorter, so CI replays a prefix of what a longer local run with the same seed already
#     passed; explore with another seed (or SMK_FUZZ_SEED=0, libFuzzer's random one) and a longer time.
# New interesting inputs go to build/fuzz/corpus-new-<target>, emptied at each run's start (merge them into the
# target's corpus with `build/fuzz/tests/fuzz/<target> -merge=1 tests/fuzz/<corpus> build/fuzz/corpus-new-<target>`).
# A crash, timeout or contract violation fails this script and leaves the input as build/fuzz/<target>-crash-* (or
# -timeout-*): copy it into the target's corpus, where that target's replay test of every build replays it from then
# on.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-40}
shift $(($# > 0 ? 1 : 0))
# target:corpus, as in tests/fuzz/CMakeLists.txt
all=(fuzz_softmax:corpus fuzz_cross_entropy:corpus_cross_entropy fuzz_attention:corpus_attention
     fuzz_softmax_backward:corpus_softmax_backward)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]%%:*}")
if ! command -v clang++ >/dev/null; then
  if [ -n "${CI:-}" ]; then echo "fuzz: clang++ not found (scripts/setup.sh installs clang)"; exit 1; fi
  echo "fuzz: clang++ not found; skipped (scripts/setup.sh installs clang and libclang-rt-14-dev)"
  exit 0
fi
dir=build/fuzz
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOFTMAXKIT_ENABLE_CUDA=OFF \
  -DSOFTMAXKIT_BUILD_APPS=OFF \
  "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link" >/dev/null
cmake --build "$dir" --target "${targets[@]}" --parallel "$(nproc)"
status=0
for t in "${targets[@]}"; do
  corpus=
  for e in "${all[@]}"; do [ "${e%%:*}" = "$t" ] && corpus=tests/fuzz/${e#*:}; done
  [ -n "$corpus" ] || { echo "fuzz: unknown target $t (known: ${all[*]%%:*})"; exit 2; }
  rm -rf "$dir/corpus-new-$t" && mkdir -p "$dir/corpus-new-$t"  # empty at the start: the run is the seed's sequence
  rm -f "$dir/$t"-crash-* "$dir/$t"-leak-* "$dir/$t"-timeout-* "$dir/$t"-oom-*
  echo "fuzz: running $t for ${seconds}s, seed ${SMK_FUZZ_SEED:-1} (log: $dir/$t.log)"
  if SMK_FUZZ_STATS=1 "$dir/tests/fuzz/$t" "$dir/corpus-new-$t" "$corpus" -max_total_time="$seconds" \
      -seed="${SMK_FUZZ_SEED:-1}" -max_len=4096 -timeout=20 -rss_limit_mb=4096 -artifact_prefix="$dir/$t-" \
      -print_final_stats=1 >"$dir/$t.log" 2>&1; then
    grep -E "^Done|fuzz_[a-z_]+: |stat::number_of_executed_units" "$dir/$t.log" || true
    echo "fuzz: $t: no crash and no contract violation"
  else
    tail -n 40 "$dir/$t.log"
    echo "fuzz: $t FAILED; the input is saved as: $(ls "$dir/$t"-crash-* "$dir/$t"-timeout-* "$dir/$t"-oom-* \
      "$dir/$t"-leak-* 2>/dev/null | tr '\n' ' ')"
    echo "fuzz: add it to $corpus/ as a regression case once fixed"
    status=1
  fi
done
exit $status
