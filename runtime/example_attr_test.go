package runtime_test

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// libState is what a library keeps per World: its own World for its traffic.
type libState struct{ comm *runtime.World }

// libKey caches libState on the Worlds the library is used with. A Dup of such a World
// does not inherit it (nil copy function): the library makes a fresh one on first use.
// The delete function frees the library's World with the user's.
var libKey = runtime.NewKeyval(nil, func(_ *runtime.World, s *libState) {
	s.comm.Free()
})

// stateFor returns the library's state for w, making it on first use (collective over w:
// every rank calls it at the same point).
func stateFor(w *runtime.World) (*libState, error) {
	if s, ok, err := runtime.GetAttr(w, libKey); err != nil || ok {
		return s, err
	}
	c, err := w.Dup()
	if err != nil {
		return nil, err
	}
	s := &libState{comm: c}
	return s, runtime.SetAttr(w, libKey, s)
}

// A library caches its own World on the user's World (MPI's attribute caching): the
// first call makes it, later calls find it, and the user's Free frees it.
func ExampleNewKeyval() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	user, err := w.Dup()
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := stateFor(user)
	b, _ := stateFor(user)
	fmt.Println("same state:", a == b)
	user.Free() // runs the delete function: the library's World is freed too
	fmt.Println("library World freed:", substrate.FreedErr(a.comm) != nil)
	// Output:
	// same state: true
	// library World freed: true
}

// A copy function decides what a Dup inherits: here a counter of generations.
func ExampleCopyOnDup() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	tag := runtime.NewKeyval(runtime.CopyOnDup[string], nil)
	gen := runtime.NewKeyval(func(_ *runtime.World, g int) (int, bool) { return g + 1, true }, nil)
	runtime.SetAttr(w, tag, "solver")
	runtime.SetAttr(w, gen, 0)
	d, err := w.Dup()
	if err != nil {
		fmt.Println(err)
		return
	}
	t, _, _ := runtime.GetAttr(d, tag)
	g, _, _ := runtime.GetAttr(d, gen)
	fmt.Println(t, g)
	d.Free()
	// Output: solver 1
}

// Names label Worlds in a program's own messages; a Dup starts unnamed, as in MPI.
func ExampleWorld_SetName() {
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Finalize(ctx)
	d, err := w.Dup()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q %q\n", w.Name(), d.Name())
	d.SetName("halo")
	fmt.Printf("%q\n", d.Name())
	d.Free()
	// Output:
	// "WORLD" ""
	// "halo"
}
