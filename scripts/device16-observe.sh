# The cost of observation on the 16-core node, sourced by .devb/device-run.sh
# (scripts/device16.sh bundle observe): scripts/compare-observe.sh over the bundle's
# binaries ($B), with the bundle's Open MPI (orterun) as the peer, RANKS ranks for the
# Allreduce (default: every core) and REPS repetitions (default 9). jq, which the script
# needs, comes in .devb/hwloc with its libraries. The document comes back as
# $OUT/observe.json: it goes to docs/observe.json, which chart page renders.
export PATH="$PWD/.devb/hwloc:$PATH" LD_LIBRARY_PATH="$PWD/.devb/hwloc:$LD_LIBRARY_PATH"
BIN=$B MPIRUN="${OMPI[*]}" GOVERSION=$(cat .devb/goversion) RANKS=${RANKS:-$(nproc)} OUT=$OUT/observe.json \
	bash scripts/compare-observe.sh "${REPS:-9}"
