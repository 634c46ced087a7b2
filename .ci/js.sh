#!/usr/bin/env bash
# The front end in CI: install the pinned tools from the lockfile, type-check the sources, run
# their tests, and fail when the committed bundle (murano_widgets/static/) differs from a fresh
# build of js/src. Needs node and npm (the npm registry), nothing else.
#
# Each step prints one line, and its whole output only when it fails (.ci/quiet.sh);
# MURANO_VERBOSE=1 prints everything.
set -euo pipefail
source "$(dirname "$0")/quiet.sh"
cd "$(dirname "$0")/../js"
# --no-progress: npm's spinner, drawn on a terminal, is noise in a log. esbuild's postinstall
# (which only checks and hard-links the binary its platform package already brings) is denied
# in package.json's allowScripts, where npm 11 asks for a decision and warns until it has one.
quiet "js: npm ci, node $(node --version)" '^added ' npm ci --no-audit --no-fund --no-progress
quiet "js: type check" '' npm run check  # tsc -p jsconfig.json: strict, over the JSDoc sources
quiet "js: node --test" "$NODE_TEST_SUMMARY" npm test  # node --test tests/, importing js/src
quiet "js: bundle" 'up to date' npm run verify  # the committed murano_widgets/static is fresh
