#!/usr/bin/env bash
# The 16-core node comparison (docs/benchmarks.md's "16-core node"), in three steps:
#   scripts/device16.sh bundle    build .devb/ (../shared/device16/build-bundle.sh: gorma's
#                                 static binaries, the C twins, Debian's Open MPI and MPICH,
#                                 parcopy) and write .devb/job.sh from scripts/device16-job.sh
#   then, on the device machine (carry .devb):  bash .devb/device-run.sh .devb/job.sh
#   scripts/device16.sh local     the same job here (DEVICE_LOCAL=1, REPS=1, NPS=2, small
#                                 SIZES and CL_SIZES): a dry run of the pipeline, results in /tmp/out
#   scripts/device16.sh unpack T  unpack a returned device16.tar.gz into results/device16/
# The job's environment (REPS, NPS, SIZES, ...) is documented in scripts/device16-job.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
bundle)
	bash ../shared/device16/build-bundle.sh
	cp scripts/device16-job.sh .devb/job.sh
	echo "device16: run on the device: bash .devb/device-run.sh .devb/job.sh (carry .devb)"
	;;
local)
	[ -f .devb/bundle.tar.xz ] || { echo "device16: no .devb/bundle.tar.xz: run scripts/device16.sh bundle first" >&2; exit 2; }
	cp scripts/device16-job.sh .devb/job.sh
	OUT=${OUT:-/tmp/out} DEVICE_LOCAL=1 REPS=${REPS:-1} NPS=${NPS:-2} SIZES=${SIZES:-8,65536,1048576} CL_SIZES=${CL_SIZES:-8,65536,1048576} bash .devb/device-run.sh .devb/job.sh
	;;
unpack)
	t=${2:?usage: scripts/device16.sh unpack DEVICE16.TAR.GZ}
	rm -rf results/device16 && mkdir -p results/device16
	tar -C results/device16 -xzf "$t"
	echo "device16: unpacked into results/device16 ($(ls results/device16 | wc -l) files)"
	;;
*)
	echo "usage: scripts/device16.sh bundle | local | unpack DEVICE16.TAR.GZ" >&2
	exit 2
	;;
esac
