// Command collprog is the rank program of the collectives' multi-host test
// (launcher/netns_coll_test.go): golaunch runs it across network-namespace hosts. It
// runs every collective over a few counts, in place and not, and checks every result
// against a sequential reference. The collectives are Allreduce (the algorithm picked by
// the automatic selection: the hierarchical one when ranks span hosts with several on a
// host), Reduce, Bcast, Allgather, ReduceScatter, Gather, Scatter, Scan, Exscan,
// Alltoall and Barrier.
//
// Each rank's input is a deterministic function of its rank, the element index and the
// call's sequence number, so every rank computes the reference of any call by itself:
// the ranks' vectors combined element by element in rank order. The reductions run with
// int64 Sum, float64 Max (on values exact in binary), int32 Bxor and a non-commutative
// user operator (collectives.NewOp: affine maps x -> a*x + b mod 2^32 packed in an
// int64, composed in rank order). The data movements (Bcast, Allgather, Gather, Scatter,
// Alltoall) with int64, float64 and int32. A receive buffer is poisoned before every
// call, and a send buffer is checked to be unchanged after it.
//
//	collprog [--counts 0,1,7,3000,300000]
//
// Rank 0 first prints "collprog: N ranks on hosts H0 H1 ..." (rank r's host, in rank
// order). A mismatch or an error prints "collprog: rank R: WHAT: ..." on stderr (WHAT names the
// collective, type, operator, count and variant) and exits 1; rank 0 prints
// "PASS collprog N ranks" when every rank passed every check.
package main
