package prof

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParseOMPI: ParseOMPI never panics, and what it accepts, Append writes so
// that ParseOMPI reads it back to the same File in Append's order.
func FuzzParseOMPI(f *testing.F) {
	paths, _ := filepath.Glob("testdata/ompi/*/prof.*.prof")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("I\t3\t0\t0 bytes\t4 msgs sent\t" + "1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n"))
	f.Add([]byte("D\tw\tprocs: \nA2O\t1\t2 bytes\t3 msgs sent\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ParseOMPI(bytes.NewReader(in))
		if err != nil {
			return
		}
		out := p.Append(nil)
		q, err := ParseOMPI(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("written form does not parse: %v\n%s", err, out)
		}
		if again := q.Append(nil); !bytes.Equal(again, out) {
			t.Fatalf("second write differs:\n%s\nfirst:\n%s", again, out)
		}
		if len(q.Lines) != len(p.Lines) || len(q.Comms) != len(p.Comms) {
			t.Fatalf("%d lines %d comms, read back %d and %d", len(p.Lines), len(p.Comms), len(q.Lines), len(q.Comms))
		}
		size := 1
		for _, l := range p.Lines {
			size = max(size, l.From+1, l.To+1)
		}
		for _, l := range p.Lines {
			r, err := p.Rank(l.From, size)
			if err != nil {
				t.Fatalf("Rank(%d, %d): %v", l.From, size, err)
			}
			if err := r.Validate(); err != nil {
				t.Fatalf("Rank(%d, %d) is not valid: %v", l.From, size, err)
			}
		}
	})
}

// FuzzReadRank: ReadRank never panics, and what it accepts is valid, snapshots
// into OMPI and Merge without error, and round-trips through WriteJSON.
func FuzzReadRank(f *testing.F) {
	c := New(1, 3)
	c.Send(0, 10)
	c.PutTo(2, 3)
	c.Call(CallFence, 0, 5)
	var b bytes.Buffer
	_ = c.Snapshot().WriteJSON(&b)
	f.Add(b.Bytes())
	f.Add([]byte(`{"rank":0,"size":1,"p2p":{"bytes":[0],"msgs":[0]},"coll":{"bytes":[0],"msgs":[0]},"put":{"bytes":[0],"msgs":[0]},"get":{"bytes":[0],"msgs":[0]},"calls":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ReadRank(bytes.NewReader(in))
		if err != nil {
			return
		}
		if _, err := ParseOMPI(bytes.NewReader(r.OMPI().Append(nil))); err != nil {
			t.Fatalf("OMPI form does not parse: %v", err)
		}
		if _, err := Merge([]*Rank{r}); err != nil {
			t.Fatalf("Merge of a valid rank: %v", err)
		}
		var out bytes.Buffer
		if err := r.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
		back, err := ReadRank(&out)
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip: %v\n%+v\nwant\n%+v", err, back, r)
		}
	})
}

// FuzzReadJob: ReadJob never panics, and what it accepts summarises, draws and
// round-trips through WriteJSON.
func FuzzReadJob(f *testing.F) {
	c := New(0, 2)
	c.Send(1, 10)
	c.Call(CallSend, 10, 7)
	j, _ := Merge([]*Rank{c.Snapshot()})
	var b bytes.Buffer
	_ = j.WriteJSON(&b)
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		j, err := ReadJob(bytes.NewReader(in))
		if err != nil {
			return
		}
		if err := j.WriteSummary(&bytes.Buffer{}, 5); err != nil {
			t.Fatal(err)
		}
		if err := HeatMap(&bytes.Buffer{}, j.Bytes(), "fuzz", "bytes"); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := j.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJob(&out)
		if err != nil || !reflect.DeepEqual(back, j) {
			t.Fatalf("round trip: %v\n%+v\nwant\n%+v", err, back, j)
		}
	})
}
