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

.PHONY: book test serve lab clean mutation

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

# Build, then serve the site on this machine only: http://127.0.0.1:$(PORT)/ (Ctrl-C stops it).
serve: book
	@echo "Serving _build/html at http://127.0.0.1:$(PORT)/ (Ctrl-C to stop)"
	$(BIN)/python -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

# Mutation testing (slow, about an hour on 2 cores; not part of `make test`): mutmut changes
# posenc's code one small edit at a time and reruns the unit tests; a mutant the tests do not
# notice ("survived") is a gap in the tests or an equivalent change. mutmut only understands
# a package under src/, so it runs in _build/mutation with code/ copied there as src/
# (settings: [tool.mutmut] in pyproject.toml). MUTANTS selects mutants by name, e.g.
# `make mutation MUTANTS='posenc._validate.*'`; `cd _build/mutation && mutmut browse` to inspect.
MUTANTS ?=
mutation: $(STAMP)
	test -x $(BIN)/mutmut || $(BIN)/python -m pip install --quiet mutmut==3.8.1
	rm -rf _build/mutation && mkdir -p _build/mutation
	cp -r code _build/mutation/src
	cp -r tests pyproject.toml _build/mutation/
	cd _build/mutation && $(CURDIR)/$(BIN)/mutmut run $(MUTANTS); \
		$(CURDIR)/$(BIN)/mutmut results --all true

lab: $(STAMP)
	$(BIN)/jupyter lab book

clean:
	rm -rf _build .pytest_cache .hypothesis
