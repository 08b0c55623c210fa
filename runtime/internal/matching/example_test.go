package matching_test

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime/internal/matching"
)

type recv struct {
	name string
	link matching.Link[recv]
}

type msg struct {
	body string
	link matching.Link[msg]
}

func Example() {
	var posted matching.Posted[recv]
	var ux matching.Unexpected[msg]

	// A message arrives: no receive is posted, so it waits.
	m := &msg{body: "hello"}
	env := matching.Envelope{Ctx: 1, Src: 3, Tag: 7}
	if posted.Take(env) == nil {
		ux.Push(&m.link, m, env)
	}

	// A receive for any source on tag 7 takes it.
	want := matching.Envelope{Ctx: 1, Src: matching.AnySource, Tag: 7}
	if got := ux.Take(want); got != nil {
		fmt.Println("received", got.body)
	}

	// A receive that finds nothing is posted, and takes the next message it matches.
	r := &recv{name: "from 2"}
	want = matching.Envelope{Ctx: 1, Src: 2, Tag: matching.AnyTag}
	if ux.Take(want) == nil {
		posted.Push(&r.link, r, want)
	}
	fmt.Println("taken by", posted.Take(matching.Envelope{Ctx: 1, Src: 2, Tag: 0}).name)
	// Output:
	// received hello
	// taken by from 2
}
