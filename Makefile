# Everyday commands; the README's two commands need none of this.
PY := .venv/bin/python

.PHONY: setup run test test-fast lint format typecheck check

setup:
	python3 -m venv .venv && $(PY) scripts/install.py  # the portable llama.cpp, see README

run:
	$(PY) -m ragexp

test:
	$(PY) -m pytest

test-fast:  ## skips the real llama.cpp model
	$(PY) -m pytest -m "not slow and not live"

lint:
	$(PY) -m ruff check src tests
	$(PY) -m ruff format --check src tests
	.venv/bin/lint-imports

format:
	$(PY) -m ruff format src tests
	$(PY) -m ruff check --fix src tests

typecheck:
	$(PY) -m mypy

check: lint typecheck test
