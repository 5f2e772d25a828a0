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

.PHONY: book test serve lab strip clean

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

lab: $(STAMP)
	$(BIN)/jupyter lab book

# Remove volatile metadata from the committed notebooks, keeping their outputs. The options are
# those of the pre-commit hook in .pre-commit-config.yaml (tests/test_notebooks.py checks that
# they agree, and that no committed notebook would be changed).
NBSTRIPOUT_ARGS := --keep-output --keep-count --keep-id --extra-keys "metadata.language_info.version metadata.vscode metadata.colab metadata.kernel_info metadata.papermill cell.metadata.vscode cell.metadata.colab cell.metadata.id cell.metadata.outputId cell.metadata.papermill"

strip: $(STAMP)
	$(BIN)/nbstripout $(NBSTRIPOUT_ARGS) $(wildcard book/*.ipynb assignments/*/*.ipynb)

clean:
	rm -rf _build .pytest_cache .hypothesis
