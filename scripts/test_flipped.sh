#!/usr/bin/env bash
# The numerics-labelled tests (tests/CMakeLists.txt) once more with the environment variables
# that choose BLAS and vector kernels flipped: each one set is unset, each one unset is set
# (OPENBLAS_CORETYPE=Haswell: the AVX2 kernels; OPENBLAS_NUM_THREADS=1; ATEN_CPU_CAPABILITY=avx2).
# CI machines differ in these (docs/export.md "Reproducibility"), so a result that holds in one
# environment only fails here, where it starts, instead of on the next machine.
# usage: scripts/test_flipped.sh BUILD_DIR [ctest args...]
set -euo pipefail
build=${1:?usage: scripts/test_flipped.sh BUILD_DIR [ctest args...]}
shift
flip() {  # flip NAME VALUE_WHEN_UNSET
  if [ -n "${!1+x}" ]; then
    echo "test_flipped: unset $1 (was '${!1}')"
    unset "$1"
  else
    echo "test_flipped: $1=$2 (was unset)"
    export "$1=$2"
  fi
}
flip OPENBLAS_CORETYPE Haswell
flip OPENBLAS_NUM_THREADS 1
flip ATEN_CPU_CAPABILITY avx2
cd "$build"
exec ctest --output-on-failure -L numerics -j "$(nproc 2>/dev/null || echo 2)" "$@"
