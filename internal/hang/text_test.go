package hang

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// normal is r as ParseRecord returns it after AppendRecord: Members empty is nil.
func normal(r Record) Record {
	if len(r.Members) == 0 {
		r.Members = nil
	}
	return r
}

func TestRecordText(t *testing.T) {
	sub := coll("Allreduce", 2)
	sub.Comm, sub.Members, sub.Count, sub.Type, sub.Op = "World.split3", []int{0, 1, 2, 3, 8, 5, 6}, 8, "float64", "sum"
	tests := []struct {
		rec  Record
		want string
	}{
		{p2p("Recv", 1, 0), "call=Recv comm=World peer=1 tag=0 since=31200000000"},
		{sub, "call=Allreduce comm=World.split3 members=0-3,8,5-6 seq=2 count=8 type=float64 op=sum since=1000000000"},
		{Record{Call: "we ird=%\n", Comm: "ü", Peer: NoRank, Tag: -1, Root: -1, Count: -1},
			"call=we%20ird%3D%25%0A comm=%C3%BC"},
		{Record{}, "call= peer=0 tag=0 root=0 count=0"},
		{Record{Call: "Recv", API: "MPI_Recv", Comm: "World", Peer: 1, Tag: 7, Root: -1, Count: -1},
			"call=Recv api=MPI_Recv comm=World peer=1 tag=7"},
	}
	for _, tc := range tests {
		got := string(AppendRecord(nil, tc.rec))
		if got != tc.want {
			t.Errorf("AppendRecord = %q, want %q", got, tc.want)
			continue
		}
		back, err := ParseRecord(got)
		if err != nil {
			t.Errorf("ParseRecord(%q): %v", got, err)
		} else if !reflect.DeepEqual(back, normal(tc.rec)) {
			t.Errorf("ParseRecord(%q) = %+v, want %+v", got, back, tc.rec)
		}
	}
}

func TestParseRecordErrors(t *testing.T) {
	bad := []string{
		"",
		"comm=World",
		"call=Recv peer=-3",
		"call=Recv tag=-2",
		"call=Recv call=Send",
		"call=Recv  peer=1",
		"call=Recv peer",
		"call=a%2",
		"call=a%zz",
		"call=a\tb",
		"call=Recv members=3-1",
		"call=Recv members=1,,2",
		"call=Recv members=-1",
		"call=Recv members=0-99999999",
		"call=Recv seq=-1",
		"call=Recv peer=99999999999",
		"call=" + strings.Repeat("a", MaxString+1),
		"Call=Recv",
	}
	for _, s := range bad {
		if r, err := ParseRecord(s); err == nil {
			t.Errorf("ParseRecord(%q) = %+v, want an error", s, r)
		} else if !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseRecord(%q): %v does not wrap ErrSyntax", s, err)
		}
	}
	if r, err := ParseRecord("call=Recv future=x%20y peer=1"); err != nil || r.Peer != 1 {
		t.Errorf("an unknown key: %+v, %v; want it skipped", r, err)
	}
}

func TestAppendRecordBounds(t *testing.T) {
	m := make([]int, 2*MaxMembers)
	for i := range m {
		m[i] = (i * 7919) % MaxRank // no runs: the longest members text
	}
	r := Record{Call: strings.Repeat("%", 2*MaxString), Comm: strings.Repeat("\x00", MaxString), Members: m,
		Type: strings.Repeat("t", MaxString), Op: strings.Repeat("o", MaxString), Win: strings.Repeat("w", MaxString),
		Seq: 1<<64 - 1, Peer: 1<<31 - 1, Tag: 1<<31 - 1, Root: 1<<31 - 1, Count: 1<<31 - 1, Since: -1 << 63}
	b := AppendRecord(nil, r)
	if len(b) > MaxRecordLen {
		t.Fatalf("AppendRecord wrote %d bytes, more than MaxRecordLen %d", len(b), MaxRecordLen)
	}
	back, err := ParseRecord(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Call) != MaxString || len(back.Members) != MaxMembers {
		t.Errorf("cut to %d bytes of call and %d members, want %d and %d", len(back.Call), len(back.Members), MaxString, MaxMembers)
	}
}

