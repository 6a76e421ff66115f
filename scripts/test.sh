#!/usr/bin/env bash
# Builds softmaxkit and runs the whole test suite. GPU tests run when a CUDA device is present and are reported
# as skipped, with the reason, when it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset default
cmake --build --preset default --parallel "$(nproc)"
ctest --preset default --parallel "$(nproc)"
# The libFuzzer targets of the CPU API, 40 s each with a fixed seed (their own clang + ASan/UBSan build;
# tests/fuzz/run.sh).
tests/fuzz/run.sh 40
# The Python package: `pip install .` (scikit-build-core + nanobind; into build/python/venv unless python3 has
# what it needs, scripts/python-env.sh), then its tests. Without a GPU (CI) the extension is built CPU-only: its
# CUDA path could not run there, and compiling the CUDA backend a second time would double CUDA compile time. With
# a GPU, CUDA follows nvcc as in the C++ build.
. scripts/python-env.sh
py=$(smk_python)
py_cuda=()
nvidia-smi -L >/dev/null 2>&1 || py_cuda=(--config-settings=cmake.define.SOFTMAXKIT_ENABLE_CUDA=OFF)
"$py" -m pip install -q --no-build-isolation --no-deps "${py_cuda[@]}" .
"$py" -m pytest tests/python -q -rs
