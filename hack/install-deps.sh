#!/usr/bin/env bash
# Installs the system packages the tests use, when missing: sshd (SSH
# transport tests), shellcheck (script checks), wine64, osslsigncode and
# openssl (the release tests run hybridctl.exe under wine and sign it with
# a throwaway certificate and a local timestamp server, docs/release.md),
# and
# what the end-to-end lab runs (docs/e2e.md): debootstrap, systemd-nspawn,
# dnsmasq, jq; Node.js and npm for the PowerShell parser, then the parser's
# npm packages, pinned by hack/pwsh/package-lock.json, into
# ~/.cache/hybridctl/tools/npm (never into the repository).
# Debian/Ubuntu; needs root to install. Quiet when everything is there.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
tools=${HYBRIDCTL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/hybridctl/tools}/npm

# pwsh_parser installs web-tree-sitter and tree-sitter-powershell with npm
# ci from the lock file, again only when the lock file changed.
pwsh_parser() {
	if cmp -s "$repo/hack/pwsh/package-lock.json" "$tools/package-lock.json" && [ -d "$tools/node_modules/tree-sitter-powershell" ]; then
		return 0
	fi
	echo "install-deps: npm ci of hack/pwsh into $tools"
	mkdir -p "$tools"
	cp "$repo/hack/pwsh/package.json" "$repo/hack/pwsh/package-lock.json" "$tools/"
	# --ignore-scripts: only the grammar's WebAssembly build is used, no
	# native addon is built.
	(cd "$tools" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
}

need=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
[ -x /usr/sbin/debootstrap ] || command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
[ -x /usr/sbin/dnsmasq ] || command -v dnsmasq >/dev/null 2>&1 || need+=(dnsmasq-base)
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v wine64 >/dev/null 2>&1 || [ -x /usr/lib/wine/wine64 ] || need+=(wine64)
command -v osslsigncode >/dev/null 2>&1 || need+=(osslsigncode)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ "${#need[@]}" -eq 0 ]; then
	pwsh_parser
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing ${need[*]}; install them (Debian/Ubuntu: apt-get install ${need[*]})" >&2
	exit 1
fi
echo "install-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
pwsh_parser

