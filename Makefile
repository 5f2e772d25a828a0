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

# The Pythons the pins of requirements.txt resolve for on Linux, macOS and Windows
# (tests/test_requirements.py). PYTHON may name any interpreter; an unsupported one stops make
# before .venv is created or pip runs: at once when PYTHON is given (`make book PYTHON=...`),
# or when .venv is about to be created from the default python3. The probe runs on any Python.
SUPPORTED_PYTHONS := 3.11 3.12 3.13
python_found   = $(shell $(1) -c 'import sys; print("%d.%d %s" % (sys.version_info[0], sys.version_info[1], sys.executable))' 2>/dev/null)
python_problem = $(if $(filter $(SUPPORTED_PYTHONS),$(firstword $(1))),,this course needs Python 3.11–3.13; found $(if $(1),$(firstword $(1)) at $(wordlist 2,99,$(1)),no Python at "$(PYTHON)"); set PYTHON=python3.13 (or the path of a Python 3.11–3.13), e.g. make book PYTHON=python3.12)
PYTHON_PROBLEM = $(call python_problem,$(call python_found,$(PYTHON)))
ifneq ($(filter command line environment,$(origin PYTHON)),)
$(if $(PYTHON_PROBLEM),$(error $(PYTHON_PROBLEM)))
endif

# torch's CPU-only build on Linux. PyPI's torch for Linux (x86_64 and aarch64 alike) depends on
# the CUDA libraries: resolved for Python 3.12, 238 packages and 3.4 GB of wheels, 2.2 GB of them
# nvidia-* and 0.5 GB torch itself, against 0.19 GB for the CPU build from PyTorch's own index
# (README, "Your machine"). The course runs on the CPU only, so on Linux `make` installs torch
# from that index first, when it answers (TORCH_CPU=auto, the default), and otherwise says so
# and takes torch from pip's index (PyPI, or a local copy pip is configured with).
# TORCH_CPU=1: the CPU build or stop; TORCH_CPU=0: pip's index (PyPI's CUDA build, for an NVIDIA
# GPU). macOS and Windows: PyPI's torch is the CPU build there, nothing to do.
TORCH_CPU       ?= auto
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_PIN       := $(shell grep -E '^torch==' requirements.txt)
TORCH_CPU_PROBE := import urllib.request; urllib.request.urlopen("$(TORCH_CPU_INDEX)/torch/", timeout=10)

# Figures must be displayed inline for nbval to see them: never force a backend.
unexport MPLBACKEND

.PHONY: book site test serve lab strip clean pdf colab-cells assignments mutation wheelhouse slides

# The JavaScript packages of package-lock.json: the d3 modules that the book's interactive figures
# use (book/_ext/posenc_explorer.py copies them into the site, so `make book` needs them) and
# axe-core, the accessibility checker tests/test_explore.py runs in Chromium.
NODE_MODULES := node_modules/.installed

$(NODE_MODULES): package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm is needed for the interactive figures' d3 modules: install Node.js and npm (README.md, Your machine)" >&2; exit 2; }
	@echo "==> npm ci: the figures' d3 modules and axe-core into node_modules (11 packages, 5 MB)"
	npm ci --no-audit --no-fund
	touch $@

