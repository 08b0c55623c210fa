package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// tinyTrace is a trace as internal/trace.Merge writes it: rank 2 listed first but sorted
// last; rank 0 with two lanes and three levels of nesting; two flows in the first 100 µs,
// one at 200 µs on rank 2, and an "f" without its "s".
const tinyTrace = `{"displayTimeUnit":"ns","otherData":{"producer":"gorma"},"traceEvents":[
{"name":"process_name","ph":"M","pid":3,"tid":7,"args":{"name":"rank 2"}},
{"name":"process_sort_index","ph":"M","pid":3,"tid":7,"args":{"sort_index":2}},
{"name":"thread_name","ph":"M","pid":3,"tid":7,"args":{"name":"rank 2 lane 0"}},
{"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":"rank 0"}},
{"name":"process_sort_index","ph":"M","pid":1,"tid":1,"args":{"sort_index":0}},
{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"rank 0 lane 0"}},
{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"rank 0 lane 1"}},
{"name":"process_name","ph":"M","pid":2,"tid":4,"args":{"name":"rank 1"}},
{"name":"process_sort_index","ph":"M","pid":2,"tid":4,"args":{"sort_index":1}},
{"name":"thread_name","ph":"M","pid":2,"tid":4,"args":{"name":"rank 1 lane 0"}},
{"name":"Allreduce ring","cat":"coll","ph":"X","ts":10.0005,"dur":80.0005,"pid":1,"tid":1,"args":{"seq":1,"bytes":64}},
{"name":"Send","cat":"send","ph":"X","ts":12.0005,"dur":10.0005,"pid":1,"tid":1,"args":{"seq":2,"peer":1,"tag":5,"bytes":64,"msg":1}},
{"name":"Recv","cat":"recv","ph":"X","ts":30.0005,"dur":40.0005,"pid":1,"tid":1,"args":{"seq":3,"peer":1,"tag":5,"bytes":64}},
{"name":"Match","cat":"match","ph":"X","ts":50.0005,"dur":5.0005,"pid":1,"tid":1,"args":{"seq":4,"peer":1,"tag":5,"bytes":64,"msg":1}},
{"name":"Region","cat":"region","ph":"X","ts":20.0005,"dur":30.0005,"pid":1,"tid":2,"args":{"seq":5}},
{"name":"Recv","cat":"recv","ph":"X","ts":5.0005,"dur":30.0005,"pid":2,"tid":4,"args":{"seq":1,"peer":0}},
{"name":"Match","cat":"match","ph":"X","ts":20.0005,"dur":2.0005,"pid":2,"tid":4,"args":{"seq":2,"peer":0,"msg":1}},
{"name":"Send","cat":"send","ph":"X","ts":40.0005,"dur":5.0005,"pid":2,"tid":4,"args":{"seq":3,"peer":0,"msg":1}},
{"name":"Barrier","cat":"call","ph":"X","ts":200.0005,"dur":10.0005,"pid":3,"tid":7,"args":{"seq":1}},
{"name":"message","cat":"flow","ph":"s","id":1,"ts":12.0015,"pid":1,"tid":1},
{"name":"message","cat":"flow","ph":"f","id":1,"ts":20.0015,"pid":2,"tid":4,"bp":"e"},
{"name":"message","cat":"flow","ph":"s","id":2,"ts":40.0015,"pid":2,"tid":4},
{"name":"message","cat":"flow","ph":"f","id":2,"ts":50.0015,"pid":1,"tid":1,"bp":"e"},
{"name":"message","cat":"flow","ph":"s","id":3,"ts":200.0015,"pid":3,"tid":7},
{"name":"message","cat":"flow","ph":"f","id":3,"ts":205.0015,"pid":3,"tid":7,"bp":"e"},
{"name":"message","cat":"flow","ph":"f","id":4,"ts":60.0015,"pid":1,"tid":1,"bp":"e"}
]}
`

// svgShape is what a test reads back from an SVG: its elements by class, the texts by
// class, and the y of each rank's label.
type svgShape struct {
	count map[string]int      // elements by class
	texts map[string][]string // text contents by class
	rankY map[string]float64  // y of each class="rank" label by its text
	rects map[string]float64  // y of each slice rect by its tooltip's first word
}

