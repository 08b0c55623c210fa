// Command halobench measures a 2D halo column exchange, the first use of MPI's derived
// datatypes. Every rank owns an N x N row-major float64 matrix with one ghost column on
// each side (N rows of N+2), the ranks form a ring (a 1-D row of ranks, periodic). An
// exchange sends the rank's last owned column to its right neighbour and its first owned
// column to its left one, receiving each neighbour's into the ghost columns.
//
//	golaunch -n 2 ./bin/halobench                          # N = 64, 256, 1024, 4096
//	golaunch -n 2 ./bin/halobench --sizes 256,4096 --iters 2000 --json=halo.json
//	golaunch -n 2 ./bin/halobench --manual                 # packs by hand, the baseline
//	golaunch -n 4 ./bin/halobench --sizes 1024
//
// Any number of ranks from 2 runs; with 2 both neighbours are the other rank.
//
// Method: a column is datatype.Vector[float64](N, 1, N+2) laid over the matrix from the
// column's first element, and an exchange is two runtime.SendrecvType calls (the MPI way:
// MPI_Type_vector and MPI_Sendrecv, as bench/mpi/halobench.c does). --manual packs each
// column by hand into a contiguous []float64, calls runtime.Sendrecv and unpacks the
// received one: what a Go program without datatypes writes. Before the first size the
// ranks exchange the columns of a 64 x 64 matrix, untimed, for 50 ms (the job's warm-up:
// a job's first milliseconds are slower, whichever runtime; the C twin does the same).
// Per size, after a Barrier, --warmup exchanges run untimed and --iters timed; the figure
// is rank 0's time of the timed ones divided by their number: the mean microseconds of
// one exchange (both columns, both directions). Before the first exchange and before the
// timed ones, the ghost columns are cleared and the boundary columns given values that
// encode the rank, the row and the phase. The ghosts are checked after the first exchange
// and after the last, and a wrong value fails the run.
//
// Output is one table ("#N  column_bytes  iterations  exchange_us") after a header
// naming the mode, the ranks, the transport, the progress mode and the host(s); --json
// prints one JSON document instead, --json=FILE writes it to FILE beside the text.
package main