$(STAMP): requirements.txt pyproject.toml
	$(if $(wildcard $(BIN)/python),,$(if $(PYTHON_PROBLEM),$(error $(PYTHON_PROBLEM))))
	@if [ "$$(uname -s)" = Darwin ] && { [ "$$(uname -m)" != arm64 ] || \
	    [ "$$(sw_vers -productVersion | cut -d. -f1)" -lt 14 ]; }; then \
	  echo "$(TORCH_PIN) has macOS wheels for macOS 14 or later on Apple Silicon only; found macOS" \
	    "$$(sw_vers -productVersion) on $$(uname -m): read the course on Binder or Colab (the" \
	    "buttons on every page), or run it on Linux (README, 'Your machine')" >&2; exit 1; \
	fi
	@echo "==> Installing requirements.txt into .venv: the first time several minutes and about 0.9 GB"
	@echo "    of wheels (3.8 GB installed); later only when requirements.txt or pyproject.toml change"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if [ "$$(uname -s)" = Linux ] && [ "$(TORCH_CPU)" != 0 ] && ! $(BIN)/python -m pip show --quiet torch >/dev/null 2>&1; then \
	  if $(BIN)/python -c '$(TORCH_CPU_PROBE)' 2>/dev/null; then \
	    echo "Linux: torch's CPU build from $(TORCH_CPU_INDEX) (TORCH_CPU=0 takes PyPI's, with CUDA)"; \
	    echo "$(BIN)/python -m pip install --quiet --index-url $(TORCH_CPU_INDEX) $(TORCH_PIN)"; \
	    $(BIN)/python -m pip install --quiet --index-url $(TORCH_CPU_INDEX) $(TORCH_PIN) || exit 1; \
	  elif [ "$(TORCH_CPU)" = 1 ]; then \
	    echo "TORCH_CPU=1: PyTorch's CPU index $(TORCH_CPU_INDEX) does not answer" >&2; exit 1; \
	  else \
	    echo "note: PyTorch's CPU index $(TORCH_CPU_INDEX) does not answer: torch comes from pip's index;"; \
	    echo "      on PyPI its Linux build adds about 2.2 GB of CUDA libraries (README, 'Your machine')"; \
	  fi; \
	fi
	$(BIN)/python -m pip install --quiet --requirement requirements.txt
	touch $@

