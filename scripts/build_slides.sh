#!/usr/bin/env bash
# Render every chapter as a reveal.js slide deck, fully offline.
#
#   scripts/build_slides.sh [PATH_OUTPUT]
#
# Decks land in PATH_OUTPUT/_build/slides/<chapter>.slides.html (default: the
# repository root, like scripts/build_book.sh), with reveal.js, require.js,
# the widget manager and MathJax copied next to them: no request to another host.
# The Chinese edition's decks (book/zh/) land in PATH_OUTPUT/_build/slides/zh/.
#
# Which cells become slides is chosen per chapter in the notebooks' cell
# metadata (`slideshow.slide_type`, see docs/authoring.md); JupyterLab shows the
# same slides live with RISE (jupyterlab-rise). On top of that choice, the deck
# leaves the solutions out, starts a slide at every `##` section and draws MyST
# admonitions as boxes (scripts/slides_prep.py, run by nbconvert), and cuts a slide
# taller than the screen into continuation slides (scripts/slides_template/fit_slides.js).
#
# Executed notebooks come from the book build when it is newer than the chapter
# (PATH_OUTPUT/_build/jupyter_execute/ and, for book/zh/, _build/zh/_build/jupyter_execute/,
# written by scripts/build_book.sh), so
# `make book && make slides` runs every notebook once. A chapter without a fresh
# executed copy is executed here (nbconvert --execute).
#
# Environment:
#   SLIDES_CHAPTERS  space-separated chapter names to render (default: all; in both
#                    editions, for those translated)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${1:-$ROOT}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
SLIDES="$OUT/_build/slides"
EXECUTED="$OUT/_build/jupyter_execute"

if [[ -x "$ROOT/.venv/bin/jupyter" ]]; then
    JUPYTER="$ROOT/.venv/bin/jupyter"
else
    JUPYTER="$(command -v jupyter)" || { echo "build_slides.sh: jupyter not found; run 'make venv'" >&2; exit 1; }
fi
export PATH="$(dirname "$JUPYTER"):$PATH"
# nbconvert imports the template's preprocessor, scripts.slides_prep, from here.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

# --- 1. browser assets from the npm registry (shared with build_book.sh) ----
source "$ROOT/scripts/browser_assets.sh"
ensure_npm_assets

echo "==> copying reveal.js, require.js, the widget manager and MathJax into $SLIDES/"
mkdir -p "$SLIDES/reveal.js" "$SLIDES/assets/html-manager"
cp -rf "$NM/reveal.js/dist" "$NM/reveal.js/plugin" "$SLIDES/reveal.js/"
cp -f "$NM/requirejs/require.js" "$SLIDES/assets/require.js"
cp -rf "$NM/@jupyter-widgets/html-manager/dist/." "$SLIDES/assets/html-manager/"
# The book's widget glue (see build_book.sh), with the fonts where it looks for them.
cp -f "$ROOT/scripts/widgets-require-config.js" "$SLIDES/assets/"
cp -f "$ROOT/scripts/slides_template/fit_slides.js" "$SLIDES/assets/"
copy_widget_fonts "$SLIDES/_static"
copy_mathjax "$SLIDES/assets/mathjax"
# Chapter 26's drawing pad loads its script, ONNX Runtime Web and the model from the
# book's _static: give the decks the same files.
for item in digits_demo.js onnxruntime models; do
    if [[ -e "$OUT/_build/html/_static/$item" ]]; then
        cp -rf "$OUT/_build/html/_static/$item" "$SLIDES/_static/"
    fi
done

# --- 2. one deck per chapter ------------------------------------------------
# make_decks SOURCE_DIR EXECUTED_DIR DECK_DIR UP: one deck per SOURCE_DIR/[0-9]*.ipynb into
# DECK_DIR, reusing EXECUTED_DIR's executed copies; UP is the way from DECK_DIR back to
# $SLIDES, where the shared assets are ("" or "../").
make_decks() {
    local source_dir="$1" executed="$2" decks="$3" up="$4" nb name source
    local chapters=()
    shopt -s nullglob
    chapters=("$source_dir"/[0-9]*.ipynb)
    shopt -u nullglob
    if [[ -n "${SLIDES_CHAPTERS:-}" ]]; then
        chapters=()
        for name in $SLIDES_CHAPTERS; do
            [[ -f "$source_dir/$name.ipynb" ]] && chapters+=("$source_dir/$name.ipynb")
        done
    fi
    mkdir -p "$decks"
    for nb in "${chapters[@]}"; do
        name="$(basename "$nb" .ipynb)"
        source="$executed/$name.ipynb"
        execute=()
        if [[ ! -f "$source" || "$source" -ot "$nb" ]]; then
            source="$nb"
            execute=(--execute --ExecutePreprocessor.timeout=600)
            echo "==> $source_dir/$name: executing (no executed copy newer than the chapter)"
        fi
        # Executed in its folder (as the book build does); the deck is named after the chapter.
        "$JUPYTER" nbconvert "$source" --to slides "${execute[@]}" \
            --TemplateExporter.extra_template_basedirs="$ROOT/scripts/slides_template" \
            --template straightdope_reveal \
            --SlidesExporter.reveal_url_prefix="${up}reveal.js" \
            --SlidesExporter.reveal_theme=white \
            --HTMLExporter.require_js_url="${up}assets/require.js" \
            --HTMLExporter.mathjax_url="${up}assets/mathjax/tex-chtml.js" \
            --HTMLExporter.widget_renderer_url="${up}assets/html-manager/embed-amd.js" \
            --ExecutePreprocessor.kernel_name=python3 \
            --output-dir "$decks" --output "$name" --log-level=WARN
        [[ -f "$decks/$name.slides.html" ]] || { echo "build_slides.sh: no deck for $name" >&2; exit 1; }
    done
    echo "==> ${#chapters[@]} decks: $decks/<chapter>.slides.html"
}

start=$SECONDS
make_decks book "$EXECUTED" "$SLIDES" ""
# The Chinese edition (book/zh/): decks in zh/, sharing the assets one folder up; its
# executed notebooks come from the Chinese book build (build_book.sh), its widgets and
# figures speak Chinese (widgets/messages.py, book/zh/matplotlibrc).
mkdir -p "$SLIDES/zh"
ln -sfn ../_static "$SLIDES/zh/_static"
STRAIGHTDOPE_LANG=zh make_decks book/zh "$OUT/_build/zh/_build/jupyter_execute" "$SLIDES/zh" "../"
echo "==> slides built in $((SECONDS - start)) s"
