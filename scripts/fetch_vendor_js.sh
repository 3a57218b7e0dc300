#!/usr/bin/env bash
# Put the JavaScript the pages need into book/vendor, from npm, so the built
# book loads nothing from a CDN:
# - the ipywidgets HTML manager (embed.js and its fonts); html-manager 1.x
#   reads the widget state ipywidgets 8 saves;
# - MathJax 3 (the single-file SVG build with every TeX extension inside, so
#   it never loads more files at run time).
set -euo pipefail
cd "$(dirname "$0")/.."
WIDGETS=1.0.15
MATHJAX=3.2.2
dest=book/vendor
stamp="html-manager $WIDGETS, mathjax $MATHJAX"
if [ -f "$dest/embed.js" ] && [ -f "$dest/mathjax/tex-svg-full.js" ] && [ "$(cat "$dest/VERSIONS" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm is needed to fetch the book's JavaScript (apt-get install npm)" >&2; exit 1; }
mkdir -p build/npm "$dest/mathjax"
npm install --silent --no-audit --no-fund --prefix build/npm \
  "@jupyter-widgets/html-manager@$WIDGETS" "mathjax@$MATHJAX" >/dev/null
dist=build/npm/node_modules/@jupyter-widgets/html-manager/dist
cp "$dist/embed.js" "$dest/"
for f in "$dist"/*.woff "$dist"/*.woff2 "$dist"/*.ttf "$dist"/*.eot "$dist"/*.svg; do cp "$f" "$dest/"; done
cp build/npm/node_modules/mathjax/es5/tex-svg-full.js "$dest/mathjax/"
echo "$stamp" > "$dest/VERSIONS"
echo "fetched $stamp into $dest"
