#!/usr/bin/env bash
# Builds softmaxkit and runs the whole test suite. GPU tests run when a CUDA device is present and are reported
# as skipped, with the reason, when it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset default
cmake --build --preset default --parallel "$(nproc)"
ctest --preset default --parallel "$(nproc)"
