:: conda-build script (Windows): build the extensions and install ember.
"%PYTHON%" -m pip install . -vv --no-deps --no-build-isolation
if errorlevel 1 exit 1
