#!/usr/bin/env bash
# The repository stands alone: no file outside .ci/ may point at a planning
# document outside the repository. The pattern: SPEC in capitals (even inside
# a longer name), a section sign, or a path into ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern='SPEC|§|\.\./shared'
if grep -rnIE "$pattern" --exclude-dir=.git --exclude-dir=.ci --exclude-dir='build*' .; then
    echo "standalone: the lines above point outside the repository (pattern: $pattern)" >&2
    exit 1
fi
echo "standalone: no file refers to SPEC, a section sign or ../shared"
