# shellcheck shell=bash
# What the lab's end-to-end scripts share (hack/e2e.sh, hack/e2e-brownfield.sh,
# hack/e2e-upgrade.sh): sourced after cd to the repository, with e2e_name set
# (the prefix of the progress lines) and the tools it needs listed in
# e2e_tools. It exits 0 when HYBRIDCTL_E2E=skip, checks that the lab can run
# (exit 3 otherwise), makes the run's log directory ($out) and defines say,
# stage, check, run_rc, events, build_hybridctl and build_releases.
# shellcheck disable=SC2154 # e2e_name is the sourcing script's
# shellcheck disable=SC2034 # out, lab and stages are for the sourcing script

if [ "${HYBRIDCTL_E2E:-}" = skip ]; then
	echo "$e2e_name: skipped (HYBRIDCTL_E2E=skip)"
	exit 0
fi

lab=hack/lab/lab
cache="${HYBRIDCTL_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hybridctl/lab}"
if ! "$lab" check; then
	echo "$e2e_name: the lab cannot run on this machine (see above); HYBRIDCTL_E2E=skip skips the end-to-end tests" >&2
	exit 3
fi
for t in jq ssh ${e2e_tools:-}; do
	command -v "$t" >/dev/null || { echo "$e2e_name: $t is missing (hack/install-deps.sh installs it)" >&2; exit 3; }
done
mkdir -p "$cache"
out=$(mktemp -d "$cache/$e2e_name.XXXXXX")

t0=$(date +%s)
stage_t=$t0
stages=()
fails=0
# say MESSAGE: a progress line with the seconds since the start.
say() { printf '== %s [%4ss] %s\n' "$e2e_name" "$(($(date +%s) - t0))" "$*"; }
# stage NAME: ends the previous stage's timing, starts NAME's.
stage() {
	local now
	now=$(date +%s)
	[ -z "${stage_name:-}" ] || stages+=("$(printf '%-50s %4ss' "$stage_name" "$((now - stage_t))")")
	stage_name=$1
	stage_t=$now
	say "$1"
}
# check DESCRIPTION COMMAND...: an assertion; the run goes on.
check() {
	if "${@:2}"; then
		printf '   ok   %s\n' "$1"
	else
		printf '   FAIL %s\n' "$1" >&2
		fails=$((fails + 1))
	fi
}
# run_rc COMMAND...: runs COMMAND with its redirections and sets rc to its
# exit status, without ending the script when it fails.
run_rc() {
	rc=0
	"$@" || rc=$?
}
# events < FILE: the JSON events of an apply, reset or upgrade as one
# readable line each.
events() {
	jq -r --unbuffered 'select(.type != "dry-run") |
		"   [\(.sinceStartMs / 1000 | floor | tostring | (" " * (4 - length)) + .)s] \(.type) \(.phase // "") \(.host // "") \(.reason // .error // "")\(if .summary then " " + (.summary | tostring) else "" end)"'
}
# build_hybridctl: builds hybridctl and sets hybridctl to the binary; with
# build=0 (--no-build) also the lab's own programs, the Kubernetes artifacts
# staying as already built.
build_hybridctl() {
	if [ "${build:-1}" = 1 ]; then
		stage "build hybridctl"
		"$lab" build hybridctl
	else
		stage "hybridctl and the lab's programs; the Kubernetes artifacts as built (--no-build)"
		"$lab" build hybridctl lab-programs
	fi
	hybridctl=$("$lab" path hybridctl)
}
# build_releases RELEASE...: builds every artifact that belongs to no
# release or to one of RELEASEs (lab list: NAME VERSION RELEASE ...);
# nothing with build=0.
build_releases() {
	local artifacts
	[ "${build:-1}" = 1 ] || return 0
	stage "build the lab's artifacts for $*"
	mapfile -t artifacts < <("$lab" list | awk -F'\t' -v want=" $* " '$3 == "-" || index(want, " " $3 " ") {print $1}')
	"$lab" build "${artifacts[@]}"
}
