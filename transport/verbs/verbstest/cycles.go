package verbstest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Cycle cases (DeviceCycles, QPCycles): devices opened and closed, and queue pairs created,
// connected and closed, many times in one process. Afterwards goroutines, fds, /dev/shm files
// and mappings must be back to the baseline (mappings within a small slack for the Go heap's
// own growth), and a device's arena bytes in use and live MRs back to where they were.

type leakUsage struct{ goroutines, fds, maps, shm int }

func leakMeasure() leakUsage {
	fds, _ := os.ReadDir("/proc/self/fd")
	maps, _ := os.ReadFile("/proc/self/maps")
	shm, _ := filepath.Glob(fmt.Sprintf("/dev/shm/gorma-%d-*", os.Getpid()))
	return leakUsage{goruntime.NumGoroutine(), len(fds), bytes.Count(maps, []byte("\n")), len(shm)}
}

// leakSettle polls, for at most 5 s scaled by the test slack, until goroutines, fds and
// /dev/shm files are back to base, and returns the last reading.
func leakSettle(base leakUsage) leakUsage {
	deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
	for {
		u := leakMeasure()
		if u.goroutines <= base.goroutines && u.fds <= base.fds && u.shm <= base.shm || time.Now().After(deadline) {
			return u
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func checkLeakUsage(t *testing.T, what string, base, now leakUsage) {
	t.Helper()
	if now.goroutines > base.goroutines || now.fds > base.fds || now.shm > base.shm || now.maps > base.maps+16 {
		t.Errorf("%s: %+v, baseline %+v", what, now, base)
		if now.goroutines > base.goroutines {
			buf := make([]byte, 1<<20)
			t.Logf("goroutines:\n%s", buf[:goruntime.Stack(buf, true)])
		}
	}
}

// leakQP is a queue pair with its CQ on dev.
type leakQP struct {
	cq verbs.CQ
	qp verbs.QP
}

func newLeakQP(t testing.TB, pd verbs.PD, dev verbs.Device) leakQP {
	t.Helper()
	cq, err := dev.CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.ToInit(); err != nil {
		t.Fatal(err)
	}
	return leakQP{cq, qp}
}

// leakWrite connects a and b, RDMA-writes 4 KiB from a into b and waits for the completion.
func leakWrite(t testing.TB, a, b leakQP, src, dst verbs.MR) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
	defer cancel()
	// Both ends at once: a tcp QP's ToRTS waits for its peer's.
	errc := make(chan error, 1)
	go func() { errc <- verbs.Connect(ctx, b.qp, a.qp.Endpoint()) }()
	err := verbs.Connect(ctx, a.qp, b.qp.Endpoint())
	if err2 := <-errc; err == nil {
		err = err2
	}
	if err != nil {
		t.Fatal(err)
	}
	wr := verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
		Local: src.Bytes()[:4096], LKey: src.LKey(), Remote: verbs.RemoteAddr{RKey: dst.RKey()}}
	if err := a.qp.PostSend(&wr); err != nil {
		t.Fatal(err)
	}
	wc := make([]verbs.WC, 1)
	for {
		n, err := a.cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			if wc[0].Status != verbs.Success {
				t.Fatalf("write completion %+v", wc[0])
			}
			return
		}
		if err := a.cq.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// testDeviceCycles opens two devices, connects a queue pair of each to the other,
// writes through it and closes both devices, 100 times.
func testDeviceCycles(t *testing.T, f Factory) {
	const cycles = 100
	cycle := func() {
		var devs [2]verbs.Device
		var qps [2]leakQP
		var mrs [2]verbs.MR
		for i := range devs {
			dev, err := verbs.Open(f.Provider, leakCfg(f))
			if err != nil {
				t.Fatal(err)
			}
			devs[i] = dev
			pd, err := dev.AllocPD()
			if err != nil {
				t.Fatal(err)
			}
			qps[i] = newLeakQP(t, pd, dev)
			if mrs[i], err = pd.AllocMR(1<<16, verbs.AccessAll); err != nil {
				t.Fatal(err)
			}
		}
		leakWrite(t, qps[0], qps[1], mrs[0], mrs[1])
		for _, d := range devs {
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cycle()
	base := leakMeasure()
	for range cycles {
		cycle()
	}
	checkLeakUsage(t, fmt.Sprintf("after %d device cycles", cycles), base, leakSettle(base))
}

// testQPCycles keeps two devices open and creates, connects, uses and closes a queue
// pair on each (with its CQ and MRs) 200 times.
func testQPCycles(t *testing.T, f Factory) {
	const cycles = 200
	var devs [2]verbs.Device
	var pds [2]verbs.PD
	for i := range devs {
		dev, err := verbs.Open(f.Provider, leakCfg(f))
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		devs[i] = dev
		if pds[i], err = dev.AllocPD(); err != nil {
			t.Fatal(err)
		}
	}
	cycle := func() {
		var qps [2]leakQP
		var mrs [2]verbs.MR
		for i := range qps {
			qps[i] = newLeakQP(t, pds[i], devs[i])
			var err error
			if mrs[i], err = pds[i].AllocMR(1<<16, verbs.AccessAll); err != nil {
				t.Fatal(err)
			}
		}
		leakWrite(t, qps[0], qps[1], mrs[0], mrs[1])
		for i := range qps {
			if err := qps[i].qp.Close(); err != nil {
				t.Fatal(err)
			}
			if err := qps[i].cq.Close(); err != nil {
				t.Fatal(err)
			}
			if err := mrs[i].Dereg(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cycle()
	base := leakMeasure()
	st0 := [2]verbs.ArenaStats{devs[0].Stats(), devs[1].Stats()}
	for range cycles {
		cycle()
	}
	checkLeakUsage(t, fmt.Sprintf("after %d queue pair cycles", cycles), base, leakSettle(base))
	for i, d := range devs {
		if st := d.Stats(); st.InUse != st0[i].InUse || st.LiveMRs != st0[i].LiveMRs {
			t.Errorf("device %d after %d queue pair cycles: %d bytes in use and %d live MRs, want %d and %d",
				i, cycles, st.InUse, st.LiveMRs, st0[i].InUse, st0[i].LiveMRs)
		}
	}
}

// leakCfg is a small device, as these cases open many.
func leakCfg(f Factory) verbs.Config {
	cfg := factoryConfig(f, "cycles")
	cfg.ArenaSize, cfg.MaxMRs = 64<<20, 256
	return cfg
}
