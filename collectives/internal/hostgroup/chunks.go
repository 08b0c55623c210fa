package hostgroup

// Chunks moves a long vector through the big buffers, one chunk per step: the one loop
// of every chunked algorithm. Each member has n elements of es bytes to move, in blocks
// of them per chunk (1: the chunk is one block; p: one block per member). A chunk holds
// per = Chunk()/(blocks*es) elements of each block (at least 1).
//
// For each chunk [lo, hi) of [0, n) it takes the next step's big buffer b, calls
// in(lo, hi, b) to copy this member's part into its big buffer b, publishes the step
// and waits for every member, then calls out(lo, hi, b) to copy the others' parts out of
// theirs. With bytes >= 0 the first chunk's step carries the call's meta word and checks
// the members' call numbers and byte counts (bytes); with bytes < 0 none does (a call
// whose first step came before). Consecutive chunks alternate between the two big
// buffers, so a buffer is written again only after every member has read it.
func (g *Group) Chunks(c Call, n, es, blocks, bytes int, in, out func(lo, hi, b int)) error {
	per := max(g.chunk/(blocks*es), 1)
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		v := g.Next()
		b, err := g.TakeBig(c, v, v+1)
		if err != nil {
			return err
		}
		in(lo, hi, b)
		check := -1
		if lo == 0 && bytes >= 0 {
			g.SetMeta(v, bytes)
			check = bytes
		}
		if err := g.Step(c, v, check); err != nil {
			return err
		}
		out(lo, hi, b)
	}
	return nil
}
