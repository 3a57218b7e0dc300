#!/usr/bin/env bash
# Put the JavaScript the pages need into book/vendor, from npm, so the built
# book loads nothing from a CDN:
# - the ipywidgets HTML manager (embed.js and its fonts); html-manager 1.x
#   reads the widget state ipywidgets 8 saves;
# - MathJax 3: the HTML-CSS build (tex-chtml.js, 1.2 MB against the full SVG
#   build's 2.3 MB), with its web fonts, which a page fetches only for the
#   styles its equations use, and the TeX extensions it loads on demand, all
#   under book/vendor/mathjax as MathJax's own folder has them;
# - for the workshop: thebe (live code in the pages) and require.js, which
#   thebe would otherwise fetch from a CDN, into book/live/thebe (copied to
#   the site's thebe/ folder, outside _static, so pages load them only when a
#   reader asks for live code); reveal.js for the slides, into
#   book/vendor-slides/reveal.js.
# The versions live in book/js/package.json (exact versions) and every
# package npm pulls in is pinned by book/js/package-lock.json; this runs
# `npm ci` from them into build/npm. book/vendor/VERSIONS records the lock
# file's sha256, so a changed lock fetches again and an unchanged one does
# nothing (offline too). To change a version: edit book/js/package.json, run
# `npm install --package-lock-only` in book/js, commit both files.
set -euo pipefail
cd "$(dirname "$0")/.."
js=book/js
dest=book/vendor
lock_sha=$(sha256sum "$js/package-lock.json" | cut -d' ' -f1)
versions=$(node -e '
  const d = require("./'"$js"'/package.json").dependencies;
  console.log(Object.keys(d).map(k => k.replace(/^@jupyter-widgets\//, "") + " " + d[k]).join(", "));
' 2>/dev/null || echo "see $js/package.json")
stamp="$versions; $js/package-lock.json sha256 $lock_sha; mathjax tex-chtml"
if [ -f "$dest/embed.js" ] && [ -f "$dest/mathjax/tex-chtml.js" ] && [ -f book/live/thebe/index.js ] \
   && [ -f book/vendor-slides/reveal.js/dist/reveal.js ] && [ -f book/vendor-slides/mathjax/tex-svg-full.js ] && [ "$(cat "$dest/VERSIONS" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "npm is needed to fetch the book's JavaScript (apt-get install npm)" >&2; exit 1; }
npm_dir=build/npm
rm -rf "$npm_dir"
rm -rf "$dest/mathjax"
mkdir -p "$npm_dir" "$dest/mathjax/output/chtml/fonts" "$dest/mathjax/input/tex"
cp "$js/package.json" "$js/package-lock.json" "$npm_dir/"
# --ignore-scripts: only files are copied out of these packages, nothing is built
npm ci --silent --no-audit --no-fund --ignore-scripts --prefix "$npm_dir" >/dev/null
mods=$npm_dir/node_modules
dist=$mods/@jupyter-widgets/html-manager/dist
cp "$dist/embed.js" "$dest/"
for f in "$dist"/*.woff "$dist"/*.woff2 "$dist"/*.ttf "$dist"/*.eot "$dist"/*.svg; do cp "$f" "$dest/"; done
mj=$mods/mathjax/es5
cp "$mj/tex-chtml.js" "$dest/mathjax/"
cp -r "$mj/output/chtml/fonts/woff-v2" "$dest/mathjax/output/chtml/fonts/"
cp -r "$mj/input/tex/extensions" "$dest/mathjax/input/tex/"
rm -rf book/live/thebe book/vendor-slides/reveal.js book/vendor-slides/mathjax
mkdir -p book/live/thebe book/vendor-slides/reveal.js
# thebe's bundle and its chunks (not the source maps: they are 4x the size)
find "$mods/thebe/lib" -maxdepth 1 -type f ! -name '*.map' -exec cp {} book/live/thebe/ \;
cp "$mods/requirejs/require.js" book/live/thebe/
cp -r "$mods/reveal.js/dist" "$mods/reveal.js/plugin" book/vendor-slides/reveal.js/
# the slides open from file://, where a browser refuses web fonts: they keep MathJax's
# single-file SVG build (every glyph and TeX extension inside, no further file)
mkdir -p book/vendor-slides/mathjax
cp "$mj/tex-svg-full.js" book/vendor-slides/mathjax/
echo "$stamp" > "$dest/VERSIONS"
echo "fetched $versions into $dest, book/live/thebe, book/vendor-slides/reveal.js"
