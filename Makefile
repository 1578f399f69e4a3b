# The two commands of the README (and `make docs`, the manual's site). They create .venv and install the package
# with its extras first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SOURCES := driftrag tests benchmarks

.PHONY: demo test install eval-table docs notebooks

$(BIN)/driftrag: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/driftrag

# Lint, then the whole suite: unit tests and integration tests against a real local Neo4j that the
# test session starts (Maven fetches it the first time) and stops at the end. TEST_WORKERS parallel
# workers, each with its own Neo4j; a test file stays on one worker, so its module fixtures are built once.
TEST_WORKERS ?= 2
test: install
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

# The main job on the bundled sample corpus, offline by default.
demo: install
	$(BIN)/driftrag demo

# The evaluation table of docs/benchmarks.md: ingest Alice (CORPUS, default: the pinned download) and Verne,
# run the five methods at equal context on the reporting half of each set, rewrite that table.
eval-table: install
	$(BIN)/python benchmarks/eval_table.py --record $(if $(CORPUS),--corpus $(CORPUS))

# The manual (docs/, mkdocs.yml) built as a site into site/, strictly: a broken link fails it.
docs: install
	$(BIN)/mkdocs build --strict

# Execute both notebooks offline on the local Neo4j and rewrite them with their outputs (docs/notebooks.md).
notebooks: install
	$(BIN)/python notebooks/execute.py
