// Command mpichport re-expresses tests of MPICH's test/mpi suite (rma, coll, pt2pt) as
// scenarios of one gorma rank program, each checking what its MPICH test checks. One
// scenario runs per job:
//
//	golaunch -n N mpichport SCENARIO   # N: the rank count MPICH's testlist.in gives it
//	mpichport -list                    # every scenario: name, rank count, MPICH file
//
// A scenario that finds a difference prints "mpichport: rank R: SCENARIO (FILE): what
// differs" on stderr and exits 1; when every rank agreed, rank 0 prints "PASS SCENARIO".
// TestMPICHPorts runs every scenario but those in knownFailing (departures from MPI,
// none at present) this way.
//
// Scenario DIR-NAME re-expresses the MPICH test DIR/NAME of testlist.in, with its rank
// count; its source is DIR/NAME.c unless MPICH's Makefile.am builds it from another file
// (listed below; the _shm variants use MPI_Win_allocate, the typed ones one element
// type each). MPI_COMM_WORLD subsets that MTestGetIntracommGeneral walks become the
// World, a Dup, the World reversed and its two halves; MPI_IN_PLACE is a nil send (a nil
// recv for Scatter's root). The scenarios:
//
//	coll: allgather2 allgatherv2 allred2 allredmany alltoall1 bcasttest coll10 coll13 coll2
//	    coll4 coll8 coll9 exscan exscan2 gather red_scat_block red_scat_block2 scantst
//	pt2pt: anyall isendirecv isendself isendselfprobe probe_unexp recv_any sendall sendrecv3
//	rma: accfence2 compare_and_swap fetch_and_op_char fetch_and_op_double fetch_and_op_int
//	    fetch_and_op_long fetch_and_op_short fetchandadd get_accumulate_double
//	    get_accumulate_int get_accumulate_long get_accumulate_short lockcontention mixedsync
//	    rmazero test1 test2 test2_shm test3 test3_shm test4 test5 win_flavors
//	    window_allocation window_creation wintest wintest_shm
//
//	from rma/fetch_and_op.c: fetch_and_op_char fetch_and_op_double fetch_and_op_int
//	    fetch_and_op_long fetch_and_op_short
//	from rma/get_accumulate.c: get_accumulate_double get_accumulate_int get_accumulate_long
//	    get_accumulate_short
//	from rma/test2.c: test2_shm
//	from rma/test3.c: test3_shm
//	from rma/window_creation.c: window_allocation
//	from rma/wintest.c: wintest_shm
//
// Each scenario's comment in the source says what it checks and what of its MPICH test
// it leaves out (a part that needs a feature gorma lacks, such as derived datatypes).
package main
