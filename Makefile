# Two commands for readers and CI: `make book` and `make test`.
# Both create the virtual environment .venv from requirements.txt when it is missing
# or older than requirements.txt / pyproject.toml.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HTML   := _build/html/index.html

# Figures must be displayed inline for nbval to see them: never force a backend.
unexport MPLBACKEND

.PHONY: book test lab clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --requirement requirements.txt
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo
	@echo "The book is built. Open file://$(CURDIR)/$(HTML)"

test: $(STAMP)
	$(BIN)/python -m pytest --nbval

lab: $(STAMP)
	$(BIN)/jupyter lab book

clean:
	rm -rf _build .pytest_cache .hypothesis
