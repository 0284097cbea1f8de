#!/usr/bin/env bash
# The project's test command (README): formatting, vet, staticcheck, then
# every test of the main module and of hack/testenv, against the real
# control plane (build it first: hack/testenv/testenv build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2

echo "== gofmt"
unformatted="$(gofmt -l . | grep -v '^testdata/' || true)"
if [ -n "$unformatted" ]; then
	echo "gofmt: these files need formatting (gofmt -w):" >&2
	echo "$unformatted" >&2
	exit 1
fi

if command -v shellcheck >/dev/null 2>&1; then
	echo "== shellcheck"
	shellcheck .ci/run hack/test.sh hack/testenv/testenv
fi

echo "== go vet"
go vet ./...
go -C hack/testenv vet ./...

echo "== staticcheck"
go run "$staticcheck" ./...
(cd hack/testenv && go run "$staticcheck" ./...)

echo "== go test"
status=0
go -C hack/testenv test -count=1 ./... || status=$?
go test -count=1 -timeout 30m "$@" ./... || status=$?
exit "$status"
