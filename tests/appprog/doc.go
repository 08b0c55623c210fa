// Command appprog is a rank program for golaunch's MPMD tests: each rank prints
//
//	app RANK SIZE APPNUM PROGRAM HOST GL_APP=VALUE ARGS...
//
// (PROGRAM: the base name of its argv[0]; HOST: World.Host; GL_APP: that variable, as -x
// set it), then
// every rank of the World sums its AppNum and 1 in one Allreduce, prints "sum RANK
// APPNUMS RANKS", and finalizes.
//
// Its ranks share nothing but the World: one goroutine each, no state across calls.
package main
