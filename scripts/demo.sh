#!/usr/bin/env bash
# Builds softmaxkit and runs `softmaxkit demo`: the lesson's program and the article's worked examples, on the GPU
# when one is present and on the CPU otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset default
cmake --build --preset default --parallel "$(nproc)" --target softmaxkit_cli
./build/default/apps/softmaxkit/softmaxkit demo "$@"
