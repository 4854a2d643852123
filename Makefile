# Two entry points: `make run` (the demo) and `make test` (lint, types, tests).
# Both create .venv when missing and install what the project needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# --no-compile: pip would byte-compile every installed module (torch, ray, transformers, openvino:
# ~100k files), minutes on a slow CI machine; Python compiles the few hundred a test imports on first
# use and caches them, because PYTHONDONTWRITEBYTECODE (set on some machines) is unexported: with it,
# every test process would compile torch and transformers from source again.
PIP := $(PY) -m pip
PIP_INSTALL := $(PIP) install -q --no-compile
unexport PYTHONDONTWRITEBYTECODE
# The CPU build that lies on these machines' disk; a bare `torch` requirement
# would pull a multi-GB CUDA build, so it is installed first when torch is missing.
TORCH_VERSION ?= 2.13.0
export HF_HUB_DISABLE_TELEMETRY := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: run test test-e2e lint typecheck pytest bench bench-peers clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.torch: | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PIP_INSTALL) torch==$(TORCH_VERSION)
	touch $@

$(VENV)/.installed-run: pyproject.toml $(VENV)/.torch
	$(PIP_INSTALL) -e '.[default-model]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.torch
	$(PIP_INSTALL) -e '.[dev]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(VENV)/bin/sbert demo

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy

# The long end-to-end runs (the GPU script's CPU rehearsal, kill-and-resume runs, real-model quality
# checks) are marked e2e: `make test` leaves them out, `make test-e2e` runs them, and CI runs both.
pytest: $(VENV)/.installed-dev
	$(PY) -m pytest -q -m "not e2e"

test: lint typecheck pytest

test-e2e: $(VENV)/.installed-dev
	$(PY) -m pytest -q -m e2e

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/encode_speed.py

# The CPU peers (model2vec, ctranslate2) beside the dev install: `make bench-peers [PEERS_ARGS='--static DIR']`.
$(VENV)/.installed-bench: pyproject.toml $(VENV)/.installed-dev
	$(PIP_INSTALL) -e '.[bench]'
	touch $@

bench-peers: $(VENV)/.installed-bench
	$(PY) benchmarks/cpu_peers.py $(PEERS_ARGS)

clean:
	rm -rf $(VENV) build dist src/*.egg-info .mypy_cache .ruff_cache .pytest_cache
