#!/usr/bin/env bash
# Vendors the website's JavaScript from the npm registry into _vendor/ (never a CDN at run time):
# require.js, the ipywidgets HTML manager (embed-amd.js and its fonts), MathJax 4 with its default
# font (MathJax 4 breaks long displays into lines on a narrow screen; MathJax 3 cannot), thebe, and
# tippy.js with @popperjs/core (hover previews of references, sphinx-tippy).
# Run from the book root; `make vendor` calls it. _vendor/ is generated, not committed.
set -euo pipefail
HM=1.0.15 RJS=2.3.8 MJ=4.1.3 MJFONT=4.1.3 THEBE=0.9.3 TIPPY=6.3.7 POPPER=2.11.8
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --loglevel=error "@jupyter-widgets/html-manager@$HM" "requirejs@$RJS" "mathjax@$MJ" "@mathjax/mathjax-newcm-font@$MJFONT" "thebe@$THEBE" \
  "tippy.js@$TIPPY" "@popperjs/core@$POPPER" >/dev/null)
for t in "$tmp"/*.tgz; do d="${t%.tgz}"; mkdir -p "$d"; tar xzf "$t" -C "$d"; done
rm -rf _vendor/widgets _vendor/mathjax _vendor/thebe _vendor/tippyjs
mkdir -p _vendor/widgets _vendor/mathjax/output _vendor/thebe _vendor/tippyjs
hm="$tmp/jupyter-widgets-html-manager-$HM/package/dist"
cp "$hm"/embed-amd.js "$hm"/*.woff2 "$hm"/*.woff "$hm"/*.ttf "$hm"/*.eot "$hm"/*.svg _vendor/widgets/
cp "$tmp/requirejs-$RJS/package/require.js" _vendor/widgets/
cat > _vendor/widgets/require-config.js <<'JS'
// embed-amd.js derives its asset path from its AMD module id; point that id at this folder so
// that the widget fonts load from the book itself.
(function () {
  var src = document.currentScript.src, base = src.substring(0, src.lastIndexOf("/"));
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": base } });
})();
JS
mj="$tmp/mathjax-$MJ/package"
cp "$mj/tex-mml-chtml.js" _vendor/mathjax/
cp -r "$mj/input" "$mj/a11y" "$mj/ui" "$mj/adaptors" "$mj/sre" _vendor/mathjax/
cp "$mj/output/chtml.js" _vendor/mathjax/output/
cp "$mj/LICENSE" _vendor/mathjax/LICENSE
# the font's glyph data and web fonts: _config.yml points MathJax's [fonts] path at this folder
# (its default is a CDN)
mf="$tmp/mathjax-mathjax-newcm-font-$MJFONT/package"
mkdir -p _vendor/mathjax/fonts/mathjax-newcm-font
cp -r "$mf/chtml" "$mf/chtml.js" "$mf/package.json" _vendor/mathjax/fonts/mathjax-newcm-font/
# thebe (live kernels for `make live`): its bundle fetches require.js from cdnjs; point that fetch at
# the copy above (book_static/book-live.js sets BOOK_REQUIREJS_URL), and fail if the pattern moved.
th="$tmp/thebe-$THEBE/package/lib"
cp "$th"/*.js "$th"/thebe.css _vendor/thebe/
cdn='"https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"'
grep -q "$cdn" _vendor/thebe/index.js || { echo "thebe $THEBE: require.js URL not found"; exit 1; }
sed -i "s|$cdn|(window.BOOK_REQUIREJS_URL\\|\\|\"require.js\")|" _vendor/thebe/index.js
# tippy.js + popper (UMD builds: they define window.tippy / window.Popper for sphinx-tippy's page
# scripts; tools/book_reader.py points tippy_js at these instead of unpkg.com).
# Pages with widgets load require.js first; a UMD bundle then registers itself as an anonymous AMD
# module ("Mismatched anonymous define()") instead of setting window.tippy. Each bundle is wrapped
# so that it sees no `define` and always takes its browser-global branch.
for f in "$tmp/popperjs-core-$POPPER/package/dist/umd/popper.min.js" \
         "$tmp/tippy.js-$TIPPY/package/dist/tippy-bundle.umd.min.js"; do
  { echo "(function (define) {"; sed '/^\/\/# sourceMappingURL=/d' "$f"; echo; echo "})(undefined);"; } \
    > "_vendor/tippyjs/$(basename "$f")"
done
cp "$tmp/tippy.js-$TIPPY/package/LICENSE" _vendor/tippyjs/LICENSE.tippy
cp "$tmp/popperjs-core-$POPPER/package/LICENSE.md" _vendor/tippyjs/LICENSE.popper
echo "vendored html-manager $HM, requirejs $RJS, mathjax $MJ (font $MJFONT), thebe $THEBE, tippy $TIPPY, popper $POPPER into _vendor/"
