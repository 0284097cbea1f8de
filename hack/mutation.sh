#!/usr/bin/env bash
# hack/mutation.sh [PACKAGE...]: mutation testing of the critical packages
# with gremlins (github.com/go-gremlins/gremlins v0.6.0, from the module
# proxy, installed into the tools cache). Not part of the test command: one
# package takes from minutes (report) to hours (checks, provision) on two
# cores. Results and the judged survivors are in docs/testing.md.
#
#   MUTATION_OUT      where the per-package logs and JSON go (default: a new temporary directory)
#   MUTATION_WORKERS  gremlins workers (default 1; each runs the package's tests)
#   MUTATION_TIMEOUT  timeout coefficient over the tests' own time (default 10)
#   MUTATION_SHORT=1  run the tests with -short (no test control plane; for the live packages)
#   MUTATION_EXCLUDE  a regular expression of the file paths (relative to the package's
#                     directory) to leave out (gremlins -E), to run a large package in
#                     parts: MUTATION_EXCLUDE='^(procedure|preflight|transport|inventory)/' internal/provision
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

tools="${XDG_CACHE_HOME:-$HOME/.cache}/hybridctl/tools"
GOBIN="$tools/bin" go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
gremlins="$tools/bin/gremlins"

if [ "$#" -eq 0 ]; then
	set -- internal/spec internal/plan internal/report internal/checks internal/csr internal/kubeconfig internal/provision
fi
out="${MUTATION_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/hybridctl-mutation.XXXXXX")}"
mkdir -p "$out"
# -count=1: a cached coverage run takes 2 s instead of a minute, and
# gremlins' per-mutant timeout (that time x MUTATION_TIMEOUT) then reports
# most mutants TIMED OUT (27 of internal/checks/nodes.go's 82, measured
# without -count=1).
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-count=1"
if [ "${MUTATION_SHORT:-}" = 1 ]; then
	export GOFLAGS="${GOFLAGS:+$GOFLAGS }-short"
fi

status=0
for pkg in "$@"; do
	name="${pkg//\//_}"
	echo "== $pkg"
	if ! "$gremlins" unleash --workers "${MUTATION_WORKERS:-1}" \
		--timeout-coefficient "${MUTATION_TIMEOUT:-10}" \
		${MUTATION_EXCLUDE:+--exclude-files "$MUTATION_EXCLUDE"} \
		-o "$out/$name.json" "./$pkg" >"$out/$name.log" 2>&1; then
		status=1
	fi
	grep -E 'Killed|Lived|Timed out|Not covered|efficacy|coverage' "$out/$name.log" | tail -6 || true
done
echo "logs and JSON: $out"
exit "$status"
