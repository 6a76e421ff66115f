#!/usr/bin/env bash
# Copies the Debian-packaged third-party sources the build needs into .devdeps/ (git-ignored), so that the device
# machine, which reaches no package registry, can build: `run` carries .devdeps with the working tree.
# header-only: CLI11, fmt (built with FMT_HEADER_ONLY), nlohmann-json; sources: GoogleTest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
rm -rf .devdeps && mkdir -p .devdeps/include
cp -r /usr/include/CLI /usr/include/fmt /usr/include/nlohmann .devdeps/include/
cp -r /usr/src/googletest .devdeps/googletest
du -sh .devdeps
