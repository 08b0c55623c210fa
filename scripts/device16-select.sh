# The one-host selection sweep: a job for ../shared/device16/device-run.sh (scripts/device16.sh
# bundle select writes it to .devb/job.sh), which sources it with $B (the bundle's binaries)
# and $OUT set. For each rank count of PS, it runs gorma's allreducebench under every
# candidate of the one-host algorithms (GORMA_SHM_TUNE and GORMA_SHM_TEAM), the candidates
# in turn within each repetition, and writes $OUT/select16.tar.gz: machine.txt and, per
# run, sel_CLASS_CAND_pP_REP.json. `go run ./bench/chart select16` reads the unpacked
# folder and prints the table of the fastest candidate per class, rank count and size
# (collectives/design.md, "Selection on one host").
# Classes and candidates:
#   medium  Allreduce of MEDIUM_SIZES under medium=BYTES for each of MEDIUMS (0: the
#           default rule; 16384: one step up to 8 KiB);
#   big     Allreduce, Reduce, Bcast and Allgather of BIG_SIZES under chunk=C,nt=N for
#           each C of CHUNKS and N of on and off;
#   a2a     Alltoall of A2A_SIZES (each rank's block) under nt=on and nt=off;
#   team    Allreduce and Barrier of TEAM_SIZES under GORMA_SHM_TEAM=T for each T of TEAMS
#           not above p (and the default), at the rank counts of TEAM_PS;
#   single  Bcast, Allgather and Alltoall of SINGLE_SIZES under single=off and single=65536
#           (single copy from 64 KiB blocks; an Alltoall's beyond 256 KiB per rank), at the
#           rank counts of BIG_PS.
# Environment: REPS=2, PS="2 4 8 16 32 64", MEDIUMS="16384 1024 2048 4096",
# MEDIUM_SIZES=512,1024,2048,4096,8192, CHUNKS="65536 131072 262144 1048576",
# BIG_PS="4 8 16", BIG_SIZES=65536,1048576,16777216, A2A_SIZES=2048,8192,16384, TEAMS="8 16 32 64", TEAM_PS="16 32 64",
# TEAM_SIZES=8,8192,1048576, SINGLE_SIZES=65536,262144,1048576,4194304,16777216, SIZE_TIME=100ms, RUN_TIMEOUT=60, DEADLINE (seconds from the
# start; a run that would start after it is skipped, with a line in stderr.txt).
reps=${REPS:-2}
res=/tmp/select16
rm -rf "$res" && mkdir -p "$res"
{
	echo "cores $(nproc)"
	echo "model $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
} >"$res/machine.txt"
late() { # NAME: whether DEADLINE has passed (then NAME is skipped)
	[ -n "${DEADLINE:-}" ] && [ "$SECONDS" -ge "$DEADLINE" ] || return 1
	echo "select16: $1 skipped (DEADLINE ${DEADLINE}s passed)" >>"$res/stderr.txt"
}
sel() { # CLASS CAND P REP TESTS SIZES ENV...: one run, its JSON under $res
	local class=$1 cand=$2 p=$3 i=$4 tests=$5 sizes=$6 f
	shift 6
	f="sel_${class}_${cand}_p${p}_$i"
	late "$f" && return
	local envs=()
	for e in "$@"; do envs+=(-x "$e"); done
	timeout "${RUN_TIMEOUT:-60}" "$B/golaunch" -n "$p" --tag-output=false "${envs[@]}" "$B/allreducebench" \
		--test "$tests" --sizes "$sizes" --iters 1000 --min-iters 10 --size-time "${SIZE_TIME:-100ms}" \
		--json="$res/$f.json" >/dev/null 2>>"$res/stderr.txt" || echo "select16: $f failed" | tee -a "$res/stderr.txt"
}
for ((i = 1; i <= reps; i++)); do
	for p in ${PS:-2 4 8 16 32 64}; do
		for m in ${MEDIUMS:-16384 1024 2048 4096}; do
			sel medium "$m" "$p" "$i" allreduce "${MEDIUM_SIZES:-512,1024,2048,4096,8192}" "GORMA_SHM_TUNE=medium=$m"
		done
	done
	for p in ${BIG_PS:-4 8 16}; do
		for c in ${CHUNKS:-65536 131072 262144 1048576}; do
			for nt in on off; do
				sel big "${c}nt$nt" "$p" "$i" allreduce,reduce,bcast,allgather "${BIG_SIZES:-65536,1048576,16777216}" "GORMA_SHM_TUNE=chunk=$c,nt=$nt"
			done
		done
		for nt in on off; do
			sel a2a "nt$nt" "$p" "$i" alltoall "${A2A_SIZES:-2048,8192,16384}" "GORMA_SHM_TUNE=nt=$nt"
		done
		for sc in off 65536; do
			sel single "$sc" "$p" "$i" bcast,allgather,alltoall "${SINGLE_SIZES:-65536,262144,1048576,4194304,16777216}" "GORMA_SHM_TUNE=single=$sc"
		done
	done
	for p in ${TEAM_PS:-16 32 64}; do
		for t in ${TEAMS:-8 16 32 64}; do
			[ "$t" -le "$p" ] && sel team "$t" "$p" "$i" allreduce,barrier "${TEAM_SIZES:-8,8192,1048576}" "GORMA_SHM_TEAM=$t"
		done
	done
	echo "select16: rep $i of $reps done (load $(cut -d' ' -f1-3 /proc/loadavg))"
done
tar -C "$res" -czf "$OUT/select16.tar.gz" .
echo "select16: wrote $OUT/select16.tar.gz ($(ls "$res" | wc -l) files)"
