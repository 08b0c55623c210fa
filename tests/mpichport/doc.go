// Command mpichport re-expresses tests of MPICH's test/mpi suite (rma, coll, pt2pt, comm,
// group, topo, datatype) as scenarios of one gorma rank program, each checking what its
// MPICH test checks. One scenario runs per job:
//
//	golaunch -n N mpichport SCENARIO   # N: the rank count MPICH's testlist.in gives it
//	mpichport -list                    # every scenario: name, rank count, MPICH file
//
// A scenario that finds a difference prints "mpichport: rank R: SCENARIO (FILE): what
// differs" on stderr and exits 1; when every rank agreed, rank 0 prints "PASS SCENARIO".
// TestMPICHPorts runs every scenario this way but those in knownFailing: departures of
// gorma from MPI, each named there with the difference.
//
// Scenario DIR-NAME re-expresses the MPICH test DIR/NAME of testlist.in, with its rank
// count. Its source is DIR/NAME.c unless MPICH's Makefile.am builds it from another file
// (the _shm variants use MPI_Win_allocate, the _npN ones run with testlist.in's second
// rank count, _randomize with its -randomize=1, _nb with its -nonblocking, the others
// one element type, operation or testlist.in argument each). The MPI_COMM_WORLD subsets
// that MTestGetIntracommGeneral walks become the World, a Dup, the World reversed and
// its two halves. The seven intercommunicators of MTestGetIntercomm are made as MPICH
// makes them (eachIntercomm). MPI_IN_PLACE is a nil send (a nil recv for Scatter's
// root). scenarios.md, beside this file, lists every scenario by directory, and the
// MPICH file of those not built from DIR/NAME.c.
//
// Each scenario's comment in the source says what it checks and what of its MPICH test
// it leaves out (a part that needs a feature gorma lacks, such as MPI_Comm_spawn).
package main
