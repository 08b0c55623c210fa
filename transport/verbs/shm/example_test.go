package shm_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/transport/verbs"
	_ "github.com/gorma-hpc/gorma/transport/verbs/shm"
)

// Two devices (in one process here; normally one per rank process) connect a QP each and
// one writes into the other's memory with RDMA. The endpoint bytes and the remote key
// would travel between processes through the launcher or the runtime.
func Example() {
	ctx := context.Background()
	cfg := verbs.Config{ArenaSize: 16 << 20}
	open := func(name string) (verbs.Device, verbs.PD, verbs.CQ, verbs.QP) {
		cfg.Name = name
		dev, _ := verbs.Open("shm", cfg)
		pd, _ := dev.AllocPD()
		cq, _ := dev.CreateCQ(16)
		qp, _ := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
		qp.ToInit()
		return dev, pd, cq, qp
	}
	devA, pdA, cqA, qpA := open("rank 0")
	defer devA.Close()
	devB, pdB, _, qpB := open("rank 1")
	defer devB.Close()
	verbs.Connect(ctx, qpA, qpB.Endpoint())
	verbs.Connect(ctx, qpB, qpA.Endpoint())

	window, _ := pdB.AllocMR(4096, verbs.RemoteWrite|verbs.RemoteRead)
	src, _ := pdA.AllocMR(5, 0)
	copy(src.Bytes(), "hello")
	qpA.PostSend(&verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
		Local: src.Bytes(), LKey: src.LKey(), Remote: verbs.RemoteAddr{RKey: window.RKey(), Offset: 100}})
	wc := make([]verbs.WC, 1)
	cqA.Wait(ctx)
	cqA.Poll(wc)
	fmt.Println(wc[0].Status, string(window.Bytes()[100:105]))
	// Output: Success hello
}
