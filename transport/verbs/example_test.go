package verbs_test

import (
	"fmt"

	"github.com/gorma-hpc/gorma/transport/verbs"
	_ "github.com/gorma-hpc/gorma/transport/verbs/shm"
	_ "github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

// Providers register themselves when their package is imported; Lookup finds them and
// Caps tells a caller what each can do without a type switch.
func ExampleLookup() {
	for _, name := range []string{"shm", "tcp"} {
		p, ok := verbs.Lookup(name)
		if !ok {
			panic(name + " not registered: " + fmt.Sprint(verbs.Providers()))
		}
		fmt.Printf("%s: cross-host %v, zero-copy %v\n", name,
			p.Caps().Has(verbs.CapCrossHost), p.Caps().Has(verbs.CapZeroCopy))
	}
	// Output:
	// shm: cross-host false, zero-copy true
	// tcp: cross-host true, zero-copy false
}
