# Two commands for readers and CI: `make book` and `make test` (`make serve` previews the site).
# Both create the virtual environment .venv from requirements.txt when it is missing
# or older than requirements.txt / pyproject.toml.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
HTML   := _build/html/index.html
PDF    := _build/pdf/positional-encoding-course.pdf
PORT   ?= 8000

# `make book TORCH_CPU=1` (or `make test TORCH_CPU=1`), on a fresh clone: install torch's
# CPU-only build from PyTorch's wheel index instead of PyPI's build, which pulls several GB of
# CUDA libraries (for Linux without an NVIDIA GPU). Off by default: it needs that index.
TORCH_CPU       ?=
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
PIP_TORCH_CPU   := $(if $(filter 1,$(TORCH_CPU)),--extra-index-url $(TORCH_CPU_INDEX))

# Figures must be displayed inline for nbval to see them: never force a backend.
unexport MPLBACKEND

.PHONY: book test serve lab strip clean pdf colab-cells assignments mutation

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(PIP_TORCH_CPU) --requirement requirements.txt
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

# Remove volatile metadata from the committed notebooks, keeping their outputs. The options are
# those of the pre-commit hook in .pre-commit-config.yaml (tests/test_notebooks.py checks that
# they agree, and that no committed notebook would be changed).
NBSTRIPOUT_ARGS := --keep-output --keep-count --keep-id --extra-keys "metadata.language_info.version metadata.vscode metadata.colab metadata.kernel_info metadata.papermill cell.metadata.vscode cell.metadata.colab cell.metadata.id cell.metadata.outputId cell.metadata.papermill"

strip: $(STAMP)
	$(BIN)/nbstripout $(NBSTRIPOUT_ARGS) $(wildcard book/*.ipynb assignments/*/*.ipynb)

# The whole book as one PDF (about a minute): Jupyter Book's single-page HTML, printed by
# Debian's Chromium (apt-get install chromium) through Playwright after MathJax has typeset it.
# Not part of `make book`, which stays fast; run `make pdf` first and `make book` then links it.
pdf: $(STAMP) assignments
	$(BIN)/jupyter-book build . --builder singlehtml -W -n --keep-going
	$(BIN)/python tools/print_pdf.py _build/singlehtml $(PDF)
	@echo
	@echo "The PDF is built. Open file://$(CURDIR)/$(PDF)"

# Put the Colab install cell (the address of _config.yml's repository:) first in every
# notebook; run it after changing the repository's address or adding a notebook.
colab-cells: $(STAMP)
	$(BIN)/python tools/colab_cell.py

clean:
	rm -rf _build .pytest_cache .hypothesis

# Grade a class without Docker (tools/grade.py): every .ipynb under SUBMISSIONS, JOBS at a time
# with `otter run`, each stopped after TIMEOUT seconds; writes $(GRADES)/grades.csv and each
# student's feedback. Regenerates the autograder first when it is missing or older than the master.
# Usage: make grade ASSIGNMENT=build-the-encoding SUBMISSIONS=path/to/submissions/
ASSIGNMENT  ?=
SUBMISSIONS ?=
GRADES      ?= _build/grades/$(ASSIGNMENT)
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
TIMEOUT     ?= 600
.PHONY: grade
grade: $(STAMP)
	@test -f "assignments/$(ASSIGNMENT)/$(ASSIGNMENT).ipynb" && test -d "$(SUBMISSIONS)" || \
	  { echo "usage: make grade ASSIGNMENT=<name of a folder of assignments/> SUBMISSIONS=<folder of .ipynb>" >&2; exit 2; }
	@zip=$$(ls -t _build/assignments/$(ASSIGNMENT)/autograder/$(ASSIGNMENT)-autograder_*.zip 2>/dev/null | head -n 1); \
	  if test -z "$$zip" || test -n "$$(find assignments/$(ASSIGNMENT) assignments/autograder-requirements.txt -newer $$zip)"; then \
	    $(MAKE) --no-print-directory assignments; fi
	$(BIN)/python tools/grade.py $$(ls -t _build/assignments/$(ASSIGNMENT)/autograder/$(ASSIGNMENT)-autograder_*.zip | head -n 1) \
	  "$(SUBMISSIONS)" --output "$(GRADES)" --jobs $(JOBS) --timeout $(TIMEOUT)
