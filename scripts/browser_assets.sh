# The browser assets of the book and of the slides, from the npm registry.
# Sourced (not run) by scripts/build_book.sh and scripts/build_slides.sh, after
# they set ROOT; it defines NM and three functions, and runs nothing itself.
#
# One npm install into build/npm/ serves both scripts, so the list of packages
# lives here once: if you add a package, add the file that proves it is there.

NPM_DIR="$ROOT/build/npm"
NM="$NPM_DIR/node_modules"
NPM_PACKAGES=('@jupyter-widgets/html-manager@^1' 'requirejs@^2' 'mathjax@^3'
              'onnxruntime-web@~1.31' 'reveal.js@^5')
NPM_PROOF_FILES=(@jupyter-widgets/html-manager/dist/embed-amd.js requirejs/require.js
                 mathjax/es5/tex-chtml.js onnxruntime-web/dist/ort.wasm.min.js
                 reveal.js/dist/reveal.js)

# npm install the packages once (an existing build/npm/ with every file is reused).
ensure_npm_assets() {
    local file
    for file in "${NPM_PROOF_FILES[@]}"; do
        [[ -f "$NM/$file" ]] && continue
        if ! command -v npm >/dev/null 2>&1; then
            echo "$(basename "$0"): npm is missing (Debian: apt-get install -y npm)" >&2
            exit 1
        fi
        echo "==> npm install (once) into build/npm/"
        mkdir -p "$NPM_DIR"
        [[ -f "$NPM_DIR/package.json" ]] \
            || echo '{"name": "straightdope-book-assets", "private": true}' >"$NPM_DIR/package.json"
        npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error "${NPM_PACKAGES[@]}"
        return
    done
}

# copy_widget_fonts STATIC: the widget manager fetches its icon fonts relative to
# the URL of its AMD module, which scripts/widgets-require-config.js maps to
# STATIC/jupyter-widgets/html-manager/dist/; widgets whose CSS was bundled (the
# icon font of Button, ...) ask for them at STATIC/jupyter-widgets/ itself.
copy_widget_fonts() {
    local fonts="$1/jupyter-widgets/html-manager/dist"
    mkdir -p "$fonts"
    find "$NM/@jupyter-widgets/html-manager/dist" -maxdepth 1 -type f \
        \( -name '*.woff2' -o -name '*.woff' -o -name '*.ttf' -o -name '*.eot' -o -name '*.svg' \) \
        -exec cp -f {} "$fonts/" \;
    cp -f "$fonts"/* "$1/jupyter-widgets/"
}

# copy_mathjax DEST: MathJax loads its fonts, its menu and (through autoload) TeX
# extensions relative to tex-chtml.js, so copy those parts of es5/ (4 MB of its
# 23 MB; no speech-rule-engine, which only loads when a reader turns speech on).
# An up-to-date copy is left alone.
copy_mathjax() {
    local dest="$1"
    if [[ -f "$dest/tex-chtml.js" ]] && cmp -s "$NM/mathjax/es5/tex-chtml.js" "$dest/tex-chtml.js"; then
        return
    fi
    rm -rf "$dest"
    mkdir -p "$dest"
    (cd "$NM/mathjax/es5" && tar cf - tex-chtml.js input a11y ui adaptors output/chtml.js output/chtml) \
        | (cd "$dest" && tar xf -)
}
