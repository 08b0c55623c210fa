package pmi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gorma-hpc/gorma/pmi"
)

// oneHost is a Handler for a job whose ranks all talk to this agent.
type oneHost struct{ x *pmi.Exchange }

func (h oneHost) Init(context.Context, int, string) (pmi.Info, error) {
	return pmi.Info{Size: 1, Secret: []byte("0123456789abcdef")}, nil
}
func (h oneHost) Fence(ctx context.Context, rank int, puts map[string][]byte) error {
	return h.x.Fence(ctx, rank, puts)
}
func (h oneHost) Get(_ context.Context, rank int, key string) ([]byte, error) {
	return h.x.Get(rank, key)
}
func (oneHost) Abort(int, int, string) {}
func (oneHost) Finalize(int)           {}
func (oneHost) Gone(int)               {}

// A rank publishes its endpoint card, fences, and reads it back.
func Example() {
	dir, _ := os.MkdirTemp("", "pmi-example")
	defer os.RemoveAll(dir)
	srv, err := pmi.Listen(filepath.Join(dir, "agent.sock"), oneHost{pmi.NewExchange(1)})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	ctx := context.Background()
	c, err := pmi.Dial(ctx, srv.Path(), 0, "job")
	if err != nil {
		panic(err)
	}
	defer c.Close()
	c.Put(ctx, "ep", []byte("card of rank 0"))
	c.Fence(ctx)
	card, _ := c.Get(ctx, 0, "ep")
	fmt.Println(string(card))
	c.Finalize(ctx)
	// Output: card of rank 0
}
