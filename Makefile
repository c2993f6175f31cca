# Two commands on a Debian machine with Python 3.11 and make:
#   make book    build the HTML book (runs every notebook)
#   make test    the fast tests (library, compiler, widgets; the tests not marked slow)
# Both create .venv and, as root, apt-install the system packages they need.
# make test-slow runs the rest (book build and notebooks, real browser, classroom);
# CI (.ci/run) runs make test, make test-slow and make test-threaded.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# JupyterLab settings shipped with the project (no "official Jupyter news?" question):
# JupyterLab reads overrides.json from <prefix>/share/jupyter/lab/settings/.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
# straightdope's Numba kernels compiled for this machine (python -m straightdope.warmup):
# about a minute once, then a second or two; run again when the compiler changes.
KERNELS := $(VENV)/.kernels
# matplotlib knows the CJK font (its font cache may predate `make sysdeps`'s install).
CJK_FONTS := $(VENV)/.cjk-fonts

# Extra arguments for pytest, e.g.  make test PYTEST_ARGS='-k environment -x'
PYTEST_ARGS ?=

# Debian packages: command -> package
SYSDEPS := dot:graphviz chromium:chromium npm:npm fc-list:fontconfig
# Debian font packages: language (a font for it is listed by `fc-list :lang=LANG`) -> package.
# The Chinese edition needs a CJK font in the browser, in matplotlib and in Graphviz.
SYSFONTS := zh:fonts-noto-cjk

.PHONY: help venv sysdeps book slides test test-slow test-threaded lab classroom demo zh-status assignments clean distclean

help:
	@echo "make book       build the book into _build/html/ (creates .venv, installs system packages)"
	@echo "make slides     one reveal.js deck per chapter into _build/slides/ (after make book: reuses its runs)"
	@echo "make test       the fast tests: all not marked slow (library, compiler, widgets,"
	@echo "                notebooks' static checks; 11-15 min here; same setup)"
	@echo "make test-slow  the slow-marked tests: book build, every notebook run, real-browser"
	@echo "                checks, classroom, fresh-process compiles (about 30-35 min)"
	@echo "make test-threaded  the library's tests with MXNET_ENGINE_TYPE=ThreadedEngine"
	@echo "make lab        open the notebooks in JupyterLab"
	@echo "make assignments  nbgrader release of one chapter per part into _build/assignments/"
	@echo "make classroom  JupyterHub on http://127.0.0.1:8000 for STUDENTS=2 (student1.., teacher;"
	@echo "                password: classroom), one compile cache for the class (docs/classroom.md)"
	@echo "make demo       run python -m straightdope.demo"
	@echo "make venv       create .venv, pip install -e '.[book,test]' (only when pyproject.toml changed),"
	@echo "                compile the library's kernels for this machine (python -m straightdope.warmup)"
	@echo "make zh-status  Chinese chapters behind their English source, and those not translated"
	@echo "make sysdeps    apt-get install graphviz, chromium, npm and a CJK font if missing (root only)"
	@echo "make clean      remove build outputs (keeps .venv);  make distclean: also .venv"

venv: $(STAMP) $(LAB_OVERRIDES) $(KERNELS)

$(VPY):
	@test -n "$(PYTHON)" || { echo "make venv: no python3.11 or python3 on PATH" >&2; exit 1; }
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 needed, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)

# Reinstall only when pyproject.toml changed. editable_mode=compat puts the
# repository root on sys.path (a .pth file) instead of a snapshot of the
# packages that existed at install time, so packages and subpackages created
# later (widgets/, straightdope/...) import without reinstalling.
$(STAMP): pyproject.toml | $(VPY)
	@start=$$(date +%s); \
	$(VPY) -m pip install --config-settings editable_mode=compat -e '.[book,test]' && \
	echo "==> pip install took $$(( $$(date +%s) - start )) s"
	@touch $@

$(LAB_OVERRIDES): jupyter/lab/settings/overrides.json | $(VPY)
	install -D -m 644 $< $@

