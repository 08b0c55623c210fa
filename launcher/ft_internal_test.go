package launcher

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
)

// ftAgentEnd is an agent's end of a real control connection in an internal test of the
// submitter: it collects the frames the submitter sends.
type ftAgentEnd struct {
	frames chan ftFrame
}

type ftFrame struct {
	t    frameType
	body []byte
}

// next returns the next frame other than a ping.
func (a *ftAgentEnd) next(t *testing.T) ftFrame {
	t.Helper()
	select {
	case f := <-a.frames:
		return f
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatal("no frame from the submitter")
	}
	return ftFrame{}
}

// none fails if a frame is waiting.
func (a *ftAgentEnd) none(t *testing.T) {
	t.Helper()
	select {
	case f := <-a.frames:
		t.Errorf("unexpected %v frame: %s", f.t, f.body)
	default:
	}
}

// ftSubmitter returns a submitter of a --ft job of 2 ranks on each of hosts, with a link
// over a real control connection to each host's end.
func ftSubmitter(t *testing.T, stderr io.Writer, hosts ...string) (*submitter, []*ftAgentEnd) {
	t.Helper()
	var hs []HostSlots
	for _, h := range hosts {
		hs = append(hs, HostSlots{Name: h, Slots: 2})
	}
	roster, err := Place(hs, 2*len(hosts), Placement{MapBy: MapCore})
	if err != nil {
		t.Fatal(err)
	}
	s := &submitter{spec: jobSpec{FT: true}, roster: roster, stderr: stderr,
		out: newOutputSink(io.Discard, io.Discard, false, false, ""), ranks: make([]rankState, roster.Size)}
	var ends []*ftAgentEnd
	for i, h := range hosts {
		client, server, _ := handshakePair(t)
		s.links = append(s.links, &agentLink{idx: i, host: h, cc: client})
		end := &ftAgentEnd{frames: make(chan ftFrame, 64)}
		go func() {
			for {
				ft, p, err := server.recv()
				if err != nil {
					return
				}
				end.frames <- ftFrame{ft, slices.Clone(p)}
			}
		}()
		ends = append(ends, end)
	}
	for r := range s.ranks {
		s.ranks[r].pid, s.ranks[r].started, s.ranks[r].connected = 100+r, true, true
	}
	return s, ends
}

// wantProcFailed checks that f tells of rank's failure with cause.
func wantProcFailed(t *testing.T, f ftFrame, rank int, host, cause string, code int) {
	t.Helper()
	var m procFailedMsg
	if f.t != fProcFailed || json.Unmarshal(f.body, &m) != nil {
		t.Fatalf("%v frame %s, want proc-failed", f.t, f.body)
	}
	if want := (procFailedMsg{Rank: rank, Host: host, Code: code, Cause: cause}); m != want {
		t.Fatalf("proc-failed %+v, want %+v", m, want)
	}
}

// wantFenceDone checks that f completes round with the puts of ranks.
func wantFenceDone(t *testing.T, f ftFrame, round int, ranks ...int) {
	t.Helper()
	if f.t != fFenceDone {
		t.Fatalf("%v frame %s, want fence-done", f.t, f.body)
	}
	m, err := decodeFenceDone(f.body)
	if err != nil {
		t.Fatal(err)
	}
	puts, err := m.puts(64)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(puts)); m.Round != round || !slices.Equal(got, ranks) {
		t.Fatalf("fence-done of round %d with the puts of ranks %v, want round %d and %v", m.Round, got, round, ranks)
	}
	for _, r := range ranks {
		if string(puts[r]["card"]) != fmt.Sprint(r) {
			t.Fatalf("rank %d's puts: %q", r, puts[r])
		}
	}
}

