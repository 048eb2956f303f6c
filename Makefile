# The two commands of the README:   make book   and   make test
# Everything else is documented in the README too. Each target creates what it needs.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
VENDOR := _vendor/.vendored
export PYTHONPATH := $(CURDIR)
export PYDEVD_DISABLE_FILE_VALIDATION := 1
export PYTHONHASHSEED := 0
# One BLAS thread per process: on a shared 2-core machine OpenBLAS's default threading made small
# SVD/QR calls in the chapters 10x slower (measured: chapter 5 went from 80 s to 10 s).
export OPENBLAS_NUM_THREADS ?= 1
BOOK_FLAGS := -W -n --keep-going
# -p tools.private_kernels: nbval's kernels on ipc sockets in a private folder (no TCP port)
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with chapters/nbval_sanitize.cfg -p tools.private_kernels
# What nbval checked, per stored notebook (tools/nbval_record.py); make test's book stage reads it.
NBVAL_RECORD := _build/nbval/record.json
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: help venv vendor book book-after-nbval status test test-fast test-package test-notebooks test-nbval test-perturbed test-site lab serve \
        browser test-site-pages test-pdf \
        live screenshots linkcheck release pdf \
        notebooks clean

help:
	@echo "make book           build the HTML book from the stored, executed notebooks into _build/html (sets everything up; executes nothing)"
	@echo "make test           everything: lint, package tests, notebook checks, nbval (also with perturbed arithmetic), the -W book build, PDF, site tests"
	@echo "make test-fast      the edit loop: lint, package and notebook tests without those marked slow (a stale reliability figure only warns)"
	@echo "make test-package   lint and every package test (slow ones included)"
	@echo "make test-notebooks stored notebooks executed and in sync with their .md"
	@echo "make test-nbval     re-run every stored notebook and compare its outputs (nbval)"
	@echo "make test-perturbed the same with perturbed BLAS/LAPACK/libm rounding: outputs must not change"
	@echo "make book-after-nbval  make test's book stage: make book, refusing any notebook test-nbval did not verify"
	@echo "make test-site      website tests in headless Chromium (needs a built book and PDF)"
	@echo "make test-site-pages / test-pdf  the two halves of test-site: make test runs the first beside make pdf"
	@echo "make lab            JupyterLab on the chapters (sattn importable); PORT=, LAB_ARGS=--no-browser"
	@echo "make serve          serve _build/html on http://$(HOST):$(PORT)"
	@echo "make live           serve the book on $(HOST):$(PORT) with a private Jupyter server behind it: live figures recompute"
	@echo "make screenshots    light/dark screenshots of three pages into docs/screenshots/"
	@echo "make linkcheck      check every internal link and anchor of _build/html"
	@echo "make notebooks      re-execute every chapter into its stored .ipynb (the only target that executes chapters for the book)"
	@echo "make pdf            the whole book as one PDF: _build/pdf/sattn-book.pdf (one-page build printed by Chromium)"
	@echo "make status         re-measure the stale reliability figures of the status page into data/reliability/ (ALL=1: all; commit them)"
	@echo "make release        check, build, archive the site and tag v<version> (tools/release.py)"
	@echo "make venv / vendor  only create .venv / only vendor the website JavaScript"
	@echo "make clean          remove what the builds made (_build, _vendor)"

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

venv: $(STAMP)

$(VENDOR): tools/vendor_js.sh
	bash tools/vendor_js.sh
	touch $@

vendor: $(VENDOR)

book: $(STAMP) $(VENDOR)
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)
	@echo
	@echo "The book is in $(CURDIR)/_build/html: open _build/html/index.html, or run 'make serve'."

# -p no:nbval: the package tests do not use nbval's plugin, which loads nbformat's schema checker
# (about 1.3 s in each pytest process).
test-package: $(STAMP)
	$(BIN)/ruff check sattn tests tools
	$(BIN)/python -m pytest tests/package -q -n 2 -p no:nbval