# Compile the kernels once here rather than inside the first hybridized calls of a
# notebook, test or book build (10-20 s there). Cheap when they are compiled already;
# a failure (e.g. a read-only cache dir) is reported but stops nothing: the first calls
# then compile what they need, as without this step.
$(KERNELS): $(STAMP) $(wildcard straightdope/compiler/*.py straightdope/compiler/kernels/*.py)
	@$(VPY) -m straightdope.warmup && touch $@ || \
	    echo "==> make venv: the kernel warm-up did not finish (see above); continuing" >&2

sysdeps:
	@missing=""; \
	for pair in $(SYSDEPS); do \
	    cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	    command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	for pair in $(SYSFONTS); do \
	    lang=$${pair%%:*}; pkg=$${pair##*:}; \
	    [ -n "$$(fc-list :lang=$$lang 2>/dev/null)" ] || missing="$$missing $$pkg"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	    echo "==> apt-get install -y$$missing"; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else \
	    echo "Missing system packages:$$missing" >&2; \
	    echo "Install them once with:  sudo apt-get install -y$$missing" >&2; \
	    echo "(graphviz provides 'dot' for graph drawings, chromium the browser for the tests," >&2; \
	    echo " npm fetches require.js, the widget manager and MathJax so the book works offline," >&2; \
	    echo " fonts-noto-cjk draws the Chinese edition's text in pages, figures and graphs)" >&2; \
	    exit 1; \
	fi

# Tell matplotlib's font cache about the CJK font once it is installed (the Chinese
# edition's figures); the stamp is made only when one was found.
$(CJK_FONTS): widgets/messages.py | $(STAMP)
	@out="$$($(VPY) -m widgets.messages)"; echo "==> $$out"; \
	case "$$out" in *Noto*) touch $@;; esac

book: venv sysdeps $(CJK_FONTS)
	bash scripts/build_book.sh

slides: venv sysdeps $(CJK_FONTS)
	@start=$$(date +%s); bash scripts/build_slides.sh && \
	echo "==> make slides took $$(( $$(date +%s) - start )) s"

# Two tiers (the `slow` marker; tests/conftest.py also marks every test that uses the
# browser or the book build slow): `make test` is what to run after a change and stays
# well under 20 minutes on a 2-core machine; `make test-slow` is everything else.
# CI runs both (.ci/run), so every test still runs there.
# Chromium is installed (sysdeps), so a browser test that cannot start it fails, not skips.
PYTEST := STRAIGHTDOPE_REQUIRE_BROWSER=1 $(VPY) -m pytest -q -ra --durations=15 --timeout=1800
test: venv sysdeps $(CJK_FONTS)
	$(PYTEST) -m "not slow" $(PYTEST_ARGS)

test-slow: venv sysdeps $(CJK_FONTS)
	$(PYTEST) -m slow $(PYTEST_ARGS)

# The library's tests again with MXNet's threaded engine selected (docs/engine.md). The
# book, its browser checks and the slow tests run their notebooks and programs in processes
# of their own, so they stay with `make test` and `make test-slow`.
THREADED_ARGS ?= -m "not slow and not browser" --ignore=tests/test_book_part12.py \
	--ignore=tests/test_book_part34.py --ignore=tests/test_book_html.py \
	--ignore=tests/test_book_slides.py --ignore=tests/test_book_jupyterlab.py \
	--ignore=tests/test_classroom.py --ignore=tests/test_assignments.py
test-threaded: venv sysdeps $(CJK_FONTS)
	MXNET_ENGINE_TYPE=ThreadedEngine $(VPY) -m pytest -q -ra -p no:cacheprovider \
		--durations=15 --timeout=1800 $(THREADED_ARGS) $(PYTEST_ARGS)

lab: venv
	$(VENV)/bin/jupyter lab book/ $(if $(filter 0,$(shell id -u)),--ServerApp.allow_root=True)

# A class on this machine: JupyterHub + configurable-http-proxy (installed on first use),
# the kernels compiled once into the class's shared cache (classroom/setup.sh), then the
# hub in the foreground until Ctrl-C (which stops every student's server too).
STUDENTS ?= 2
CLASSROOM_PORT ?= 8000
CLASSROOM_STATE ?= _build/classroom
classroom: venv
	PYTHON=$(VPY) bash classroom/setup.sh $(CLASSROOM_STATE)/shared-cache
	cd $(CLASSROOM_STATE) && PATH="$(abspath $(VENV))/bin:$$PATH" CLASSROOM_STUDENTS=$(STUDENTS) \
	    CLASSROOM_PORT=$(CLASSROOM_PORT) CLASSROOM_STATE=$(abspath $(CLASSROOM_STATE)) \
	    $(abspath $(VENV))/bin/jupyterhub -f $(abspath classroom/jupyterhub_config.py)

demo: venv
	$(VPY) -m straightdope.demo

# The exercises as nbgrader assignments (scripts/assignments.py): source/ and the
# student release/ of one chapter per part; grade with nbgrader autograde there.
assignments: venv
	$(VPY) scripts/assignments.py --out _build/assignments

zh-status:
	@$(or $(wildcard $(VPY)),$(PYTHON)) scripts/zh_status.py

clean:
	rm -rf _build build book/_build book/static_js artifacts .pytest_cache .hypothesis *.egg-info
	rm -f book/*.params book/*-symbol.json book/*.onnx book/zh/*.params book/zh/*-symbol.json book/zh/*.onnx
	rm -rf book/zh/static_js
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
