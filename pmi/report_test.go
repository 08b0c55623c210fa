package pmi

import (
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// reportHandler is jobHandler that takes reports.
type reportHandler struct {
	*jobHandler
	got chan string
}

func (h reportHandler) Report(rank int, text string) {
	h.got <- strings.Join([]string{string(rune('0' + rank)), text}, ":")
}

// TestReport: a report event reaches a gorma client with its stacks flag, and the
// client's answer, any text up to MaxReport bytes (longer is cut), reaches the handler.
func TestReport(t *testing.T) {
	h := reportHandler{newJob(2), make(chan string, 4)}
	s := serve(t, h)
	c, err := Dial(ctx(t), s.Path(), 1, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s.Notify(1, Event{Kind: ReportAsked, Rank: -1, Stacks: true})
	select {
	case ev := <-c.Events():
		if ev.Kind != ReportAsked || !ev.Stacks {
			t.Fatalf("event %+v, want a report asked with stacks", ev)
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatal("report event not delivered")
	}
	text := "rank=1 call=Recv peer=0 tag=7\ngoroutine 1 [chan receive]:\n\tmain.main() 100% done"
	if err := c.Report(text); err != nil {
		t.Fatal(err)
	}
	if got := <-h.got; got != "1:"+text {
		t.Fatalf("handler got %q", got)
	}
	long := strings.Repeat("x", MaxReport+100)
	if err := c.Report(long); err != nil {
		t.Fatal(err)
	}
	if got := <-h.got; got != "1:"+long[:MaxReport] {
		t.Fatalf("a long report reached the handler as %d bytes, want %d", len(got)-2, MaxReport)
	}
}
