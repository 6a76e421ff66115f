#!/usr/bin/env bash
# Installs what softmaxkit needs to build and test, from Debian's packages (and PyPI for the Python tests).
# Safe to run repeatedly: it installs only what is missing. On a machine without a package registry (the GPU
# device machine) it says what it could not install and carries on; the build then uses .devdeps/ if present.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(cmake ninja-build g++ googletest libgtest-dev libcli11-dev libfmt-dev nlohmann-json3-dev)
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
