package hostgroup

import (
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/gosched"
	"golang.org/x/sys/unix"
)

// osYield gives the processor to another thread (of any process) that is ready to run:
// oversubscribed ranks spinning for each other's flags must let the peer run.
//
// It is a raw system call, not announced to the Go scheduler. When the yield hands the
// core to a peer rank for a while, an announced call looks to sysmon like a blocking one,
// which takes the P away (back from the call through the slow exitsyscall path) and keeps
// sysmon waking every 20 us, stealing the oversubscribed cores in turn. An oversubscribed
// Barrier slows down and yields several times as often (4 ranks on 2 cores: `golaunch -n 4
// bin/allreducebench --test barrier` measures it). A sched_yield never blocks, so the
// runtime need not know.
func osYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

const (
	// yieldFor bounds an oversubscribed wait's yielding spin, before futex sleeps: a
	// peer that has not published within it is computing, not waiting for a processor.
	yieldFor = time.Millisecond
	// yieldCheck is the number of yields between checks of the time, ctx and liveness.
	yieldCheck = 16
)

// waitYield is wait's spin when the host has more ranks than processors (Open MPI does
// the same when it knows it oversubscribes: mpi_yield_when_idle): poll member i's flag
// line, giving the processor to another ready thread at every miss, so that the ranks
// sharing a core take turns at once. A bare spin would hold the core until the kernel's
// time slice ends, and a futex sleep costs a thread wake-up per step. It reports
// whether member i has published v; false once yieldFor has passed (the caller then
// sleeps). Members that share one process (an in-process test job) share its Go
// processors too: there a raw yield keeps the P that the member waited for may need, so
// each miss also yields to the Go scheduler.
func (w *waiter) waitYield(c Call, g *Group, i int, ctr *uint64, v uint64) (bool, error) {
	start := time.Now()
	for n := 1; ; n++ {
		if atomic.LoadUint64(ctr) >= v {
			return true, nil
		}
		osYield()
		if w.shared {
			gosched.Yield() // the member waited for may need this goroutine's P
		}
		if n%yieldCheck == 0 {
			if err := g.check(c, i); err != nil {
				return false, err
			}
			if time.Since(start) > yieldFor {
				return false, nil
			}
			gosched.Yield() // let the rank's other goroutines run too
		}
	}
}
