#!/bin/bash
# conda-build script (Linux/macOS): build the extensions and install ember.
set -euxo pipefail
"${PYTHON}" -m pip install . -vv --no-deps --no-build-isolation
