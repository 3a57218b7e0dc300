#!/usr/bin/env bash
# Put the JavaScript the pages need into book/vendor, from npm, so the built
# book loads nothing from a CDN:
# - the ipywidgets HTML manager (embed.js and its fonts); html-manager 1.x
#   reads the widget state ipywidgets 8 saves;
# - MathJax 3 (the single-file SVG build with every TeX extension inside, so
#   it never loads more files at run time);
# - for the workshop: thebe (live code in the pages) and require.js, which
#   thebe would otherwise fetch from a CDN, into book/live/thebe (copied to
#   the site's thebe/ folder, outside _static, so pages load them only when a
#   reader asks for live code); reveal.js for the slides, into
#   book/vendor-slides/reveal.js.
set -euo pipefail
cd "$(dirname "$0")/.."
WIDGETS=1.0.15
MATHJAX=3.2.2
THEBE=0.9.3
REQUIREJS=2.3.8
REVEAL=4.6.0
dest=book/vendor
stamp="html-manager $WIDGETS, mathjax $MATHJAX, thebe $THEBE, requirejs $REQUIREJS, reveal.js $REVEAL"
if [ -f "$dest/embed.js" ] && [ -f "$dest/mathjax/tex-svg-full.js" ] && [ -f book/live/thebe/index.js ] && [ "$(cat "$dest/VERSIONS" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm is needed to fetch the book's JavaScript (apt-get install npm)" >&2; exit 1; }
mkdir -p build/npm "$dest/mathjax"
npm install --silent --no-audit --no-fund --prefix build/npm \
  "@jupyter-widgets/html-manager@$WIDGETS" "mathjax@$MATHJAX" \
  "thebe@$THEBE" "requirejs@$REQUIREJS" "reveal.js@$REVEAL" >/dev/null
dist=build/npm/node_modules/@jupyter-widgets/html-manager/dist
cp "$dist/embed.js" "$dest/"
for f in "$dist"/*.woff "$dist"/*.woff2 "$dist"/*.ttf "$dist"/*.eot "$dist"/*.svg; do cp "$f" "$dest/"; done
cp build/npm/node_modules/mathjax/es5/tex-svg-full.js "$dest/mathjax/"
rm -rf book/live/thebe book/vendor-slides/reveal.js
mkdir -p book/live/thebe book/vendor-slides/reveal.js
# thebe's bundle and its chunks (not the source maps: they are 4x the size)
find build/npm/node_modules/thebe/lib -maxdepth 1 -type f ! -name '*.map' -exec cp {} book/live/thebe/ \;
cp build/npm/node_modules/requirejs/require.js book/live/thebe/
cp -r build/npm/node_modules/reveal.js/dist build/npm/node_modules/reveal.js/plugin book/vendor-slides/reveal.js/
echo "$stamp" > "$dest/VERSIONS"
echo "fetched $stamp into $dest"
