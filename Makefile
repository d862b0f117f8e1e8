# Machi: `make serve` runs the server on the embedded defaults, `make test` runs the whole suite.
# Both create .venv when it is missing and (re)install when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=

.PHONY: serve test lint typecheck bench clean help

help:
	@echo "make serve  - set up .venv and run the server (SQLite, scripted engine, demo world)"
	@echo "make test   - set up .venv with dev extras and run the whole test suite"
	@echo "make lint   - ruff check + format check;  make typecheck - mypy on backend/"
	@echo "make bench  - run the benchmarks in bench/ (prints figures)"

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
