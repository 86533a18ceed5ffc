#!/usr/bin/env bash
# Render `dvc plots diff` (or `show`) to HTML and check, in a real headless Chromium, that every
# plot draws. DVC's page loads Vega from a CDN; this check pins the same Vega versions from the npm
# registry and serves them locally, so it needs no network beyond the package registries.
#
# Usage: scripts/check_plots_render.sh [REVISION...]   (no revision: the workspace, `dvc plots show`)
# Needs: chromium (Debian: apt-get install chromium), npm, dvc. Writes into build/plots-check/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/plots-check
rm -rf "$out" && mkdir -p "$out/vendor"

# The versions dvc-render's own page asks the CDN for.
vendor=$(mktemp -d)
(cd "$vendor" && npm pack --silent vega@5.20.2 vega-lite@5.2.0 vega-embed@6.18.2 >/dev/null)
for pkg in vega-5.20.2 vega-lite-5.2.0 vega-embed-6.18.2; do
    tar xzf "$vendor/$pkg.tgz" -C "$vendor" package/build
    cp "$vendor"/package/build/"${pkg%-*}".min.js "$out/vendor/"
done
rm -rf "$vendor"

cat > "$out/template.html" <<'HTML'
<!DOCTYPE html>
<html>
<head>
  <meta charset="utf-8">
  <title>groundkit plots</title>
  <script src="vendor/vega.min.js"></script>
  <script src="vendor/vega-lite.min.js"></script>
  <script src="vendor/vega-embed.min.js"></script>
</head>
<body>
{plot_divs}
</body>
</html>
HTML

if [ "$#" -eq 0 ]; then
    dvc plots show --html-template "$out/template.html" -o "$out"
else
    dvc plots diff "$@" --html-template "$out/template.html" -o "$out"
fi

page="file://$PWD/$out/index.html"
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000)
chromium "${flags[@]}" --dump-dom "$page" > "$out/dom.html" 2>/dev/null
chromium "${flags[@]}" --window-size=1400,2600 --screenshot="$PWD/$out/plots.png" "$page" 2>/dev/null

expected=$(grep -c 'vegaEmbed(' "$out/index.html" || true)
drawn=$(grep -o '<canvas[^>]*class="marks"' "$out/dom.html" | wc -l)
echo "plots in the page: $expected; drawn by Vega in Chromium: $drawn; screenshot: $out/plots.png"
if [ "$expected" -eq 0 ] || [ "$drawn" -ne "$expected" ]; then
    echo "some plots did not render" >&2
    exit 1
fi