func parseSVG(t *testing.T, svg []byte) svgShape {
	t.Helper()
	sh := svgShape{count: map[string]int{}, texts: map[string][]string{}, rankY: map[string]float64{}, rects: map[string]float64{}}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var stack []xml.StartElement
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e)
			sh.count[attr(e, "class")]++
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			top, s := stack[len(stack)-1], string(e)
			class := attr(top, "class")
			if top.Name.Local == "text" {
				sh.texts[class] = append(sh.texts[class], s)
				if class == "rank" {
					sh.rankY[s], _ = strconv.ParseFloat(attr(top, "y"), 64)
				}
			}
			if top.Name.Local == "title" && len(stack) > 1 && attr(stack[len(stack)-2], "class") == "slice" {
				y, _ := strconv.ParseFloat(attr(stack[len(stack)-2], "y"), 64)
				sh.rects[s] = y
			}
		}
	}
	return sh
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func drawTiny(t *testing.T, o timelineOptions) (svgShape, timelineStats, []byte) {
	t.Helper()
	tl, err := readTimeline(strings.NewReader(tinyTrace))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	st, err := drawTimeline(&b, tl, o)
	if err != nil {
		t.Fatal(err)
	}
	return parseSVG(t, b.Bytes()), st, b.Bytes()
}

func TestTimeline(t *testing.T) {
	sh, st, _ := drawTiny(t, timelineOptions{from: noTime, to: noTime, width: 1200, title: "tiny"})
	if sh.count["slice"] != 9 || st.Slices != 9 || sh.count["merged"] != 0 {
		t.Errorf("%d slice rects (stats %d), %d merged; want 9 and 0", sh.count["slice"], st.Slices, sh.count["merged"])
	}
	if sh.count["flow"] != 3 || st.Flows != 3 {
		t.Errorf("%d flow lines (stats %d), want 3", sh.count["flow"], st.Flows)
	}
	if y0, y1, y2 := sh.rankY["rank 0"], sh.rankY["rank 1"], sh.rankY["rank 2"]; !(y0 > 0 && y0 < y1 && y1 < y2) {
		t.Errorf("rank labels at y %v, %v, %v: want rank 0 above rank 1 above rank 2", y0, y1, y2)
	}
	if got := sh.texts["lane"]; !slices.Equal(got, []string{"lane 0", "lane 1"}) {
		t.Errorf("lane labels %q, want rank 0's two lanes alone", got)
	}
	for _, name := range []string{"Allreduce ring", "Recv", "Barrier"} {
		if !slices.Contains(sh.texts["name"], name) {
			t.Errorf("no slice labelled %q in %q", name, sh.texts["name"])
		}
	}
	if got, want := sh.texts["legend"], []string{"coll", "send", "recv", "match", "region", "call", "message (send to match)"}; !slices.Equal(got, want) {
		t.Errorf("legend %q, want %q", got, want)
	}
	// Nesting: the Match on rank 0 lies two rows below the Allreduce that holds it.
	var coll, match float64
	for tip, y := range sh.rects {
		switch {
		case strings.HasPrefix(tip, "Allreduce ring (coll) 80 µs at 10 µs, 64 B, seq 1"):
			coll = y
		case strings.HasPrefix(tip, "Match (match) 5 µs at 50 µs, peer 1, tag 5, 64 B, msg 1, seq 4"):
			match = y
		}
	}
	if coll == 0 || match-coll != 2*tlRowH {
		t.Errorf("Allreduce at y %v, its Match at %v: want %d pixels lower; tooltips %v", coll, match, 2*tlRowH, sh.rects)
	}
	if got := sh.texts["tick"]; len(got) < 5 || got[0] != "0 µs" || got[1] != "50 µs" {
		t.Errorf("ticks %q, want 0 µs, 50 µs, ...", got)
	}
}

