# ember: `make demo` and `make test` work from a fresh clone (they make .venv).
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.deps-stamp
JOBS    ?= 2

.PHONY: all build test demo lint clean

all: build

$(STAMP): requirements-dev.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

build: $(STAMP)
	$(VPY) setup.py -q build_ext --inplace -j $(JOBS)

test: build
	$(VPY) -m pytest tests

demo: build
	$(VPY) examples/train_digits.py

lint: $(STAMP)
	$(VPY) -m ruff check ember tests examples asv_bench

clean:
	rm -rf build ember/_C/*.c ember/_C/*.so ember/_build_config.py