// The multi-host fence of a --ft job: a round pending when a rank dies completes for the
// survivors once the failure is known, each agent first hears of the failure, and later
// rounds go without the rank (its late fence dropped). A lost agent fails each of its
// ranks, which completes the round the others wait in.
func TestFTSubmitterFence(t *testing.T) {
	var stderr lockedBuffer
	s, ends := ftSubmitter(t, &stderr, "h0", "h1", "h2")
	// fence is an agent's fence frame for ranks, all on one host, each of which gathers.
	fence := func(round int, ranks ...int) {
		puts := make(map[int]map[string][]byte)
		for _, r := range ranks {
			puts[r] = map[string][]byte{"card": []byte(fmt.Sprint(r))}
		}
		block, err := pmi.AppendCards(nil, pmi.CardsOf(puts))
		if err != nil {
			t.Fatal(err)
		}
		s.fence(s.links[s.roster.RankHost[ranks[0]]], &agentFenceMsg{Round: round, Ranks: ranks, Block: block})
	}
	fence(1, 0, 1)
	fence(1, 4, 5) // rank 3 has not fenced: h1 has not sent, and the round is pending
	for _, e := range ends {
		e.none(t)
	}
	s.rankEnded(s.links[1], &exitMsg{Rank: 3, Pid: 103, Code: -1, Signal: 9, Connected: true})
	cause := "rank 3 (host h1, pid 103) killed by signal 9 (SIGKILL)"
	for _, e := range ends {
		wantProcFailed(t, e.next(t), 3, "h1", cause, 137)
		e.none(t)
	}
	fence(1, 2) // h1's fence, now that its only live rank fenced
	for _, e := range ends {
		wantFenceDone(t, e.next(t), 1, 0, 1, 2, 4, 5)
	}
	if s.fail != nil {
		t.Fatalf("the job failed: %s", s.fail.summary())
	}
	fence(2, 0, 1)
	fence(2, 2, 3) // rank 3's fence from before its death: dropped
	for _, e := range ends {
		e.none(t)
	}
	// h2 is lost while rank 5 has not fenced: ranks 4 and 5 fail, told in one frame to
	// each survivor, and the round completes.
	s.lose(s.links[2], "control connection lost: EOF")
	for _, e := range ends[:2] {
		f := e.next(t)
		var m hostFailedMsg
		if f.t != fHostFailed || json.Unmarshal(f.body, &m) != nil {
			t.Fatalf("%v frame %s, want host-failed", f.t, f.body)
		}
		if m.Host != "h2" || !slices.Equal(m.Ranks, []int{4, 5}) || !slices.Equal(m.Pids, []int{104, 105}) ||
			m.Code != ExitFailure || m.Why != "agent h2 unreachable (control connection lost: EOF)" {
			t.Fatalf("host-failed %+v", m)
		}
		wantFenceDone(t, e.next(t), 2, 0, 1, 2, 3)
	}
	wantLines := []string{
		"golaunch: " + cause + "; job continued (--ft)",
		"golaunch: rank 4 (host h2, pid 104) lost: agent h2 unreachable (control connection lost: EOF); job continued (--ft)",
		"golaunch: rank 5 (host h2, pid 105) lost: agent h2 unreachable (control connection lost: EOF); job continued (--ft)",
	}
	if got := strings.Split(strings.TrimSpace(stderr.String()), "\n"); !slices.Equal(got, wantLines) {
		t.Errorf("stderr:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
	if s.fail != nil || s.ended != 3 {
		t.Fatalf("fail %v, %d ranks ended, want no failure and 3", s.fail, s.ended)
	}
	if got, want := s.ftSummary(), "golaunch: --ft: 3 of 6 ranks failed: 3, 4, 5"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// Which ends of a --ft job's ranks the job goes on after, and the summary of many.
func TestFTTolerable(t *testing.T) {
	cases := []struct {
		name string
		m    exitMsg
		goOn bool
	}{
		{"killed", exitMsg{Rank: 1, Code: -1, Signal: 9, Connected: true}, true},
		{"exit 3", exitMsg{Rank: 1, Code: 3, Connected: true}, true},
		{"no Finalize", exitMsg{Rank: 1, Connected: true}, true},
		{"not started", exitMsg{Rank: 1, Code: -1, Err: "exec: permission denied"}, true},
		{"panic", exitMsg{Rank: 1, Code: 2, Connected: true, Panic: "panic: boom"}, true},
		{"killed after Finalize", exitMsg{Rank: 1, Code: -1, Signal: 9, Connected: true, Finalized: true}, true},
		{"exit 3 after Finalize", exitMsg{Rank: 1, Code: 3, Connected: true, Finalized: true}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr lockedBuffer
			s, _ := ftSubmitter(t, &stderr, "h0")
			s.pmiJob = true
			s.rankEnded(s.links[0], &c.m)
			if goOn := s.fail == nil; goOn != c.goOn {
				t.Errorf("the job goes on: %v, want %v (stderr %q)", goOn, c.goOn, stderr.String())
			}
			if c.goOn && !slices.Equal(s.failed, []int{1}) {
				t.Errorf("failed ranks %v, want [1]", s.failed)
			}
		})
	}
	s := &submitter{roster: Roster{Size: 40}}
	for r := 39; r >= 0; r -= 2 {
		s.failed = append(s.failed, r)
	}
	want := "golaunch: --ft: 20 of 40 ranks failed: 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, ..."
	if got := s.ftSummary(); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