// TestTimelineZoom draws the first 100 µs: rank 2's Barrier and its flow drop out, its
// row stays, empty.
func TestTimelineZoom(t *testing.T) {
	sh, st, _ := drawTiny(t, timelineOptions{from: 0, to: 100_000, width: 800, title: "zoom"})
	if sh.count["slice"] != 8 || st.Flows != 2 || sh.count["flow"] != 2 {
		t.Errorf("%d slices, %d flows; want 8 and 2", sh.count["slice"], sh.count["flow"])
	}
	if slices.Contains(sh.texts["name"], "Barrier") {
		t.Error("the Barrier at 200 µs is drawn in the window [0, 100 µs]")
	}
	if _, ok := sh.rankY["rank 2"]; !ok {
		t.Error("rank 2, with no slice in the window, has no row")
	}
	// A window that cuts the Allreduce: it is drawn from the window's left edge.
	sh, _, _ = drawTiny(t, timelineOptions{from: 45_000, to: 60_000, width: 800, title: "cut"})
	if sh.count["slice"] != 4 || sh.count["flow"] != 1 {
		t.Errorf("window [45, 60] µs: %d slices, %d flows; want 4 (Allreduce, Recv, Match, Region) and 1", sh.count["slice"], sh.count["flow"])
	}
}