func TestReportText(t *testing.T) {
	rep := Report{Rank: 3, Host: "node 1", State: Blocked, Progress: 12,
		Records: []Record{p2p("Recv", 1, 0), coll("Barrier", 2)},
		Stacks:  "goroutine 1 [chan receive]:\nmain.main()\n\n"}
	want := "rank=3 host=node%201 state=blocked progress=12 omitted=0 records=2 stacks=41\n" +
		"call=Recv comm=World peer=1 tag=0 since=31200000000\n" +
		"call=Barrier comm=World seq=2 since=1000000000\n" +
		"goroutine 1 [chan receive]:\nmain.main()\n\n\n"
	got := string(AppendReport(nil, rep))
	if got != want {
		t.Fatalf("AppendReport =\n%q\nwant\n%q", got, want)
	}
	back, err := ParseReport(got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rep) {
		t.Errorf("ParseReport = %+v, want %+v", back, rep)
	}
	foreign := Report{Rank: 1, Host: "node1", Pid: 4242, State: Foreign, Progress: 9,
		PMI: PMICalls{Wire: "PMIx", Wait: "fence", Last: "fence", Since: 31 * time.Second}}
	wantForeign := "rank=1 host=node1 state=foreign progress=9 omitted=0 records=0 stacks=0 pid=4242 pmi=PMIx pmiwait=fence pmilast=fence pmisince=31000000000\n"
	if got := string(AppendReport(nil, foreign)); got != wantForeign {
		t.Errorf("AppendReport of a foreign rank =\n%q\nwant\n%q", got, wantForeign)
	}
	withDone := blocked(2, coll("Barrier", 2))
	withDone.Done = []Record{coll("Bcast", 1)}
	wantDone := "rank=2 host= state=blocked progress=0 omitted=0 records=1 stacks=0 done=1\n" +
		"call=Barrier comm=World seq=2 since=1000000000\n" +
		"call=Bcast comm=World seq=1 since=1000000000\n"
	if got := string(AppendReport(nil, withDone)); got != wantDone {
		t.Errorf("AppendReport with Done =\n%q\nwant\n%q", got, wantDone)
	}
	for _, s := range []Report{withDone, state(0, Running), state(1, Exited), state(3, Stopped), {Rank: 2, State: Silent, Host: "h"}, foreign,
		{Rank: 0, Pid: 1, State: Finalized, End: "exit 0"},
		{Rank: 5, State: Foreign, PMI: PMICalls{Wire: "PMI-1", Last: "finalize", Finalized: true, Since: -1}}} {
		b := AppendReport(nil, s)
		if back, err := ParseReport(string(b)); err != nil || !reflect.DeepEqual(back, s) {
			t.Errorf("round trip of %+v: %+v, %v", s, back, err)
		}
	}
}

func TestReportBounds(t *testing.T) {
	recs := make([]Record, MaxRecords+10)
	for i := range recs {
		recs[i] = p2p("Recv", i, 0)
	}
	rep := Report{Rank: 0, State: Blocked, Records: recs, Omitted: 1, Stacks: strings.Repeat("s", MaxStacks+1)}
	back, err := ParseReport(string(AppendReport(nil, rep)))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Records) != MaxRecords || back.Omitted != 11 || len(back.Stacks) != MaxStacks {
		t.Errorf("%d records, %d omitted, %d stack bytes; want %d, 11, %d", len(back.Records), back.Omitted, len(back.Stacks), MaxRecords, MaxStacks)
	}
	if back.Line() != "rank 0: Recv(src=0, tag=0, World) for 31.2s (+266 more)" {
		t.Errorf("Line() = %q", back.Line())
	}
}

// The longest header AppendReport writes, every string at MaxString bytes that each
// escape to three, parses.
func TestReportHeaderBounds(t *testing.T) {
	long := strings.Repeat("\x00", MaxString+10)
	rep := Report{Rank: 1<<31 - 1, Host: long, Pid: 1<<31 - 1, State: Foreign, Progress: 1<<64 - 1, Omitted: 1<<31 - 1,
		Trace: long, End: long, PMI: PMICalls{Wire: long, Wait: long, Last: long, Since: -1 << 63, Finalized: true}}
	b := AppendReport(nil, rep)
	back, err := ParseReport(string(b))
	if err != nil {
		t.Fatalf("ParseReport of a %d-byte report: %v", len(b), err)
	}
	if len(back.Host) != MaxString || len(back.PMI.Last) != MaxString || !back.PMI.Finalized || back.Pid != rep.Pid {
		t.Errorf("parsed %d bytes of host, %d of the last request, finalized %v, pid %d", len(back.Host), len(back.PMI.Last),
			back.PMI.Finalized, back.Pid)
	}
}

