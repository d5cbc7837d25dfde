#!/usr/bin/env bash
# The action's install step (action.yml): citeaudit from the action's own checkout with exactly
# the versions its uv.lock pins (`uv sync --frozen`: the lock is never re-resolved), into a
# virtual environment of its own (UV_PROJECT_ENVIRONMENT), whose bin folder joins the job's PATH.
set -euo pipefail

uv sync --frozen --no-dev --no-editable --project "${GITHUB_ACTION_PATH:?}" \
    --python "${CITEAUDIT_PYTHON:-3.11}"
echo "${UV_PROJECT_ENVIRONMENT:?}/bin" >>"${GITHUB_PATH:-/dev/null}"
