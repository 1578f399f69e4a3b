# The two commands of the README. Both create .venv and install the package with its extras first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SOURCES := driftrag tests benchmarks

.PHONY: demo test install eval-table notebooks

$(BIN)/driftrag: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/driftrag

# Lint, then the whole suite: unit tests and integration tests against a real local Neo4j that the
# test session starts (Maven fetches it the first time) and stops at the end.
test: install
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/python -m pytest

# The main job on the bundled sample corpus, offline by default.
demo: install
	$(BIN)/driftrag demo

# The README's evaluation table: ingest CORPUS (Alice's text; default: the pinned download), run the
# five methods on the development set, rewrite the table between its markers in README.md.
eval-table: install
	$(BIN)/python benchmarks/eval_table.py $(if $(CORPUS),--corpus $(CORPUS))

# Execute both notebooks offline on the local Neo4j and rewrite them with their outputs (docs/notebooks.md).
notebooks: install
	$(BIN)/python notebooks/execute.py
