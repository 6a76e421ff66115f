# Sourced by scripts/setup.sh and scripts/test.sh: picks the Python interpreter that builds and tests the package.
# python3 itself when it already has every package the build and the CPU tests need (the GPU device machine's image
# does, and reaches no registry to fill a venv); otherwise the virtual environment build/python/venv, which
# setup.sh creates and fills from PyPI.
smk_python_packages="scikit_build_core nanobind numpy scipy pytest"
smk_python() {
  if command -v python3 >/dev/null &&
      python3 -c "import importlib.util, sys; sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))" \
        $smk_python_packages 2>/dev/null; then
    echo python3
  else
    echo build/python/venv/bin/python
  fi
}