# The edit loop (well under two minutes): what `make test` runs first, minus the tests marked slow.
test-fast: $(STAMP)
	@start=$$(date +%s); \
	$(BIN)/ruff check sattn tests tools; \
	BOOK_STALE_FIGURES=warn $(BIN)/python -m pytest tests/package tests/notebooks -q -n 2 -m "not slow" \
	    -p no:nbval; \
	$(BIN)/python tests/reliability.py check --warn; \
	echo "make test-fast: passed in $$(( $$(date +%s) - start )) s"

test-notebooks: $(STAMP)
	$(BIN)/python -m pytest tests/notebooks -q

# The chapters that take longest go first: the two workers take a notebook at a time in this order,
# so a long one started last would leave the other worker idle until it ends (a name that is not a
# stored notebook fails tests/notebooks/test_nbval_record.py).
NBVAL_FIRST := chapters/17_prediction.ipynb chapters/16_log_law.ipynb chapters/15_finite_precision.ipynb
NBVAL_NOTEBOOKS := $(NBVAL_FIRST) $(filter-out $(NBVAL_FIRST),$(sort $(wildcard chapters/*.ipynb)))
test-nbval: $(STAMP)
	$(BIN)/python -m pytest $(NBVAL) $(NBVAL_NOTEBOOKS) -q -p no:cacheprovider -n 2 --dist loadscope \
	  -p tools.nbval_record --nbval-record $(NBVAL_RECORD)

# Every chapter once more, as on a CPU whose BLAS, LAPACK and libm round otherwise
# (tests/perturbed_arithmetic.py): a printed output or verdict that the last bits decide fails here.
PERTURBED_IPYTHONDIR := _build/perturbed/ipython
test-perturbed: $(STAMP)
	rm -rf $(PERTURBED_IPYTHONDIR) && mkdir -p $(PERTURBED_IPYTHONDIR)/profile_default/startup
	cp tests/perturbed_startup.py $(PERTURBED_IPYTHONDIR)/profile_default/startup/00-perturbed.py
	BOOK_ROOT=$(CURDIR) IPYTHONDIR=$(CURDIR)/$(PERTURBED_IPYTHONDIR) BOOK_PERTURB_SEED=$${BOOK_PERTURB_SEED:-1} \
	  $(BIN)/python -m pytest $(NBVAL) $(NBVAL_NOTEBOOKS) -q -p no:cacheprovider -n 2 --dist loadscope

# make test's book stage: the same -W build as `make book` (from the stored notebooks, executing
# nothing), given nbval's record: the build stops unless every stored notebook it reads passed under
# test-nbval and is byte for byte the file nbval read (tools/stored_notebooks.py), and the status
# page shows nbval's run times.
book-after-nbval: $(STAMP) $(VENDOR)
	BOOK_NBVAL_RECORD=$(CURDIR)/$(NBVAL_RECORD) $(MAKE) --no-print-directory book

# Offline checks, internal links, and every page in headless Chromium (Debian's chromium; .ci/run
# is installed by tools/install_browser.sh when missing): console errors, outside requests, math,
# widgets, images, references, sliders, live.
test-site: $(STAMP)
	bash tools/install_browser.sh
	$(BIN)/python -m pytest tests/site -q -p no:cacheprovider

# make test splits test-site in two: every test but the PDF's runs while `make pdf` prints the book
# (the browser typesetting one long page keeps one core busy), then the PDF's tests.
browser:
	bash tools/install_browser.sh
test-site-pages: $(STAMP)
	bash tools/install_browser.sh
	$(BIN)/python -m pytest tests/site -q -p no:cacheprovider --ignore=tests/site/test_pdf.py
test-pdf: $(STAMP)
	$(BIN)/python -m pytest tests/site/test_pdf.py -q -p no:cacheprovider

linkcheck: $(STAMP)
	$(BIN)/python tools/linkcheck.py _build/html

LIVE_HTML ?= _build/html
# options of tools/serve_live.py, e.g. LIVE_ARGS='--max-kernels 2 --token-idle 1800'
LIVE_ARGS ?=
live: $(STAMP) $(VENDOR)
	@test -f $(LIVE_HTML)/index.html || $(MAKE) --no-print-directory book
	$(BIN)/python tools/serve_live.py --html $(LIVE_HTML) --port $(PORT) $(LIVE_ARGS)

screenshots: $(STAMP) $(VENDOR)
	@test -f _build/html/index.html || $(MAKE) --no-print-directory book
	bash tools/install_browser.sh
	$(BIN)/python tools/screenshots.py _build/html --out docs/screenshots

# Each stage is timed by tools/suite_times.py (the times are printed at the end and kept in
# _build/test_times.txt); `python tools/suite_times.py test-fast book` times any other targets.
# A stage `a+b` runs a and b at the same time (b at a lower priority; tools/suite_times.py).
STAGES := test-package test-notebooks test-nbval test-perturbed book-after-nbval browser \
          test-site-pages+pdf test-pdf
test: $(STAMP) $(VENDOR)
	$(BIN)/python tools/suite_times.py $(STAGES)

# The status page's reliability figures: the tests marked `reliability` write them into
# data/reliability/. Only the stale figures (measured on other code; tests/reliability.py) and marked
# tests without a figure are re-measured (ALL=1: every one); their new figures replace the old ones
# only when every test run passed. Commit the result; tests/package/test_status_figures.py fails
# under make test when a stored figure is stale for the code (make test-fast only warns).
status: $(STAMP) $(VENDOR)
	@tests=$$($(BIN)/python tests/reliability.py to-measure $(if $(ALL),--all)); \
	if [ -z "$$tests" ]; then echo "make status: every figure in data/reliability/ is fresh"; exit 0; fi; \
	echo "make status: measuring"; printf '  %s\n' $$tests; \
	test -f _build/html/index.html || $(MAKE) --no-print-directory book; \
	bash tools/install_browser.sh; \
	rm -rf data/reliability.new && mkdir -p data/reliability.new; \
	BOOK_RELIABILITY_DIR=$(CURDIR)/data/reliability.new $(BIN)/python -m pytest $$tests -m reliability \
	  -q -p no:cacheprovider || { rm -rf data/reliability.new; \
	  echo "make status: a test failed; data/reliability/ is left as it was"; exit 1; }; \
	mv data/reliability.new/*.json data/reliability/ && rmdir data/reliability.new; \
	$(BIN)/python tests/reliability.py check; \
	echo "make status: $$(ls data/reliability | wc -l) figures in data/reliability/; commit them"

notebooks: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py --all

# PORT= (when given; JupyterLab's own default 8888 otherwise) and LAB_ARGS= (e.g. --no-browser).
# `python -m sattn lab` (sattn/presentation/lab.py; the kit runs the same) binds 127.0.0.1, adds
# --allow-root as root, and sets the save hook that keeps the stored notebooks portable.
LAB_ARGS ?=
lab: $(STAMP)
	$(BIN)/python -m sattn lab chapters \
	  $(if $(filter command line environment,$(origin PORT)),--port=$(PORT)) $(LAB_ARGS)

serve:
	@test -f _build/html/index.html || { echo "no built book: run 'make book' first"; exit 1; }
	@echo "Serving the book on http://$(HOST):$(PORT)/ (Ctrl-C stops)"
	$(PYTHON) -m http.server $(PORT) --bind $(HOST) --directory _build/html

# The whole book as one PDF: Sphinx's one-page build (singlehtml; same numbering, references and
# bibliography as the site), printed by the test browser with the print styles of book.css
# (tools/make_pdf.py). Measured against LaTeX (pdflatex/xelatex) in README, "The book as a PDF".
PDF := _build/pdf/sattn-book.pdf
pdf: $(STAMP) $(VENDOR)
	$(BIN)/jupyter-book build . --builder singlehtml $(BOOK_FLAGS)
	bash tools/install_browser.sh
	$(BIN)/python tools/make_pdf.py --html _build/singlehtml --out $(PDF)

# Tag v<version> (pyproject.toml) and archive the built site: tools/release.py says what it checks.
release: $(STAMP) $(VENDOR)
	$(MAKE) --no-print-directory book
	$(MAKE) --no-print-directory pdf
	cp $(PDF) _build/html/sattn-book.pdf
	$(BIN)/python tools/release.py

clean:
	rm -rf _build _vendor
