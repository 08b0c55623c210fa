package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime"
)

// Barrier returns once every rank of w has entered it. It is the runtime's dissemination
// barrier (ceil(log2 p) rounds of empty messages) on the collectives' own communication
// context, and counts as a collective call in the order every rank must keep.
func Barrier(ctx context.Context, w *runtime.World) error {
	c, err := begin(ctx, w, "barrier")
	if err != nil {
		return err
	}
	return c.end(runtime.Barrier(ctx, c.s.comm))
}
