package trace

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func sampleDump() Dump {
	return Dump{Rank: 3, Origin: 1_700_000_000_000_000_000, Total: 10, Lost: 1,
		Labels: []string{"Send", "Allreduce ring", "héllo \"q\""},
		Events: []Event{
			{Kind: Send, Start: 10, End: 20, Bytes: 8, Flow: 1, Peer: 4, Tag: 7, Label: 0},
			{Kind: Collective, Start: 30, End: 90, Bytes: 64, Peer: NoPeer, Tag: -1, Label: 1},
			{Kind: Region, Start: 95, End: 95, Bytes: -1, Peer: NoPeer, Tag: -1, Label: 2},
		},
		Seqs: []uint64{6, 7, 9}}
}

func TestDumpRoundTrip(t *testing.T) {
	open := sampleDump()
	open.Open = []Event{{Kind: Send, Start: 96, End: 120, Bytes: 1 << 20, Peer: 4, Tag: 7, Label: 0}}
	for _, d := range []Dump{sampleDump(), open, {Labels: []string{}, Events: []Event{}, Seqs: []uint64{}}} {
		b, err := AppendDump(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeDump(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Fatalf("decoded %+v, want %+v", got, d)
		}
		h, err := DecodeHeader(b[:HeaderLen])
		if want := (Header{Rank: d.Rank, Origin: d.Origin, Total: d.Total, Lost: d.Lost, Labels: len(d.Labels),
			Events: len(d.Events), Open: len(d.Open), First: d.first()}); err != nil || h != want {
			t.Errorf("header %+v, %v; want %+v", h, err, want)
		}
	}
	if f := sampleDump().first(); f != 10 {
		t.Errorf("first start %d, want 10", f)
	}
}

func TestDumpRejects(t *testing.T) {
	good, _ := AppendDump(nil, sampleDump())
	cases := map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XTRC"), good[4:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte(nil), good...), 0),
	}
	bad := sampleDump()
	bad.Events[0].End = 5
	cases["end before start"] = encode(nil, bad)
	bad = sampleDump()
	bad.Seqs[1] = 6
	cases["seqs out of order"] = encode(nil, bad)
	bad = sampleDump()
	bad.Events[2].Label = 3
	cases["label out of range"] = encode(nil, bad)
	withOpen := sampleDump()
	withOpen.Open = []Event{{Kind: Recv, Start: 5, End: 100, Label: 0}}
	b := encode(nil, withOpen)
	le.PutUint64(b[48:], 7)
	cases["first start"] = b
	b = encode(nil, withOpen)
	le.PutUint64(b[len(b)-eventLen:], 3)
	cases["open call with an index"] = b
	for name, b := range cases {
		if _, err := DecodeDump(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v, want ErrFormat", name, err)
		}
	}
	if _, err := AppendDump(nil, bad); !errors.Is(err, ErrFormat) {
		t.Errorf("AppendDump of a bad dump: %v, want ErrFormat", err)
	}
}

// FuzzDecodeDump checks that DecodeDump never panics and that whatever it accepts
// encodes back to the same bytes.
func FuzzDecodeDump(f *testing.F) {
	good, _ := AppendDump(nil, sampleDump())
	f.Add(good)
	open := sampleDump()
	open.Open = []Event{{Kind: Wait, Start: 96, End: 99, Label: 1}}
	withOpen, _ := AppendDump(nil, open)
	f.Add(withOpen)
	empty, _ := AppendDump(nil, Dump{})
	f.Add(empty)
	f.Add([]byte("GTRC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDump(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		out, err := AppendDump(nil, d)
		if err != nil {
			t.Fatalf("decoded dump does not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", out, b)
		}
	})
}
