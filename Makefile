# Two commands for readers and CI: `make book` and `make test` (`make serve` previews the site).
# Both create the virtual environment .venv from requirements.txt when it is missing
# or older than requirements.txt / pyproject.toml.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HTML   := _build/html/index.html
PORT   ?= 8000

# Figures must be displayed inline for nbval to see them: never force a backend.
unexport MPLBACKEND

.PHONY: book test serve lab clean assignments

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --requirement requirements.txt
	touch $@

# Student and autograder versions of every assignment master assignments/<name>/<name>.ipynb,
# in _build/assignments/<name>/{student,autograder}/. `otter assign` runs every test, hidden
# ones included, on the master's solutions and fails (so does make) if one fails.
assignments: $(STAMP)
	@set -e; for master in assignments/*/*.ipynb; do \
	  name=$$(basename $$master .ipynb); \
	  test "$$master" = "assignments/$$name/$$name.ipynb" || continue; \
	  echo "otter assign $$master -> _build/assignments/$$name"; \
	  rm -rf _build/assignments/$$name; \
	  $(BIN)/otter assign $$master _build/assignments/$$name; \
	done

# The book links each assignment's student notebook (built by `make assignments`) for download.
book: $(STAMP) assignments
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo
	@echo "The book is built. Open file://$(CURDIR)/$(HTML)"

test: $(STAMP)
	$(BIN)/python -m pytest --nbval

# Build, then serve the site on this machine only: http://127.0.0.1:$(PORT)/ (Ctrl-C stops it).
serve: book
	@echo "Serving _build/html at http://127.0.0.1:$(PORT)/ (Ctrl-C to stop)"
	$(BIN)/python -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

lab: $(STAMP)
	$(BIN)/jupyter lab book

clean:
	rm -rf _build .pytest_cache .hypothesis