func TestParseReportErrors(t *testing.T) {
	ok := "rank=0 state=running records=0 stacks=0\n"
	if _, err := ParseReport(ok); err != nil {
		t.Fatalf("ParseReport(%q): %v", ok, err)
	}
	bad := []string{
		"",
		"rank=0 state=running records=0 stacks=0",
		"rank=0 state=running records=0 stacks=0\nextra",
		"state=running records=0 stacks=0\n",
		"rank=0 records=0 stacks=0\n",
		"rank=0 state=running stacks=0\n",
		"rank=0 state=running records=0\n",
		"rank=0 state=asleep records=0 stacks=0\n",
		"rank=-1 state=running records=0 stacks=0\n",
		"rank=0 state=blocked records=1 stacks=0\n",
		"rank=0 state=blocked records=1 stacks=0\nperr=1\n",
		"rank=0 state=blocked records=999 stacks=0\n",
		"rank=0 state=blocked records=0 stacks=0 done=1\n",
		"rank=0 state=blocked records=0 stacks=0 done=1\nperr=1\n",
		"rank=0 state=blocked records=0 stacks=0 done=999\n",
		"rank=0 state=blocked records=0 stacks=0 done=-1\n",
		"rank=0 state=running records=0 stacks=5\nabc\n",
		"rank=0 state=running records=0 stacks=3\nabcd\n",
		"rank=0 state=running records=0 stacks=3\nabc",
		"rank=0 state=running records=0 stacks=9999999\n",
		"rank=0 state=foreign records=0 stacks=0 pid=-1\n",
		"rank=0 state=foreign records=0 stacks=0 pmifinalized=0\n",
		"rank=0 state=foreign records=0 stacks=0 pmisince=1s\n",
		"rank=0 state=foreign records=0 stacks=0 pmiwait=a%zz\n",
		"rank=0 state=running records=0 stacks=0 host=" + strings.Repeat("a", 9000) + "\n",
	}
	for _, s := range bad {
		if r, err := ParseReport(s); err == nil {
			t.Errorf("ParseReport(%q) = %+v, want an error", s, r)
		} else if !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseReport(%q): %v does not wrap ErrSyntax", s, err)
		}
	}
}

// FuzzParseRecord: ParseRecord never panics, and what it accepts re-encodes to a form
// that parses to the same value and re-encodes to the same bytes.
func FuzzParseRecord(f *testing.F) {
	f.Add("call=Recv comm=World peer=1 tag=0 since=31200000000")
	f.Add("call=Allreduce comm=World.split3 members=0-3,8,5-6 seq=2 count=8 type=float64 op=sum")
	f.Add("call=we%20ird%3D%25%0A comm=%c3%bc win=w future=1")
	f.Add("call= peer=-2 tag=-1 root=-1 count=-1 since=-5")
	f.Add("call=Recv api=MPI_Recv comm=World peer=1 tag=7")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRecord(s)
		if err != nil {
			return
		}
		b := AppendRecord(nil, r)
		r2, err := ParseRecord(string(b))
		if err != nil {
			t.Fatalf("ParseRecord(%q) of AppendRecord's own output: %v", b, err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", r, r2)
		}
		if b2 := AppendRecord(nil, r2); string(b2) != string(b) {
			t.Fatalf("re-encoding differs:\n%q\n%q", b, b2)
		}
		_ = r.String()
	})
}

// FuzzParseReport: as FuzzParseRecord, for whole reports; Line and Diagnose never panic
// on what parses.
func FuzzParseReport(f *testing.F) {
	f.Add("rank=3 host=node%201 state=blocked progress=12 omitted=0 records=1 stacks=4\ncall=Recv peer=1 tag=0\nabcd\n")
	f.Add("rank=0 state=running records=0 stacks=0\n")
	f.Add("rank=2 state=blocked records=1 stacks=2 done=1\ncall=Barrier seq=2\ncall=Bcast seq=1 root=0\nab\n")
	f.Add("rank=1 state=blocked records=2 stacks=0 x=y\ncall=Barrier seq=1 members=0-1\ncall=Recv peer=-1\n")
	f.Add("rank=1 host=h state=foreign progress=9 omitted=0 records=0 stacks=0 pid=4242 pmi=PMIx pmiwait=fence pmisince=31000000000\n")
	f.Add("rank=0 state=finalized records=0 stacks=0 pid=7 end=exit%200 pmi=PMI-1 pmilast=finalize pmifinalized=1\n")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReport(s)
		if err != nil {
			return
		}
		b := AppendReport(nil, r)
		r2, err := ParseReport(string(b))
		if err != nil {
			t.Fatalf("ParseReport(%q) of AppendReport's own output: %v", b, err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the report:\n%+v\n%+v", r, r2)
		}
		if b2 := AppendReport(nil, r2); string(b2) != string(b) {
			t.Fatalf("re-encoding differs:\n%q\n%q", b, b2)
		}
		_ = r.Line()
		peer := Report{Rank: r.Rank + 1, State: Blocked, Records: []Record{{Call: "Recv", Peer: r.Rank, Since: time.Second}}}
		_ = Diagnose([]Report{r, peer})
		_ = ForeignSummary([]Report{r, peer})
	})
}
