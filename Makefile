# Two commands do all set-up: `make book` and `make test`. Both create .venv if it is
# missing and install the exact pins of requirements.txt plus this package (editable).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
PORT   ?= 8000

UNIT_TESTS := $(BIN)/python -m pytest tests --ignore=tests/browser
NBVAL      := $(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with book/nbval_sanitize.cfg
# The notebooks whose outputs come from torch: `make portability` re-runs them under every CPU
# kernel family (tests/test_portability.py checks that no notebook using torch is missing).
TORCH_NOTEBOOKS := book/04a_rope_in_production.ipynb book/05b_context_extension_experiment.ipynb \
	book/appendix_errata.ipynb book/appendix_performance.ipynb \
	book/appendix_checks.ipynb book/05e_beyond_stretching.ipynb book/05f_real_text.ipynb

# Kernels started by nbval and the book build inherit these: fixed hashing and threads
# keep every stored output reproducible.
export PYTHONHASHSEED := 0
export OMP_NUM_THREADS := 1
export MPLBACKEND := module://matplotlib_inline.backend_inline

.PHONY: book test lint unit nbval portability strict-build strict-build-en strict-build-zh browser screenshots serve notebooks bench clean catalogues requirements

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (posenc)" >/dev/null
	$(BIN)/python book/_ext/offline_vega.py >/dev/null
	@touch $(STAMP)

# The Chinese edition (issue 16): the same notebooks' stored outputs, prose from the gettext
# catalogues in locales/zh_CN, written to _build/html/zh. conf.py mirrors _config.yml
# (jupyter-book config sphinx .; a test checks it is current).
ZH_BUILD := POSENC_RENDER_STORED=1 $(BIN)/python -m sphinx -b html -q -E -D nb_execution_mode=off \
	-D language=zh_CN -D locale_dirs=locales -D gettext_compact=0 -d _build/.doctrees-zh

book: $(STAMP)
	$(BIN)/jupyter-book build . --all
	$(ZH_BUILD) . _build/html/zh
	@echo "Open _build/html/index.html"

# The parts in order; the unit tests and nbval run side by side (two processes, one per core).
# unit and nbval have just run in torch's own kernel family with 1 thread: portability skips that one.
test: $(STAMP)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory -j2 --output-sync=target unit nbval
	@$(MAKE) --no-print-directory portability PORTABILITY_COVERED=--skip-covered
	@$(MAKE) --no-print-directory strict-build
	@$(MAKE) --no-print-directory browser

# One formatter and linter for the library, tests, scripts and notebooks (pyproject.toml: ruff, 88 columns),
# and import-linter's contracts: imports point down (pyproject.toml, [tool.importlinter]).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

unit: $(STAMP)
	$(UNIT_TESTS)

nbval: $(STAMP)
	$(NBVAL) book

# torch picks CPU kernels per processor (AVX-512, AVX2, plain C++, Arm SVE), and the thread count
# changes how sums are split: every stored number must hold in each. Re-runs the unit tests marked
# `torch` and nbval over TORCH_NOTEBOOKS with ATEN_CPU_CAPABILITY = each family this processor has
# (printed; the others are skipped) and 1 and 2 threads. PORTABILITY_ARGS="--skip PATH" leaves a
# test file or notebook out, visibly.
portability: $(STAMP)
	$(BIN)/python scripts/portability.py $(PORTABILITY_COVERED) $(PORTABILITY_ARGS) \
		--unit "$(UNIT_TESTS) -m 'torch and not kernel_independent'" --nbval "$(NBVAL) $(TORCH_NOTEBOOKS)"

# Renders the stored outputs that nbval has just compared with a fresh run (book/_ext/stored_outputs.py),
# so `make test` executes each notebook once; `make book` executes them all.
# The two editions build side by side (one core each): separate doctrees, and the Chinese
# pages go to _build/html/zh, which the English build neither reads nor clears.
strict-build: $(STAMP)
	@$(MAKE) --no-print-directory -j2 --output-sync=target strict-build-en strict-build-zh

strict-build-en: $(STAMP)
	POSENC_RENDER_STORED=1 $(BIN)/jupyter-book build . --all -W -n --keep-going

strict-build-zh: $(STAMP)
	$(ZH_BUILD) -W -n --keep-going . _build/html/zh

# Re-extract the English messages and update the Chinese catalogues (new or changed English
# prose becomes an untranslated or fuzzy entry, which tests/test_translation.py refuses).
catalogues: $(STAMP)
	POSENC_RENDER_STORED=1 $(BIN)/python -m sphinx -b gettext -q -D nb_execution_mode=off \
		-D gettext_compact=0 . _build/gettext
	$(BIN)/sphinx-intl update -p _build/gettext -l zh_CN -d locales

# Opens every built page in headless Chromium (Debian's /usr/bin/chromium, never a
# downloaded browser); skips with a message when Chromium is missing.
browser: $(STAMP)
	$(BIN)/python -m pytest tests/browser -n 2

# The same browser test, saving what a reader sees: a full page at 1280 x 900 per page in
# _build/screenshots/ and its first three phone screens in _build/screenshots/phone/.
screenshots: $(STAMP)
	POSENC_SCREENSHOTS=1 $(BIN)/python -m pytest tests/browser -n 2

serve: book
	$(BIN)/python -m http.server --bind 127.0.0.1 --directory _build/html $(PORT)

notebooks: $(STAMP)
	@for nb in $(NOTEBOOKS); do \
		echo "executing $$nb"; \
		$(BIN)/jupyter-execute --inplace --timeout=600 --kernel_name=python3 "$$nb" || exit 1; \
	done
	$(BIN)/nbstripout --keep-output --keep-count --keep-id $(NOTEBOOKS)

# Times RoPE implementations side by side and prints ratios (a minute or two; never run by the tests).
# Rewrites benchmarks/rope_results.json, the run the performance appendix quotes: re-execute
# book/appendix_performance.ipynb afterwards, whose assertions check that its text still fits the run.
bench: $(STAMP)
	$(BIN)/python benchmarks/rope.py --output benchmarks/rope_results.json

# requirements.txt from requirements.in: pip-compile (pip-tools, pinned, in its own environment
# under _build/) keeps the pins already in requirements.txt unless requirements.in needs others;
# torch's pin is then written without its "+cpu" label (requirements.in says why).
PIP_TOOLS := pip-tools==7.6.2
requirements:
	@test -x _build/pip-tools/bin/pip-compile || { $(PYTHON) -m venv _build/pip-tools && \
		_build/pip-tools/bin/python -m pip install --quiet $(PIP_TOOLS); }
	CUSTOM_COMPILE_COMMAND="make requirements" _build/pip-tools/bin/pip-compile --quiet \
		--allow-unsafe --strip-extras --no-emit-find-links --no-emit-index-url \
		--output-file requirements.txt requirements.in
	_build/pip-tools/bin/python -c "import pathlib, re; p = pathlib.Path('requirements.txt'); \
		p.write_text(re.sub(r'(?m)^torch==(.+)\+cpu$$', r'torch==\1', p.read_text()))"

clean:
	rm -rf _build .pytest_cache .hypothesis
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
