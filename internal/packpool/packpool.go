package packpool

import (
	"math/bits"
	"sync"
)

// Buf is a pooled packing buffer; B is sliced to the length in use.
type Buf struct{ B []byte }

// pools hold buffers by size class: class k holds buffers of 2^k bytes.
var pools [48]sync.Pool

// Get returns a buffer of n bytes from the pool of its size class (a new one if the
// pool is empty, or n is beyond the largest class).
func Get(n int) *Buf {
	k := 0
	if n > 1 {
		k = bits.Len(uint(n - 1))
	}
	if k >= len(pools) {
		return &Buf{B: make([]byte, n)}
	}
	p, _ := pools[k].Get().(*Buf)
	if p == nil {
		p = &Buf{B: make([]byte, 1<<k)}
	}
	p.B = p.B[:n]
	return p
}

// Put returns p to the pool of its size class. p must not be used afterwards.
func Put(p *Buf) {
	k := bits.Len(uint(cap(p.B))) - 1
	if k < 0 || k >= len(pools) || cap(p.B) != 1<<k {
		return
	}
	pools[k].Put(p)
}
