#!/usr/bin/env bash
# The check step of the koas GitHub Action (action.yml), as a script so it
# runs the same in a test, in another CI or by hand.
#
# It checks the Markdown files (*.md, *.markdown) changed since a base
# revision (a pull request's base commit), or every Markdown file under
# the paths when there is no base, and reports in the format asked.
#
# Environment (all optional):
#   KOAS          the koas binary                          [koas]
#   KOAS_BASE     the revision changes are measured from;
#                 empty or all zeros: no base, check all   []
#   KOAS_PATHS    files or folders to look in, separated
#                 by newlines                              [.]
#   KOAS_LINES    changed: findings on changed lines only;
#                 all: every finding of the changed files  [changed]
#   KOAS_FORMAT   github (annotations) or sarif            [github]
#   KOAS_SARIF    where the SARIF log goes                 [koas.sarif]
#   KOAS_FAIL_ON  info, warning, error or never            [koas.toml's, else warning]
#
# Exit code: koas check's (0 clean, 1 findings at --fail-on, 2 an error).
set -euo pipefail

koas=${KOAS:-koas}
base=${KOAS_BASE:-}
lines=${KOAS_LINES:-changed}
format=${KOAS_FORMAT:-github}
sarif=${KOAS_SARIF:-koas.sarif}

case "$lines" in changed | all) ;; *) echo "koas-action: lines must be changed or all, not '$lines'" >&2; exit 2 ;; esac
case "$format" in github | sarif) ;; *) echo "koas-action: format must be github or sarif, not '$format'" >&2; exit 2 ;; esac
# A push that creates a branch has no previous commit: all zeros.
if [[ "$base" =~ ^0+$ ]]; then
    base=
fi

paths=()
while IFS= read -r p; do
    [ -n "$p" ] && paths+=("$p")
done <<< "${KOAS_PATHS:-.}"

args=(check --format "$format")
if [ -n "${KOAS_FAIL_ON:-}" ]; then
    args+=(--fail-on "$KOAS_FAIL_ON")
fi

files=()
if [ -n "$base" ]; then
    # A shallow checkout may lack the base commit: fetch it alone.
    if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
        git fetch --quiet --no-tags --depth=1 origin "$base"
    fi
    # Added, copied, modified or renamed (under the new name), relative to
    # here; NUL-separated so that any file name comes through.
    while IFS= read -r -d '' f; do
        case "$f" in
            *.md | *.markdown) files+=("$f") ;;
        esac
    done < <(git diff --name-only --relative -z --diff-filter=ACMR "$base" -- "${paths[@]}")
    if [ "${#files[@]}" -eq 0 ]; then
        echo "koas-action: no Markdown file changed since $base"
        if [ "$format" = sarif ]; then
            # An empty log: code scanning closes what an earlier run opened.
            empty=$(mktemp -d)
            "$koas" check --format sarif --fail-on never -- "$empty" > "$sarif"
            rmdir "$empty"
        fi
        exit 0
    fi
    if [ "$lines" = changed ]; then
        args+=(--changed-since "$base")
    fi
else
    files=("${paths[@]}")
fi

status=0
if [ "$format" = sarif ]; then
    "$koas" "${args[@]}" -- "${files[@]}" > "$sarif" || status=$?
    echo "koas-action: SARIF log written to $sarif"
else
    "$koas" "${args[@]}" -- "${files[@]}" || status=$?
fi
exit "$status"
