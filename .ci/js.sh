#!/usr/bin/env bash
# The front end in CI: install the pinned tools from the lockfile, type-check the sources, run
# their tests, and fail when the committed bundle (murano_widgets/static/) differs from a fresh
# build of js/src. Needs node and npm (the npm registry), nothing else.
set -euo pipefail
cd "$(dirname "$0")/../js"
node --version
npm ci --no-audit --no-fund
npm run check    # tsc -p jsconfig.json: strict, over the // @ts-check + JSDoc sources
npm test         # node --test tests/, importing js/src directly
npm run verify   # node build.mjs --check: the committed murano_widgets/static is a fresh build