# Student and autograder versions of every assignment master assignments/<name>/<name>.ipynb,
# in _build/assignments/<name>/{student,autograder}/. `otter assign` runs every test, hidden
# ones included, on the master's solutions and fails (so does make) if one fails.
# Incremental: an assignment is generated again only when what it is made from changed (its
# folder, the package it imports, the pins of requirements.txt and of the autograder); the
# file .assigned in its output folder records the last successful `otter assign`.
MASTERS      := $(foreach d,$(wildcard assignments/*/),$(wildcard $(d)$(notdir $(d:/=)).ipynb))
ASSIGNED     := $(patsubst assignments/%.ipynb,_build/assignments/%,$(MASTERS))
ASSIGNED     := $(foreach a,$(ASSIGNED),$(dir $(a)).assigned)
PACKAGE      := $(wildcard code/posenc/*.py)
ASSIGN_DEPS  := $(PACKAGE) requirements.txt pyproject.toml assignments/autograder-requirements.txt

assignments: $(ASSIGNED)

.SECONDEXPANSION:
_build/assignments/%/.assigned: assignments/$$*/$$*.ipynb $$(wildcard assignments/$$*/*) $(ASSIGN_DEPS) | $(STAMP)
	@echo "==> otter assign assignments/$*/$*.ipynb -> $(@D) (runs the master's tests: 5 to 15 s)"
	rm -rf $(@D)
	$(BIN)/otter assign assignments/$*/$*.ipynb $(@D)
	touch $@

# The website, built again only when a source changed (then Sphinx reads and writes only the
# pages that changed, and those that refer to them). A failed build deletes Sphinx's saved
# state (_build/.doctrees), so that the next build reads every page again and reports the same
# warnings instead of passing on the pages it no longer reads.
# The sources: book/, the tables, tools/book_release.py (a Sphinx extension) and the version it
# reads. Once the PDF is written (`make book` or `make pdf`), the site links it and carries a
# copy: a newer PDF makes the site out of date too. The site depends on PDF_PRINTED, which `make
# pdf` touches and no rule makes, not on the PDF itself: `make site` never prints the PDF, and the
# tests' own `make pdf` marks its run elsewhere (tests/test_pdf.py).
BOOK_SOURCES := _config.yml _toc.yml tools/book_release.py code/posenc/_version.py \
	$(shell find book -type f -not -path '*/.ipynb_checkpoints/*' -not -path '*/__pycache__/*')
HTML_BUILT   := _build/.html-built
PDF_PRINTED  := _build/pdf/.printed

# The rubrics of the written questions, which book/assignments/instructors.md includes, are made
# from the masters (grading/rubrics.py), not committed.
RUBRICS := _build/rubrics.md

$(RUBRICS): $(MASTERS) grading/rubrics.py | $(STAMP)
	$(BIN)/python grading/rubrics.py
	touch $@  # rubrics.py leaves an unchanged file as it is: without this, always out of date

# The lecture plan's table, which book/teaching.md includes: slot minutes computed from the
# decks' sources by the time rule of slides/timing.py (slides/README.md), not typed.
PLAN_TABLE := _build/plan.md

$(PLAN_TABLE): $(wildcard slides/lecture-*.md) slides/timing.py | $(STAMP)
	$(BIN)/python slides/timing.py $@
	touch $@  # timing.py leaves an unchanged file as it is

$(HTML_BUILT): $(BOOK_SOURCES) $(ASSIGNED) $(RUBRICS) $(PLAN_TABLE) $(wildcard $(PDF_PRINTED)) $(NODE_MODULES) | $(STAMP)
	@echo "==> Building the website with Jupyter Book: every page the first time (about 10 s),"
	@echo "    later only the pages that changed"
	$(BIN)/jupyter-book build . -W -n --keep-going || { rm -rf _build/.doctrees; exit 1; }
	touch $@

# The lecture decks: one reveal.js deck per edited source slides/lecture-N.md, built by
# sphinx-revealjs with content taken by reference from the chapters' notebooks, the package and
# the live figures (slides/README.md), into _build/slides/. Built again only when one of those
# changed (about 15 s).
SLIDES_SOURCES := $(wildcard slides/*.md slides/*.py slides/_ext/*.py slides/_static/*) \
	book/explore.md $(wildcard book/*.ipynb) book/_ext/posenc_explorer.py \
	$(wildcard book/_static/posenc-explorer*) $(PACKAGE)
SLIDES_BUILT   := _build/slides/.built

$(SLIDES_BUILT): $(SLIDES_SOURCES) $(NODE_MODULES) | $(STAMP)
	@echo "==> Building the lecture decks with sphinx-revealjs (about 10 s)"
	$(BIN)/python slides/build.py --quiet _build/slides
	touch $@

slides: $(SLIDES_BUILT)
	@echo
	@echo "The decks are built (slides/README.md: present, print to PDF):"
	@for deck in _build/slides/*.html; do echo "  file://$(CURDIR)/$$deck"; done

# The lecture handouts (tools/print_handouts.py, slides/README.md), into _build/handouts/: each
# deck with its speaker notes as a PDF (reveal.js's print view with a page of notes after each
# slide) and the unit's one-page student sheet (the formula, its symbols and the worked
# example's empty table, from book/formula.ipynb), printed by Chromium as `make pdf` prints the
# book (about 15 s). Not part of `make book`: the site does not link them, and a lecturer prints
# them once per course.
HANDOUTS_BUILT := _build/handouts/.built

$(HANDOUTS_BUILT): $(SLIDES_BUILT) tools/print_handouts.py tools/print_pdf.py book/formula.ipynb | $(STAMP)
	@echo "==> Printing the handouts: the decks with their notes, the student sheet (about 15 s)"
	POSENC_CHROMIUM="$${POSENC_CHROMIUM:-$$(cd tests && $(CURDIR)/$(BIN)/python -c '$(FIND_CHROMIUM)')}" \
	  $(BIN)/python tools/print_handouts.py _build/slides _build/handouts
	touch $@

.PHONY: handouts
handouts: $(HANDOUTS_BUILT)
	@echo
	@echo "The handouts are printed (slides/README.md, Handouts):"
	@for pdf in _build/handouts/*.pdf; do echo "  file://$(CURDIR)/$$pdf"; done

# The book links each assignment's student notebook (built by `make assignments`) for download,
# and the lecture decks (book/teaching.md), which it carries in _build/html/slides/.
SLIDES_COPIED  := _build/html/slides/.built

$(SLIDES_COPIED): $(SLIDES_BUILT) $(HTML_BUILT)
	rm -rf _build/html/slides && cp -R _build/slides _build/html/slides

# `make book`: the PDF first, when a Chromium is found (tests/browsers.py: POSENC_CHROMIUM, the
# PATH, the usual places, Playwright's own), so that the site then built links it and carries a
# copy; then the site and the decks, in a second make that sees the new PDF. `make site` builds
# the site and the decks only (an edited chapter: 15 s, against about a minute more
# for the PDF).
FIND_CHROMIUM := import browsers; print(browsers.find_chromium()[0] or "")

book: $(STAMP)
	@chromium="$$(cd tests && $(CURDIR)/$(BIN)/python -c '$(FIND_CHROMIUM)')"; \
	if [ -n "$$chromium" ]; then POSENC_CHROMIUM="$$chromium" $(MAKE) --no-print-directory $(PDF) || { \
	  echo "make book: printing the PDF with $$chromium failed (above); make site builds the" \
	    "site and the decks without it" >&2; exit 1; }; \
	else echo "==> No Chromium found: the PDF is not built, and the site does not link it" \
	  "(README.md, The PDF: apt-get install chromium)"; fi
	@$(MAKE) --no-print-directory $(HTML_BUILT) $(SLIDES_COPIED)
	@echo
	@echo "The book is built. Open file://$(CURDIR)/$(HTML)"
	@if [ -f $(PDF) ]; then echo "The PDF: file://$(CURDIR)/$(PDF)"; fi

site: $(HTML_BUILT) $(SLIDES_COPIED)
	@echo
	@echo "The site is built (not the PDF: make book). Open file://$(CURDIR)/$(HTML)"

# Wheels that tests/test_packaging.py installs into fresh environments, downloaded once here so
# that the tests need no network: setuptools (pyproject.toml's build-system, for build's
# isolated environment) and NumPy (posenc's one dependency, at requirements.txt's pin).
WHEELHOUSE := $(VENV)/wheelhouse
WHEELS     := setuptools==84.2.1 $(shell grep -E '^numpy==' requirements.txt)

wheelhouse: $(WHEELHOUSE)/.complete

$(WHEELHOUSE)/.complete: requirements.txt pyproject.toml | $(STAMP)
	rm -rf $(WHEELHOUSE)
	$(BIN)/python -m pip download --quiet --only-binary=:all: --dest $(WHEELHOUSE) $(WHEELS)
	touch $@

# Every test, on TEST_WORKERS pytest-xdist workers (3 by default: one more than the course
# machine's 2 cores, because many tests wait rather than compute: pages loading in Chromium,
# grading time limits, the package index; with 3 the cores stayed busy 90% of a fresh clone's
# run). Each test module and each notebook runs on one worker, the slowest first
# (tests/conftest.py); the fixtures build what is out of date with make (the assignments, the
# book, the PDF), once. The 15 slowest tests are listed at the end.
TEST_WORKERS ?= 3

test: $(STAMP) $(WHEELHOUSE)/.complete $(NODE_MODULES)
	$(BIN)/python -m pytest --nbval -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		--durations=15

# Build what is out of date, then serve the site on this machine only:
# http://127.0.0.1:$(PORT)/ (Ctrl-C stops it).
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

# JupyterLab on book/. JUPYTER_PATH puts .venv's kernel spec "python3" (the name the notebooks
# ask for; it runs the Python of .venv, where posenc and the frameworks are installed) before a
# "python3" of the user's or the system's. JupyterLab refuses to start as root unless given
# --allow-root; containers and cloud notebooks often run everything as root, so the option is
# passed then, and only then. LAB_ARGS adds options, e.g. on a remote machine or in a container:
# make lab LAB_ARGS="--ip=0.0.0.0 --port=8888 --no-browser" (see README.md).
LAB_ARGS ?=
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP)
	JUPYTER_PATH=$(CURDIR)/$(VENV)/share/jupyter $(BIN)/jupyter lab --ServerApp.root_dir=book \
		--MappingKernelManager.default_kernel_name=python3 $(ALLOW_ROOT) $(LAB_ARGS)

# Remove volatile metadata from the committed notebooks, keeping their outputs. The options are
# those of the pre-commit hook in .pre-commit-config.yaml (tests/test_notebooks.py checks that
# they agree, and that no committed notebook would be changed).
NBSTRIPOUT_ARGS := --keep-output --keep-count --keep-id --extra-keys "metadata.language_info.version metadata.vscode metadata.colab metadata.kernel_info metadata.papermill cell.metadata.vscode cell.metadata.colab cell.metadata.id cell.metadata.outputId cell.metadata.papermill"

strip: $(STAMP)
	$(BIN)/nbstripout $(NBSTRIPOUT_ARGS) $(wildcard book/*.ipynb assignments/*/*.ipynb)
	$(BIN)/python tools/fold_solutions.py $(wildcard book/*.ipynb)

# The whole book as one PDF (about a minute): Jupyter Book's single-page HTML, printed
# by Debian's Chromium (apt-get install chromium) through Playwright after MathJax has typeset it.
# `make book` builds it first when it finds a Chromium, and the site then links it. Built again
# only when a source of the book, an assignment or the printing tools changed.
$(PDF): $(BOOK_SOURCES) $(ASSIGNED) $(RUBRICS) $(PLAN_TABLE) $(NODE_MODULES) tools/print_pdf.py tools/print.css | $(STAMP)
	@echo "==> Printing the PDF: the book as one page (Jupyter Book's singlehtml), printed by Chromium (about a minute)"
	$(BIN)/jupyter-book build . --builder singlehtml -W -n --keep-going || { rm -rf _build/.doctrees; exit 1; }
	$(BIN)/python tools/print_pdf.py _build/singlehtml $(PDF)
	touch $(PDF_PRINTED)

pdf: $(PDF)
	@echo
	@echo "The PDF is built. Open file://$(CURDIR)/$(PDF)"

# Put the Colab install cell (the address of _config.yml's repository:) first in every
# notebook; run it after changing the repository's address or adding a notebook.
colab-cells: $(STAMP)
	$(BIN)/python tools/colab_cell.py

clean:
	rm -rf _build .pytest_cache .hypothesis

# Grade a class (grading/grade.py): every .ipynb under SUBMISSIONS, JOBS at a time, sealed
# (grading/sealed.py: the notebook in a kernel of its own, the tests in another process on the
# values it returns) and sandboxed (grading/sandbox.py: the kernel under bubblewrap, seeing only its
# folder, the course's Python and its assignment's part of posenc, without network, its processes
# ended with it; Docker's `otter grade` where bubblewrap is missing; it prints which), each in a
# private temporary folder removed after grading. Time limits:
# a call from a test TEST_TIMEOUT seconds (it fails, the other questions keep their points), a cell
# CELL_TIMEOUT seconds (interrupted), a whole notebook TIMEOUT seconds (stopped, 0). Writes
# $(GRADES)/grades.csv (scores, reason for a 0, review flags: code to read, copies of the
# published solutions or of each other), feedback/ (safe to return),
# details/ and results/ (hidden tests' output: instructor only), after removing those of an
# earlier run. Regenerates the autograder first when it is out of date (its .assigned stamp).
# Usage: make grade ASSIGNMENT=build-the-encoding SUBMISSIONS=path/to/submissions/
# VARIANT=<secret> grades with the private variant `make variant SEED=<secret>` wrote (made
# first when it is missing), and writes to _build/variants/<secret>/grades/<assignment>.
# It also writes the written questions' pages and score sheets (grading/manual.py) in
# $(GRADES)/manual/ and the codes' key in $(GRADES)/manual-key.csv; MANUAL="<sheet> ..." then
# merges the filled sheets into $(GRADES)/grades.csv instead of grading.
MANUAL       ?=
# LIMITS: what one submission may take (grading/limits.py), default memory=2G (each process's
# address space, and the total in a memory cgroup where one can be made: the course's notebooks
# peak below 1 GB, two at a time fit the 24 GB machine), processes=64 (threads included, a pids
# cgroup, else RLIMIT_NPROC: a kernel runs about 15), cpu=600 (seconds of CPU per process, as
# much as TIMEOUT: threads cannot multiply it), disk=500M (the sandbox's writable folders, one
# tmpfs). What crosses a limit is stopped and named in grades.csv's reason ("stopped: memory
# limit 2 GB ..."); the other submissions are graded as usual.
# e.g. make grade ... LIMITS="memory=2G,processes=64,cpu=600,disk=500M" (any of them).
LIMITS       ?=
ASSIGNMENT   ?=
SUBMISSIONS  ?=
VARIANT      ?=
GRADED_FROM   = $(if $(VARIANT),_build/variants/$(VARIANT)/$(ASSIGNMENT),_build/assignments/$(ASSIGNMENT))
GRADES       ?= $(if $(VARIANT),_build/variants/$(VARIANT)/grades/$(ASSIGNMENT),_build/grades/$(ASSIGNMENT))
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
TIMEOUT      ?= 600
TEST_TIMEOUT ?= 60
CELL_TIMEOUT ?= 120
.PHONY: grade
grade: $(if $(MANUAL),grade-manual,grade-sealed)
.PHONY: grade-manual grade-sealed
grade-manual: $(STAMP)
	$(BIN)/python grading/manual.py "$(GRADES)" $(MANUAL)
grade-sealed: $(STAMP)
	@test -f "assignments/$(ASSIGNMENT)/$(ASSIGNMENT).ipynb" && test -d "$(SUBMISSIONS)" || \
	  { echo "usage: make grade ASSIGNMENT=<name of a folder of assignments/> SUBMISSIONS=<folder of .ipynb>" >&2; exit 2; }
	@$(if $(VARIANT),test -f $(GRADED_FROM)/.assigned || $(BIN)/python grading/variant.py --seed "$(VARIANT)" --only $(ASSIGNMENT),$(MAKE) --no-print-directory _build/assignments/$(ASSIGNMENT)/.assigned)
	$(BIN)/python grading/grade.py $$(ls -t $(GRADED_FROM)/autograder/$(ASSIGNMENT)-autograder_*.zip | head -n 1) \
	  "$(SUBMISSIONS)" --output "$(GRADES)" --jobs $(JOBS) --timeout $(TIMEOUT) \
	  --test-timeout $(TEST_TIMEOUT) --cell-timeout $(CELL_TIMEOUT) --limits "$(LIMITS)" \
	  --given $(GRADED_FROM)/student/$(ASSIGNMENT).ipynb

# Private variants of the assignments (grading/variant.py): for every assignments/<a>/ with a
# variant.py, a variant master drawn from SEED (keep it secret: it names the folder) and its
# student notebook and autograder, in _build/variants/<SEED>/<a>/{master,student,autograder}/,
# as `make assignments` writes the public ones (otter assign runs the variant's tests on its
# solutions). The same SEED gives the same variants. Grade with `make grade ... VARIANT=<SEED>`.
# Usage: make variant SEED=<secret>
SEED ?=
.PHONY: variant
variant: $(STAMP)
	@test -n "$(SEED)" || { echo "usage: make variant SEED=<secret> (letters, digits, - and _)" >&2; exit 2; }
	$(BIN)/python grading/variant.py --seed "$(SEED)"
