#!/usr/bin/env bash
# What a pull request's CI runs (.github/workflows/retrieval-eval.yml): reproduce the pipeline,
# compare the result with the base branch query by query, and write the pull-request comment and
# the HTML report. Run it locally the same way before pushing.
#
# Usage: @@script@@ BASE [OUT]
#   BASE  the revision to compare against, e.g. origin/main (its committed metrics/)
#   OUT   folder for comment.md, compare.md and report.html (default build/pr-eval)
# The gate is params.yaml's gate section (metrics, max_drop, non_inferiority), which compare reads in
# the repository; GROUNDKIT_GATE holds compare options that override it (default: none, so the section,
# else compare's own gate: ndcg@10 and coverage@1000chars, a gain bought only with more context is no gain); e.g.
#   GROUNDKIT_GATE="--metric ndcg@10,coverage@1000chars --max-drop 0.01"
#
# Exit status: 0 the gate passed; 4 a gated metric fell significantly (not by trade) by more than
# --max-drop, or a non-inferiority margin was not met (compare.err names the metric and the rule;
# comment.md and report.html are written all the same); anything else is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: @@script@@ BASE [OUT]}
out=${2:-build/pr-eval}
read -r -a gate <<< "${GROUNDKIT_GATE:-}"
marker="<!-- groundkit retrieval-eval -->"
mkdir -p "$out"

dvc repro --quiet

# HEAD's committed results when `dvc repro` reproduced them byte for byte, else what it just wrote.
if git diff --quiet HEAD -- metrics dvc.lock; then
    candidate=HEAD
    provenance="\`dvc repro\` reproduced the results committed at HEAD byte for byte."
else
    candidate=metrics
    provenance="**The results committed at HEAD are not what \`dvc repro\` gives**: this compares what it produced here (\`metrics\`). Commit \`dvc.lock\` and \`metrics/\` after \`dvc repro\`."
fi

set +e
groundkit compare "$base" "$candidate" --format md --fail-on-regression ${gate[@]+"${gate[@]}"} > "$out/compare.md" 2> "$out/compare.err"
status=$?
set -e
if [ "$status" -ne 0 ] && [ "$status" -ne 4 ]; then
    cat "$out/compare.err" >&2
    exit "$status"
fi
groundkit report "$candidate" --baseline "$base" --out "$out/report.html" --force > /dev/null

{
    echo "$marker"
    cat "$out/compare.md"
    echo
    echo "$provenance"
    if [ "$status" -eq 4 ]; then
        echo
        echo ":x: **Gate failed:** $(grep '^gate failed: ' "$out/compare.err" | sed 's/^gate failed: //' | paste -sd ';' -)."
    fi
    echo
    # On GitHub the workflow uploads the report; run here, the reader needs the file's place instead.
    if [ "${GITHUB_ACTIONS:-}" = "true" ]; then
        echo "The HTML report (charts, every query with its gold quotes and retrieved passages) is attached to this run as the \`retrieval-report\` artifact."
    else
        echo "The HTML report (charts, every query with its gold quotes and retrieved passages) is \`$out/report.html\`: open it in a browser."
    fi
} > "$out/comment.md"
cat "$out/comment.md"
exit "$status"
