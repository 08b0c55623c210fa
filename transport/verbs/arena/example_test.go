package arena_test

import (
	"fmt"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// An arena hands out keyed regions; freed bytes stay mapped and come back warm, under a new
// key, while the old key stops working. (Regions that peers may write go to the
// quarantine first and come back only when no other free space serves an allocation.)
func Example() {
	a, err := arena.New(arena.Config{Name: "example", Size: 64 << 20})
	if err != nil {
		panic(err)
	}
	defer a.Close()

	r, _ := a.Alloc(1<<20, verbs.RemoteRead)
	clear(r.Bytes) // fault the pages in
	old := r.Key
	a.Free(r)

	r2, _ := a.Alloc(1<<20, verbs.RemoteRead)
	_, staleOK := a.Table().Pin(old, 0, 8, verbs.RemoteRead)
	st := a.Stats()
	fmt.Println("same bytes:", r2.Off == r.Off)
	fmt.Println("old key works:", staleOK)
	fmt.Println("pages reused warm:", st.PageInsAvoided)
	// Output:
	// same bytes: true
	// old key works: false
	// pages reused warm: 256
}
