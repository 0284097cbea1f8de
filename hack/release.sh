#!/usr/bin/env bash
# Builds hybridctl's release files from the checked-out commit: archives for
# five platforms, SBOMs, the krew manifest, the CSR approver's image and
# SHA256SUMS (docs/release.md). hack/release.sh --help says more.
#   hack/release.sh -o DIR [--platforms linux/amd64,windows/amd64]
# Relative paths are relative to the current directory.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tool="$(mktemp -d "${TMPDIR:-/tmp}/hybridctl-release.XXXXXX")"
trap 'rm -rf "$tool"' EXIT
go -C "$repo" build -o "$tool/release" ./hack/release
"$tool/release" --source "$repo" "$@"
