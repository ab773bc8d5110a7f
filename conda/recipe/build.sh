#!/bin/bash
# conda-build script (Linux/macOS): build the extensions and install ember.
set -euxo pipefail
if [[ "${cuda_compiler_version:-None}" != "None" ]]; then
    export EMBER_BUILD_CUDA=1   # also builds src_cuda/ into ember/lib/libember_cuda.so
fi
"${PYTHON}" -m pip install . -vv --no-deps --no-build-isolation
