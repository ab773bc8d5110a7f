:: conda-build script (Windows): build the extensions and install ember.
if not "%cuda_compiler_version%"=="None" if not "%cuda_compiler_version%"=="" set EMBER_BUILD_CUDA=1
"%PYTHON%" -m pip install . -vv --no-deps --no-build-isolation
if errorlevel 1 exit 1
