#!/usr/bin/env bash
# The action's audit step (action.yml), a script so that it runs the same on a laptop as on a
# runner: audit CITEAUDIT_PATHS into CITEAUDIT_OUT/paper with the gate CITEAUDIT_FAIL_ON, write
# the SARIF, the job summary ($GITHUB_STEP_SUMMARY) and the step's outputs ($GITHUB_OUTPUT).
# Its own exit is 0 whatever the audit said: the action's last step exits with the audit's code,
# after the report and the SARIF have been kept.
set -uo pipefail

out="${CITEAUDIT_OUT:?}"
sarif="$out/citeaudit.sarif"
mkdir -p "$out"
# One path a line (a path may hold spaces), else space-separated on its one line.
if [[ "${CITEAUDIT_PATHS:?}" == *$'\n'* ]]; then
    paths=()
    while IFS= read -r line; do
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        [ -n "$line" ] && paths+=("$line")
    done <<<"$CITEAUDIT_PATHS"
else
    read -r -a paths <<<"$CITEAUDIT_PATHS"
fi

citeaudit audit "${paths[@]}" --job paper --out "$out" \
    --fail-on "${CITEAUDIT_FAIL_ON:-not_found,mismatch,retracted,missing}" --sarif "$sarif"
code=$?

if [ -s "$sarif" ]; then
    echo "sarif=$sarif" >>"${GITHUB_OUTPUT:-/dev/null}"
fi
echo "exit-code=$code" >>"${GITHUB_OUTPUT:-/dev/null}"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    if [ "$code" -le 1 ]; then
        citeaudit report paper --out "$out" --markdown >>"$GITHUB_STEP_SUMMARY"
    else
        echo "citeaudit could not audit ${CITEAUDIT_PATHS} (exit $code): see the step's log" \
            >>"$GITHUB_STEP_SUMMARY"
    fi
fi
exit 0
