#!/usr/bin/env bash
# Installs what softmaxkit needs to build and test, from Debian's packages (and PyPI for the Python tests).
# Safe to run repeatedly: it installs only what is missing. On a machine without a package registry (the GPU
# device machine) it says what it could not install and carries on; the build then uses .devdeps/ if present.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(cmake ninja-build g++ googletest libgtest-dev libbenchmark-dev libcli11-dev libfmt-dev nlohmann-json3-dev
      clang libclang-rt-14-dev)  # clang and its libFuzzer runtime: tests/fuzz/run.sh
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})) && [ -d .devdeps/include ] && command -v cmake >/dev/null && command -v ninja >/dev/null; then
  echo "setup: ${missing[*]} not installed; using the carried copies in .devdeps/ (scripts/stage-device-deps.sh)"
  missing=()
fi
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if command -v apt-get >/dev/null && { $SUDO apt-get update -qq && \
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
    echo "setup: Debian packages installed"
  else
    echo "setup: could not install ${missing[*]} (no package registry?); continuing with what is present"
  fi
fi

# Python: what `pip install .` needs to build (scikit-build-core, nanobind) and what the CPU tests need (NumPy,
# SciPy, pytest), from PyPI, into a virtual environment under build/python so that no system interpreter is
# touched, unless python3 already has them all (scripts/python-env.sh).
. scripts/python-env.sh
py_venv=build/python/venv
if [ "$(smk_python)" = python3 ]; then
  echo "setup: python3 already has $smk_python_packages"
else
  if [ ! -x "$py_venv/bin/python" ] && command -v python3 >/dev/null; then
    python3 -m venv --system-site-packages "$py_venv" || echo "setup: could not create $py_venv (python3 -m venv)"
  fi
  if [ -x "$py_venv/bin/python" ]; then
    # Few retries and a short timeout: without a registry pip would otherwise back off for minutes.
    "$py_venv/bin/python" -m pip install -q --retries 1 --timeout 15 "scikit-build-core>=0.10" "nanobind>=2.0" \
        "numpy>=1.22" scipy pytest ||
      echo "setup: could not install the Python packages (no package registry?); continuing with what is present"
  fi
fi
