package tcp_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

// Two tcp devices connect a QP each (both sides call Connect; one dials, one accepts and
// both prove they hold the job secret), then one reads the other's memory with RDMA. The
// target's progress goroutine serves the read: its application code never calls in.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	cfg := verbs.Config{ArenaSize: 16 << 20, Provider: tcp.Options{Secret: []byte("per-job secret, 16+ bytes")}}
	open := func() (verbs.Device, verbs.PD, verbs.CQ, verbs.QP) {
		dev, err := verbs.Open("tcp", cfg)
		if err != nil {
			panic(err)
		}
		pd, _ := dev.AllocPD()
		cq, _ := dev.CreateCQ(16)
		qp, _ := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
		qp.ToInit()
		return dev, pd, cq, qp
	}
	devA, pdA, cqA, qpA := open()
	defer devA.Close()
	devB, pdB, _, qpB := open()
	defer devB.Close()
	done := make(chan error)
	go func() { done <- verbs.Connect(ctx, qpB, qpA.Endpoint()) }()
	if err := verbs.Connect(ctx, qpA, qpB.Endpoint()); err != nil {
		panic(err)
	}
	if err := <-done; err != nil {
		panic(err)
	}

	remote, _ := pdB.AllocMR(64, verbs.RemoteRead)
	copy(remote.Bytes()[8:], "over tcp")
	dst, _ := pdA.AllocMR(8, verbs.LocalWrite)
	qpA.PostSend(&verbs.SendWR{WRID: 7, Op: verbs.OpRDMARead, Flags: verbs.Signaled,
		Local: dst.Bytes(), LKey: dst.LKey(), Remote: verbs.RemoteAddr{RKey: remote.RKey(), Offset: 8}})
	wc := make([]verbs.WC, 1)
	for n := 0; n == 0; n, _ = cqA.Poll(wc) {
		cqA.Wait(ctx)
	}
	fmt.Println(wc[0].WRID, wc[0].Status, string(dst.Bytes()))
	// Output: 7 Success over tcp
}
