#!/usr/bin/env bash
# The 16-core node comparisons (docs/benchmarks.md's "16-core node" and "Startup on a
# 16-core node"), in three steps:
#   scripts/device16.sh bundle [startup|observe|select]
#                                 build .devb/ (../shared/device16/build-bundle.sh: gorma's
#                                 static binaries, the C twins, Debian's Open MPI and MPICH,
#                                 parcopy), put Debian's lstopo in .devb/hwloc and the
#                                 commit built in .devb/commit, and write .devb/job.sh
#                                 from scripts/device16-job.sh (the collectives) or, with
#                                 startup, scripts/device16-startup.sh, or, with
#                                 observe, scripts/device16-observe.sh (the cost of
#                                 observation; its observe.json goes to docs/observe.json)
#                                 or, with select, scripts/device16-select.sh (the one-host
#                                 selection sweep; chart select16 reads it)
#   then, on the device machine (carry .devb):  bash .devb/device-run.sh .devb/job.sh
#   scripts/device16.sh local [startup]
#                                 the same job here (DEVICE_LOCAL=1, REPS=1; the collectives
#                                 with NPS=2, small SIZES and CL_SIZES, and perf's loops of
#                                 0.5 s at three PERF_SIZES, once): a dry run of the
#                                 pipeline, results in /tmp/out
#   scripts/device16.sh unpack T  unpack a returned device16.tar.gz into results/device16/
# The jobs' environment (REPS, NPS, SIZES, ...) is documented in scripts/device16-job.sh and
# scripts/device16-startup.sh. The startup job's $OUT/startup16.json goes to
# docs/startup16.json as it is.
# SHARED: the folder of device16/build-bundle.sh (default ../shared). In a git worktree,
# whose .git is a file that build-bundle.sh cannot write its exclude line to, the bundle is
# built in a clone of HEAD: commit first, uncommitted changes are not in it.
set -euo pipefail
cd "$(dirname "$0")/.."

# job KIND: the job script of a kind.
job() {
	case "${1:-}" in
	"") echo scripts/device16-job.sh ;;
	startup) echo scripts/device16-startup.sh ;;
	observe) echo scripts/device16-observe.sh ;;
	select) echo scripts/device16-select.sh ;;
	*)
		echo "device16: unknown job $1 (want startup, observe, select or nothing)" >&2
		exit 2
		;;
	esac
}

# hwloc puts Debian's lstopo-no-graphics and the library it needs beyond the bundle's
# (libtinfo) in .devb/hwloc: the device machine has no apt, and golaunch takes Open MPI's
# topology from lstopo. jq and its libraries go there too (scripts/compare-observe.sh
# writes its document with it), and .devb/goversion names the Go that built the bundle.
hwloc() {
	local l=/usr/bin/lstopo-no-graphics j=/usr/bin/jq
	[ -x "$l" ] || { echo "device16: $l missing: apt-get install hwloc-nox" >&2; exit 2; }
	[ -x "$j" ] || { echo "device16: $j missing: apt-get install jq" >&2; exit 2; }
	rm -rf .devb/hwloc && mkdir -p .devb/hwloc
	cp "$l" "$j" .devb/hwloc/
	ldd "$l" | awk '/libtinfo/ {print $3}' | xargs -r cp -L -t .devb/hwloc/
	ldd "$j" | awk '/libjq|libonig/ {print $3}' | xargs -r cp -L -t .devb/hwloc/
	go env GOVERSION >.devb/goversion
}

# commit names the code the bundle holds: HEAD, with -dirty when a checkout's tracked files
# differ from it (a worktree's bundle comes from a clean clone of HEAD).
commit() {
	local c
	c=$(git rev-parse --short HEAD)
	if [ -d .git ] && ! git diff --quiet HEAD --; then c=$c-dirty; fi
	echo "$c"
}

# build runs build-bundle.sh here, or in a clone of HEAD in a git worktree.
build() {
	local shared src
	shared=$(cd "${SHARED:-../shared}/device16" && pwd)
	if [ -d .git ]; then
		bash "$shared/build-bundle.sh"
		return
	fi
	src=$(mktemp -d)
	echo "device16: a git worktree: building the bundle in a clone of HEAD ($(git log --oneline -1 | cut -c1-60))" >&2
	git clone -q --shared . "$src/tree"
	(cd "$src/tree" && bash "$shared/build-bundle.sh")
	rm -rf .devb && cp -a "$src/tree/.devb" .devb
	rm -rf "$src"
}

case "${1:-}" in
bundle)
	j=$(job "${2:-}")
	build
	hwloc
	commit >.devb/commit
	cp "$j" .devb/job.sh
	echo "device16: run on the device: bash .devb/device-run.sh .devb/job.sh (carry .devb)"
	;;
local)
	j=$(job "${2:-}")
	[ -f .devb/bundle.tar.xz ] || { echo "device16: no .devb/bundle.tar.xz: run scripts/device16.sh bundle first" >&2; exit 2; }
	[ -d .devb/hwloc ] || hwloc
	cp "$j" .devb/job.sh
	OUT=${OUT:-/tmp/out} DEVICE_LOCAL=1 REPS=${REPS:-1} NPS=${NPS:-2} SIZES=${SIZES:-8,65536,1048576} CL_SIZES=${CL_SIZES:-8,65536,1048576} \
		PERF_SIZES=${PERF_SIZES-8,65536,1048576} PERF_TIME=${PERF_TIME:-0.5} PERF_REPS=${PERF_REPS:-1} bash .devb/device-run.sh .devb/job.sh
	;;
unpack)
	t=${2:?usage: scripts/device16.sh unpack DEVICE16.TAR.GZ}
	rm -rf results/device16 && mkdir -p results/device16
	tar -C results/device16 -xzf "$t"
	echo "device16: unpacked into results/device16 ($(ls results/device16 | wc -l) files)"
	;;
*)
	echo "usage: scripts/device16.sh bundle [startup|observe|select] | local [startup|observe|select] | unpack DEVICE16.TAR.GZ" >&2
	exit 2
	;;
esac
