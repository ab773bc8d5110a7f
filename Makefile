# ember: `make demo` and `make test` work from a fresh clone (they make .venv).
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.deps-stamp
JOBS    ?= 2

.PHONY: all build test demo lint clean bench asv-check docs stubs typecheck cuda-check

all: build

$(STAMP): requirements-dev.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

build: $(STAMP)
	$(VPY) setup.py -q build_ext --inplace -j $(JOBS)
	$(VPY) -m compileall -q ember > /dev/null

# nvcc on PATH or in /usr/local/cuda: the build makes ember/lib/libember_cuda.so too
NVCC := $(shell command -v nvcc 2>/dev/null || ls $${CUDA_HOME:-/usr/local/cuda}/bin/nvcc 2>/dev/null)

test: build $(if $(NVCC),cuda-check)
	$(VPY) -m pytest tests

# every src_cuda file compiled with -Werror for every target SM (incremental: the
# build already did it), then the library's exports against ember/_dll.py
cuda-check: $(STAMP)
	$(VPY) src_cuda/build.py --check

# `make demo`: build (a line per compiled file), train (a line per epoch), then the
# training-curve PNG (with matplotlib) and the optional components (`python -m ember`).
DEMO_PLOT ?= build/demo/training_curve.png
demo: build
	$(VPY) examples/train_digits.py --plot $(DEMO_PLOT)
	$(VPY) -m ember --components

# -- benchmarks and docs (issue 7) ---------------------------------------------
# `make bench`: the asv suite against this environment (no env builds), one
# calibrated sample per row, then the ember/torch, ember/numpy ratio table.
#   make bench BENCH_ARGS=--quick          single call per row (fastest, noisiest)
#   make bench BENCH_FILTER=elementwise    one area (asv --bench regex)
ASV          := cd asv_bench && PYTHONPATH=$(CURDIR) $(CURDIR)/$(VPY) -m asv
BENCH_ARGS   ?= -a repeat=1 -a rounds=1 -a warmup_time=0.02
BENCH_FILTER ?= .
bench: build
	$(ASV) machine --yes >/dev/null
	$(ASV) run --python=same $(BENCH_ARGS) --bench '$(BENCH_FILTER)' \
		--set-commit-hash $$(git rev-parse HEAD) || echo "bench: some benchmarks failed (see above)"
	$(VPY) tools/bench_table.py -o asv_bench/ratios.md

asv-check: build
	$(ASV) check --python=same

# Sphinx site, warnings are errors; output in docs/_build/html.
docs: build
	$(VPY) -m sphinx -E -W --keep-going -b html -q docs docs/_build/html

lint: $(STAMP)
	$(VPY) -m ruff check ember tests examples asv_bench tools

# ember/__init__.pyi from the op table and introspection; mypy over examples/ (pyproject)
# and over the docs' Python blocks (tools/doc_blocks.py).
stubs: build
	$(VPY) tools/gen_stubs.py

typecheck: build
	$(VPY) tools/gen_stubs.py --check
	$(VPY) -m mypy
	$(VPY) tools/doc_blocks.py mypy

clean:
	rm -rf build ember/_C/*.c ember/_C/*.so ember/_build_config.py ember/lib/libember_cuda.so
