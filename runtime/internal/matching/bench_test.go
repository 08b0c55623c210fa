package matching

import (
	"fmt"
	"testing"
)

// BenchmarkPostedMatch posts a receive behind depth others that do not take the message,
// matches the message and removes the receive: the work of one arrival on a posted queue.
func BenchmarkPostedMatch(b *testing.B) {
	for _, depth := range []int{0, 8, 64} {
		b.Run(fmt.Sprint("depth=", depth), func(b *testing.B) {
			var q Posted[item]
			others := make([]item, depth)
			for i := range others {
				q.Push(&others[i].link, &others[i], Envelope{Ctx: 1, Src: i + 1, Tag: 0})
			}
			var r item
			m := Envelope{Ctx: 1, Src: 0, Tag: 7}
			b.ReportAllocs()
			for b.Loop() {
				q.Push(&r.link, &r, Envelope{Ctx: 1, Src: AnySource, Tag: 7})
				if got := q.Match(m); got != &r {
					b.Fatal("no match")
				}
				q.Remove(&r.link)
			}
		})
	}
}
