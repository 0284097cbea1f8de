#!/usr/bin/env bash
# Installs the system packages the tests use, when missing: sshd (SSH
# transport tests), shellcheck (script checks), and
# what the end-to-end lab runs (docs/e2e.md): debootstrap, systemd-nspawn,
# dnsmasq, jq.
# Debian/Ubuntu; needs root to install. Quiet when everything is there.
set -euo pipefail

need=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
[ -x /usr/sbin/debootstrap ] || command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
[ -x /usr/sbin/dnsmasq ] || command -v dnsmasq >/dev/null 2>&1 || need+=(dnsmasq-base)
command -v jq >/dev/null 2>&1 || need+=(jq)
[ "${#need[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing ${need[*]}; install them (Debian/Ubuntu: apt-get install ${need[*]})" >&2
	exit 1
fi
echo "install-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
