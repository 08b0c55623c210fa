// Command stressprog is a rank program for golaunch's adversarial tests
// (launcher/stress_test.go). It never uses PMI: it reads only GOLAUNCH_RANK, so each
// mode exercises the launcher's process handling and output forwarding alone. The first
// argument picks a behaviour:
//
//	partial             write "out-RANK" to stdout and "err-RANK" to stderr, no newline; exit 0
//	bigline BYTES       rank 0 writes one line of BYTES bytes (a-z repeated) and a newline,
//	                    the others "small RANK"; exit 0
//	binary              write every byte value 64 times (0..255, 0..255, ...); exit 0
//	burst LINES         write LINES numbered lines, then exit at once
//	mixed LINES         write LINES numbered lines to stdout and to stderr, alternating; exit 0
//	killself SIG WHO    rank WHO kills itself with signal SIG; the others sleep
//	flood DIR           write DIR/RANK ("pid 0 sock"), then write to stdout forever
//	ignoreterm DIR      ignore SIGTERM and SIGINT, start a child (sleep) in the rank's process
//	                    group, write DIR/RANK ("pid childpid sock"), then sleep
//	stdincount          rank 0 reads stdin to EOF and prints "stdin BYTES SUM"; exit 0
//	nostdin             exit 0 at once without reading stdin
package main