// TestTimelineCommand runs chart timeline as a user does, with one dash and with two.
func TestTimelineCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path, []byte(tinyTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"timeline", "-from", "0", "-to", "100", "-width=900", path},
		{"timeline", "--from", "0", "--to=100", "--width", "900", path},
	} {
		var b bytes.Buffer
		if err := run(args, &b); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		sh := parseSVG(t, b.Bytes())
		if sh.count["slice"] != 8 || !bytes.Contains(b.Bytes(), []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="900"`)) {
			t.Errorf("%q: %d slices, want 8, in a picture 900 wide", args, sh.count["slice"])
		}
		if !slices.Contains(sh.texts[""], "t.json") {
			t.Errorf("%q: no title t.json", args)
		}
	}
	for _, args := range [][]string{
		{"timeline"},
		{"timeline", "--from", "100", "--to", "50", path},
		{"timeline", "--width", "50", path},
		{"timeline", filepath.Join(t.TempDir(), "none.json")},
	} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("%q: want an error", args)
		}
	}
}

func TestReadTimelineErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":       "",
		"not JSON":    "trace",
		"a number":    "7",
		"no events":   `{"otherData":{}}`,
		"no X":        `{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"r"}}]}`,
		"cut short":   `{"traceEvents":[{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}`,
		"bad event":   `{"traceEvents":[{"name":1}]}`,
		"bare, no X:": `[]`,
	} {
		if _, err := readTimeline(strings.NewReader(in)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	tl, err := readTimeline(strings.NewReader(`[{"name":"a","cat":"x","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}]`))
	if err != nil || len(tl.procs) != 1 || tl.start != 1000 || tl.end != 3000 {
		t.Errorf("a bare array: %+v, %v", tl, err)
	}
}

// bigTrace is a 16-rank trace of 300 ms: per rank a long wait holding a burst of ten
// 1 µs slices every millisecond, and a flow to the next rank from each burst.
func bigTrace() []byte {
	var b bytes.Buffer
	b.WriteString(`{"traceEvents":[`)
	sep := ""
	ev := func(format string, a ...any) {
		b.WriteString(sep)
		fmt.Fprintf(&b, format, a...)
		sep = ",\n"
	}
	id := 0
	for r := range 16 {
		ev(`{"name":"process_name","ph":"M","pid":%d,"tid":%d,"args":{"name":"rank %d"}}`, r+1, r+1, r)
		ev(`{"name":"Wait","cat":"wait","ph":"X","ts":0,"dur":300000,"pid":%d,"tid":%d}`, r+1, r+1)
		for ms := range 300 {
			for k := range 10 {
				ev(`{"name":"Send","cat":"send","ph":"X","ts":%d.5,"dur":1,"pid":%d,"tid":%d}`, 1000*ms+5*k+r, r+1, r+1)
			}
			id++
			ev(`{"name":"message","cat":"flow","ph":"s","id":%d,"ts":%d.5,"pid":%d,"tid":%d}`, id, 1000*ms+r, r+1, r+1)
			ev(`{"name":"message","cat":"flow","ph":"f","id":%d,"ts":%d.5,"pid":%d,"tid":%d,"bp":"e"}`, id, 1000*ms+r+50, (r+1)%16+1, (r+1)%16+1)
		}
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// TestTimelineCap draws 48,000 narrow slices and 4,800 flows: the picture stays under
// 1 MB, the slices become grey blocks and the flows are thinned.
func TestTimelineCap(t *testing.T) {
	tl, err := readTimeline(bytes.NewReader(bigTrace()))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	st, err := drawTimeline(&b, tl, timelineOptions{from: noTime, to: noTime, width: 1200, title: "big"})
	if err != nil {
		t.Fatal(err)
	}
	sh := parseSVG(t, b.Bytes())
	if b.Len() >= 1<<20 {
		t.Errorf("SVG of %d bytes, want under 1 MiB", b.Len())
	}
	if st.Slices+st.Merged > tlMaxRects || st.Merged == 0 || st.MinPx <= 1 {
		t.Errorf("%d slices and %d grey blocks at %v px: want at most %d in all, some grey, the threshold raised",
			st.Slices, st.Merged, st.MinPx, tlMaxRects)
	}
	if sh.count["slice"] != 16 { // the waits
		t.Errorf("%d slice rects, want the 16 waits", sh.count["slice"])
	}
	if st.Flows > tlMaxFlows || st.Flows == 0 || sh.count["flow"] != st.Flows {
		t.Errorf("%d flows drawn (%d lines), want 1 to %d", st.Flows, sh.count["flow"], tlMaxFlows)
	}
	// Zoomed to one burst, everything is drawn.
	b.Reset()
	st, err = drawTimeline(&b, tl, timelineOptions{from: 100_000_000, to: 100_100_000, width: 1200, title: "burst"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Merged != 0 || st.Slices != 16+16*10 || st.Flows != 16 {
		t.Errorf("one burst: %d slices, %d grey, %d flows; want 176, 0, 16", st.Slices, st.Merged, st.Flows)
	}
}

// TestTimelineRender has a real renderer draw the tiny trace: rsvg-convert (Debian's
// librsvg2-bin).
func TestTimelineRender(t *testing.T) {
	tool, err := exec.LookPath("rsvg-convert")
	if err != nil {
		testbudget.SkipEngine(t, "rsvg-convert is not installed (Debian: librsvg2-bin)")
	}
	_, _, svg := drawTiny(t, timelineOptions{from: noTime, to: noTime, width: 1200, title: "tiny"})
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.svg")
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "tiny.png")
	if out, err := exec.Command(tool, "-o", png, path).CombinedOutput(); err != nil {
		t.Fatalf("rsvg-convert: %v\n%s", err, out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("rsvg-convert wrote no PNG: %v", err)
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		span  int64
		n     int
		step  float64
		label string // of the third tick
	}{
		{200_000_000, 10, 20_000_000, "40 ms"},
		{2_900_000, 10, 500_000, "1.0 ms"},
		{110_000, 10, 20_000, "40 µs"},
		{100_000, 10, 10_000, "20 µs"},
		{3_000, 10, 500, "1.0 µs"},
		{50, 10, 5, "0.010 µs"},
		{3, 10, 1, "0.002 µs"},
	} {
		step := tickStep(c.span, c.n)
		if step != c.step {
			t.Errorf("tickStep(%d, %d) = %v, want %v", c.span, c.n, step, c.step)
		}
		if got := tickLabel(2*step, step); got != c.label {
			t.Errorf("span %d: third tick %q, want %q", c.span, got, c.label)
		}
	}
}

func TestFitLabel(t *testing.T) {
	for _, c := range []struct {
		name string
		w    float64
		want string
	}{
		{"Recv", 100, "Recv"},
		{"Send (internal)", 90, "Send (internal)"},
		{"Send (internal)", 50, "Send (i…"},
		{"Send (internal)", 30, "Send…"},
		{"Send (internal)", 20, ""},
		{"Recv", 24, "Recv"},
	} {
		if got := fitLabel(c.name, c.w); got != c.want {
			t.Errorf("fitLabel(%q, %v) = %q, want %q", c.name, c.w, got, c.want)
		}
	}
	if textOn("#1f77b4") != "#ffffff" || textOn("#f2cf5b") != "#000000" {
		t.Error("textOn: want white on blue, black on yellow")
	}
	if usToNs(math.NaN()) != noTime || usToNs(12.0015) != 12001 {
		t.Error("usToNs: want noTime for NaN, 12001 ns for 12.0015 µs")
	}
}
