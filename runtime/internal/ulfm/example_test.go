package ulfm_test

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime/internal/ulfm"
)

// A group of four runs one Agree. Member 3 died before the call. Member 0, the first
// coordinator, dies once its Propose reached member 1; its other messages are lost.
// Member 1 takes over, and proposes again the value it had accepted: the AND of members
// 0 to 2's flags, member 3 failed. Member 0 contributed before it died, so it stays in.
func Example() {
	const n = 4
	flags := []uint64{0b111, 0b101, 0b110, 0b000}
	type packet struct {
		from int
		s    ulfm.Send
	}
	var wire []packet
	dead := []bool{false, false, false, true}
	send := func(from int, out []ulfm.Send) {
		for _, s := range out {
			b := s.M.Append(nil) // what the runtime puts on the wire
			m, err := ulfm.Decode(b)
			if err != nil {
				panic(err)
			}
			s.M = m
			wire = append(wire, packet{from, s})
		}
	}
	ag := make([]*ulfm.Agreement, n)
	for i := range 3 {
		known := ulfm.NewBitmap(n)
		known.Set(3)
		ag[i] = ulfm.NewAgreement(i, n, 1, []uint64{flags[i]}, known)
	}
	for i := range 3 {
		send(i, ag[i].Start())
	}
	proposes := 0
	for len(wire) > 0 {
		p := wire[0]
		wire = wire[1:]
		if dead[p.s.To] || dead[p.from] {
			continue
		}
		send(p.s.To, ag[p.s.To].Recv(p.from, p.s.M))
		if p.s.M.Kind == ulfm.KindPropose {
			proposes++
		}
		if proposes == 1 && !dead[0] {
			dead[0] = true
			send(1, ag[1].Failed(0))
			send(2, ag[2].Failed(0))
		}
	}
	for i := 1; i < 3; i++ {
		d, ok := ag[i].Decided()
		fmt.Printf("member %d: decided %v, AND %03b, failed %v\n", i, ok, d.And[0], d.Failed.Members())
	}
	// Output:
	// member 1: decided true, AND 100, failed [3]
	// member 2: decided true, AND 100, failed [3]
}
