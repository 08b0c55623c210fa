package main

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// timelineOptions are chart timeline's flags: the window in nanoseconds of the trace
// (noTime: the trace's own start or end), the picture's width and its title.
type timelineOptions struct {
	from, to int64
	width    int
	title    string
}

// timelineStats counts what drawTimeline drew.
type timelineStats struct {
	Slices int // slice rectangles
	Merged int // grey blocks, each standing for slices narrower than MinPx side by side
	Flows  int // flow arrows
	MinPx  float64
}

// The timeline's geometry in pixels, and the most it draws.
const (
	tlRowH      = 14 // one level of nesting
	tlLaneGap   = 2  // between the lanes (tids) of a rank
	tlRankGap   = 6  // between ranks
	tlTop       = 72 // title, subtitle and axis above the rows
	tlRight     = 16
	tlFont      = 11  // labels
	tlSliceFont = 10  // names inside slices
	tlCharW     = 0.6 // a character's width, in font sizes
	// tlMaxRects and tlMaxFlows bound the SVG's size; TestTimelineCap checks that a
	// capped drawing stays under 1 MiB.
	tlMaxRects   = 3000
	tlMaxFlows   = 1500
	tlMergedFill = "#9e9e9e"
)

// tlCategories are the categories gorma's traces use (internal/trace's kinds), in the
// legend's order, with their colours; any other category gets tlOtherFill.
var tlCategories = []struct{ cat, fill string }{
	{"coll", "#9467bd"},
	{"send", "#1f77b4"},
	{"recv", "#2ca02c"},
	{"match", "#ff7f0e"},
	{"wait", "#f2cf5b"},
	{"rma", "#d62728"},
	{"epoch", "#17becf"},
	{"region", "#8c564b"},
	{"call", "#e377c2"},
}

const tlOtherFill = "#bcbd22"

func tlFill(cat string) string {
	for _, c := range tlCategories {
		if c.cat == cat {
			return c.fill
		}
	}
	return tlOtherFill
}

// tlRow is one sub-row of the picture: a thread of a rank, or an empty rank.
type tlRow struct {
	proc   *tlProc
	thread *tlThread // nil for a rank with no slice in the window
	in     []*tlSlice
	y      float64
	depths int
	label  string // the lane's name beside the rank's, when the rank has several
}

// tlItem is one rectangle: a slice, or a grey block of n narrow slices.
type tlItem struct {
	x0, x1 float64
	depth  int
	s      *tlSlice // nil for a grey block
	n      int
}

// tlView maps times in the window to x.
type tlView struct {
	t0, t1      int64
	left, width float64
}

func (v tlView) x(t int64) float64 {
	return v.left + float64(t-v.t0)*v.width/float64(v.t1-v.t0)
}

// drawTimeline writes tl as an SVG to w: a group of rows per rank, a row per thread with
// slices in the window, nested slices one level lower each, flows as arrows, a time
// axis on top and a legend at the bottom. Slices narrower than a pixel are drawn as
// grey blocks, the threshold rising until at most tlMaxRects rectangles remain.
func drawTimeline(w io.Writer, tl *timeline, o timelineOptions) (timelineStats, error) {
	var st timelineStats
	v, err := tlWindow(tl, o)
	if err != nil {
		return st, err
	}
	rows, nslices := tlRows(tl, v)
	labelW := 0
	for _, r := range rows {
		labelW = max(labelW, len([]rune(r.proc.name)), len([]rune(r.label))+2)
	}
	v.left = math.Min(float64(labelW)*tlCharW*tlFont+14, float64(o.width)/3)
	v.width = float64(o.width) - v.left - tlRight
	bottom := placeRows(rows)
	items, minPx := packRows(rows, v)
	lines, nflows := tlFlowLines(tl, rows, v)
	legend := tlLegend(items, len(lines) > 0, minPx)
	height := int(bottom) + 30 + 18*layoutLegend(legend, float64(o.width))

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		o.width, height, o.width, height, tlFont)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", o.width, height)
	fmt.Fprintf(b, `<defs><clipPath id="plot"><rect x="%.1f" y="%d" width="%.1f" height="%.1f"/></clipPath>`, v.left, tlTop-8, v.width, bottom-tlTop+16)
	op := flowOpacity(len(lines))
	b.WriteString(`<marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#222222"/></marker>`)
	fmt.Fprintf(b, `<marker id="flowarrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#222222" fill-opacity="%.2f"/></marker></defs>`+"\n", op)
	fmt.Fprintf(b, `<text x="8" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(o.title))
	fmt.Fprintf(b, `<text x="8" y="38" fill="#444444">%s</text>`+"\n", html.EscapeString(tlSubtitle(tl, v, nslices, nflows)))
	tlStripes(b, rows, v, float64(o.width))
	tlAxis(b, v, bottom, float64(o.width))
	b.WriteString(`<g clip-path="url(#plot)">` + "\n")
	for i, r := range rows {
		for _, it := range items[i] {
			tlRect(b, r, it)
			if it.s != nil {
				st.Slices++
			} else {
				st.Merged++
			}
		}
	}
	for _, l := range lines {
		fmt.Fprintf(b, `<line class="flow" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222222" stroke-opacity="%.2f" stroke-width="0.8" marker-end="url(#flowarrow)"/>`+"\n",
			l[0], l[1], l[2], l[3], op)
	}
	b.WriteString("</g>\n")
	drawLegend(b, legend, bottom+24, float64(o.width))
	b.WriteString("</svg>\n")
	st.Flows, st.MinPx = len(lines), minPx
	return st, b.Flush()
}

// tlWindow is the window o asks for: the whole of tl by default.
func tlWindow(tl *timeline, o timelineOptions) (tlView, error) {
	v := tlView{t0: tl.start, t1: tl.end}
	if o.from != noTime {
		v.t0 = o.from
	}
	if o.to != noTime {
		v.t1 = o.to
	}
	if o.from == noTime && o.to == noTime && v.t1 == v.t0 {
		v.t1 = v.t0 + 1000
	}
	if v.t1 <= v.t0 {
		return v, fmt.Errorf("timeline: empty window from %s to %s", fmtTime(v.t0), fmtTime(v.t1))
	}
	if o.width < 200 {
		return v, errors.New("timeline: --width under 200 pixels")
	}
	return v, nil
}

// placeRows sets each row's y, ranks further apart than the lanes of a rank, and
// returns the bottom of the last.
func placeRows(rows []*tlRow) float64 {
	y := float64(tlTop)
	for i, r := range rows {
		if i > 0 {
			if r.proc != rows[i-1].proc {
				y += tlRankGap
			} else {
				y += tlLaneGap
			}
		}
		r.y = y
		y += float64(r.depths * tlRowH)
	}
	return y
}

// packRows turns every row's slices into rectangles, doubling the width under which
// slices merge into grey blocks until at most tlMaxRects remain. It returns the
// rectangles by row and that width.
func packRows(rows []*tlRow, v tlView) ([][]tlItem, float64) {
	items := make([][]tlItem, len(rows))
	for minPx := 1.0; ; minPx *= 2 {
		n := 0
		for i, r := range rows {
			items[i] = packRow(r, v, minPx)
			n += len(items[i])
		}
		if n <= tlMaxRects || minPx > v.width {
			return items, minPx
		}
	}
}

// tlRows lists the picture's rows: per rank in order, a row per thread with slices in
// the window, or one empty row for a rank with none. It returns them with the number of
// slices in the window.
func tlRows(tl *timeline, v tlView) ([]*tlRow, int) {
	var rows []*tlRow
	n := 0
	for _, p := range tl.procs {
		first := len(rows)
		for _, t := range p.threads {
			r := &tlRow{proc: p, thread: t}
			for i := range t.slices {
				s := &t.slices[i]
				if s.end >= v.t0 && s.start <= v.t1 {
					r.in = append(r.in, s)
					r.depths = max(r.depths, s.depth+1)
				}
			}
			if len(r.in) == 0 {
				continue
			}
			n += len(r.in)
			r.label = strings.TrimSpace(strings.TrimPrefix(t.name, p.name))
			if r.label == "" {
				r.label = "tid " + strconv.Itoa(t.tid)
			}
			rows = append(rows, r)
		}
		switch len(rows) - first {
		case 0:
			rows = append(rows, &tlRow{proc: p, depths: 1})
		case 1:
			rows[first].label = ""
		}
	}
	return rows, n
}

// packRow turns r's slices into rectangles. At each depth, slices narrower than minPx
// that lie within minPx of each other become one grey block.
func packRow(r *tlRow, v tlView, minPx float64) []tlItem {
	var out []tlItem
	pending := make([]*tlItem, r.depths)
	flush := func(d int) {
		if pending[d] != nil {
			out = append(out, *pending[d])
			pending[d] = nil
		}
	}
	for _, s := range r.in {
		x0, x1 := v.x(max(s.start, v.t0)), v.x(min(s.end, v.t1))
		d := s.depth
		if x1-x0 >= minPx {
			flush(d)
			out = append(out, tlItem{x0: x0, x1: x1, depth: d, s: s})
			continue
		}
		if p := pending[d]; p != nil && x0 <= p.x1+minPx {
			p.x1 = max(p.x1, x1)
			p.n++
			continue
		}
		flush(d)
		pending[d] = &tlItem{x0: x0, x1: x1, depth: d, n: 1}
	}
	for d := range pending {
		flush(d)
	}
	return out
}

// tlRect draws one item of row r, with the slice's name inside when there is room.
func tlRect(b *bufio.Writer, r *tlRow, it tlItem) {
	y := r.y + float64(it.depth*tlRowH)
	w := max(it.x1-it.x0, 1)
	if it.s == nil {
		fmt.Fprintf(b, `<rect class="merged" x="%.1f" y="%.0f" width="%.1f" height="%d" fill="%s"><title>%d slices</title></rect>`+"\n",
			it.x0, y, w, tlRowH-1, tlMergedFill, it.n)
		return
	}
	s := it.s
	fill := tlFill(s.cat)
	tip := s.name + " (" + s.cat + ") " + fmtDur(s.end-s.start) + " at " + fmtTime(s.start)
	if s.info != "" {
		tip += ", " + s.info
	}
	fmt.Fprintf(b, `<rect class="slice" x="%.1f" y="%.0f" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
		it.x0, y, w, tlRowH-1, fill, html.EscapeString(tip))
	if label := fitLabel(s.name, w-4); label != "" {
		fmt.Fprintf(b, `<text class="name" x="%.1f" y="%.0f" font-size="%d" fill="%s">%s</text>`+"\n",
			it.x0+2, y+tlRowH-4, tlSliceFont, textOn(fill), html.EscapeString(label))
	}
}

// fitLabel is name as it fits in w pixels: whole, cut short with an ellipsis, or "".
func fitLabel(name string, w float64) string {
	fits := int(w / (tlCharW * tlSliceFont))
	rs := []rune(name)
	switch {
	case len(rs) <= fits:
		return name
	case fits >= 4:
		return strings.TrimSpace(string(rs[:fits-1])) + "…"
	}
	return ""
}

// textOn is the text colour that reads on fill: black on a light colour, white on a dark one.
func textOn(fill string) string {
	n, err := strconv.ParseUint(strings.TrimPrefix(fill, "#"), 16, 32)
	if err != nil {
		return "#000000"
	}
	r, g, bl := float64(n>>16&255), float64(n>>8&255), float64(n&255)
	if 0.299*r+0.587*g+0.114*bl > 150 {
		return "#000000"
	}
	return "#ffffff"
}

// tlStripes draws the rank labels on the left and a light band behind every other rank.
func tlStripes(b *bufio.Writer, rows []*tlRow, v tlView, width float64) {
	for i, rank := 0, 0; i < len(rows); rank++ {
		j := i
		for j < len(rows) && rows[j].proc == rows[i].proc {
			j++
		}
		y0, y1 := rows[i].y, rows[j-1].y+float64(rows[j-1].depths*tlRowH)
		if rank%2 == 1 {
			fmt.Fprintf(b, `<rect x="0" y="%.0f" width="%.0f" height="%.0f" fill="#f0f0f0"/>`+"\n", y0-tlRankGap/2, width, y1-y0+tlRankGap)
		}
		fmt.Fprintf(b, `<text class="rank" x="6" y="%.1f" dominant-baseline="middle" font-weight="bold">%s</text>`+"\n",
			(y0+y1)/2, html.EscapeString(rows[i].proc.name))
		for _, r := range rows[i:j] {
			if r.label != "" {
				fmt.Fprintf(b, `<text class="lane" x="%.1f" y="%.1f" dominant-baseline="middle" text-anchor="end" font-size="9" fill="#666666">%s</text>`+"\n",
					v.left-4, r.y+tlRowH/2, html.EscapeString(r.label))
			}
		}
		i = j
	}
}

// tlAxis draws the time axis above the rows and a faint line at each tick through them.
// The ticks count from the window's start.
func tlAxis(b *bufio.Writer, v tlView, bottom, width float64) {
	span := v.t1 - v.t0
	step := tickStep(span, max(int(v.width/110), 2))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000000"/>`+"\n", v.left, tlTop-6, v.left+v.width, tlTop-6)
	for k := 0.0; k*step <= float64(span); k++ {
		x := v.left + k*step*v.width/float64(span)
		label := tickLabel(k*step, step)
		anchor := "middle"
		if x+float64(len(label))*tlCharW*tlFont/2 > width-2 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.0f" stroke="#cccccc" stroke-width="0.5"/>`, x, tlTop-6, x, bottom)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000000"/>`, x, tlTop-10, x, tlTop-6)
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`+"\n", x, tlTop-14, anchor, label)
	}
}

// tickStep is the distance in nanoseconds between ticks: 1, 2 or 5 times a power of ten,
// giving at most about n ticks over span.
func tickStep(span int64, n int) float64 {
	raw := float64(span) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return max(m*mag, 1)
		}
	}
	return max(10*mag, 1)
}

// tickLabel writes t nanoseconds in ms when the step is at least 100 µs, in µs
// otherwise, with the decimals the step needs.
func tickLabel(t, step float64) string {
	unit, name := 1e3, "µs"
	if step >= 1e5 {
		unit, name = 1e6, "ms"
	}
	dec := max(0, int(math.Ceil(-math.Log10(step/unit)-1e-9)))
	return strconv.FormatFloat(t/unit, 'f', dec, 64) + " " + name
}

// fmtDur writes a duration of ns nanoseconds with three significant digits.
func fmtDur(ns int64) string {
	switch {
	case ns < 1000:
		return strconv.FormatInt(ns, 10) + " ns"
	case ns < 1e6:
		return strconv.FormatFloat(float64(ns)/1e3, 'g', 3, 64) + " µs"
	case ns < 1e9:
		return strconv.FormatFloat(float64(ns)/1e6, 'g', 3, 64) + " ms"
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'g', 3, 64) + " s"
}

// fmtTime writes a time of the trace, in nanoseconds, as microseconds.
func fmtTime(ns int64) string {
	return strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) + " µs"
}

// tlSubtitle names the window; the axis counts from its start.
func tlSubtitle(tl *timeline, v tlView, nslices, nflows int) string {
	return fmt.Sprintf("%d ranks; window %s to %s of the trace, the axis from its start; %d slices, %d flows",
		len(tl.procs), fmtTime(v.t0), fmtTime(v.t1), nslices, nflows)
}

// tlFlowLines returns the flows that cross the window as lines (x1, y1, x2, y2), from
// the deepest slice open at the start to the one open at the end, and the number of
// such flows. Lines whose ends fall on the same pixels are drawn once; the grid doubles
// until at most tlMaxFlows remain.
func tlFlowLines(tl *timeline, rows []*tlRow, v tlView) ([][4]float64, int) {
	byThread := map[[2]int]*tlRow{}
	byProc := map[int]*tlRow{}
	for _, r := range rows {
		if r.thread != nil {
			byThread[[2]int{r.proc.pid, r.thread.tid}] = r
		}
		if byProc[r.proc.pid] == nil {
			byProc[r.proc.pid] = r
		}
	}
	yOf := func(p tlPoint) (float64, bool) {
		if r := byThread[[2]int{p.pid, p.tid}]; r != nil {
			return r.y + float64(enclosingDepth(r.in, p.ts)*tlRowH) + tlRowH/2, true
		}
		if r := byProc[p.pid]; r != nil {
			return r.y + tlRowH/2, true
		}
		return 0, false
	}
	var all [][4]float64
	for _, f := range tl.flows {
		if max(f.from.ts, f.to.ts) < v.t0 || min(f.from.ts, f.to.ts) > v.t1 {
			continue
		}
		y1, ok1 := yOf(f.from)
		y2, ok2 := yOf(f.to)
		if ok1 && ok2 {
			all = append(all, [4]float64{v.x(f.from.ts), y1, v.x(f.to.ts), y2})
		}
	}
	for grid := 0.0; ; grid = max(1, 2*grid) {
		out := dedupe(all, grid)
		if len(out) <= tlMaxFlows || grid > v.width {
			return out, len(all)
		}
	}
}

// flowOpacity is the opacity of n flow arrows: 0.8 up to 100 of them, fading to 0.25
// at 1000 and more, so that many arrows leave the slices under them readable.
func flowOpacity(n int) float64 {
	if n <= 100 {
		return 0.8
	}
	return max(0.25, 0.8-0.55*math.Log10(float64(n)/100))
}

// dedupe drops the lines whose ends fall in the same cells of a grid of grid pixels as
// an earlier line's; grid 0 keeps them all.
func dedupe(ls [][4]float64, grid float64) [][4]float64 {
	if grid == 0 {
		return ls
	}
	seen := map[[4]int64]bool{}
	var out [][4]float64
	for _, l := range ls {
		var k [4]int64
		for i, c := range l {
			k[i] = int64(math.Floor(c / grid))
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, l)
		}
	}
	return out
}

// enclosingDepth is the depth of the deepest of ss (one thread's slices in the window, by
// start) that contains t, or 0.
func enclosingDepth(ss []*tlSlice, t int64) int {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].start > t })
	best := -1
	for k := i - 1; k >= 0; k-- {
		if ss[k].end >= t && ss[k].depth > best {
			best = ss[k].depth
		}
		if ss[k].depth == 0 { // the slices before it end before it starts
			break
		}
	}
	return max(best, 0)
}

// tlKey is one entry of the legend.
type tlKey struct {
	label, fill string
	flow        bool
}

// tlLegend lists the categories drawn, in tlCategories' order and then by name, then the
// grey blocks and the flows when there are any.
func tlLegend(items [][]tlItem, flows bool, minPx float64) []tlKey {
	cats := map[string]bool{}
	merged := false
	for _, row := range items {
		for _, it := range row {
			if it.s == nil {
				merged = true
			} else {
				cats[it.s.cat] = true
			}
		}
	}
	var keys []tlKey
	for _, c := range tlCategories {
		if cats[c.cat] {
			keys = append(keys, tlKey{label: c.cat, fill: c.fill})
			delete(cats, c.cat)
		}
	}
	var rest []string
	for c := range cats {
		rest = append(rest, c)
	}
	slices.Sort(rest)
	for _, c := range rest {
		keys = append(keys, tlKey{label: c, fill: tlOtherFill})
	}
	if merged {
		keys = append(keys, tlKey{label: "slices under " + strconv.FormatFloat(minPx, 'g', -1, 64) + " px", fill: tlMergedFill})
	}
	if flows {
		keys = append(keys, tlKey{label: "message (send to match)", flow: true})
	}
	return keys
}

// legendWidth is the width of one legend entry.
func legendWidth(k tlKey) float64 {
	return 26 + float64(len([]rune(k.label)))*tlCharW*tlFont + 18
}

// layoutLegend returns how many lines the legend takes in width.
func layoutLegend(keys []tlKey, width float64) int {
	lines, x := 1, 8.0
	for _, k := range keys {
		if x+legendWidth(k) > width && x > 8 {
			lines++
			x = 8
		}
		x += legendWidth(k)
	}
	return lines
}

// drawLegend draws the legend from y down, wrapping as layoutLegend does.
func drawLegend(b *bufio.Writer, keys []tlKey, y, width float64) {
	x := 8.0
	for _, k := range keys {
		if x+legendWidth(k) > width && x > 8 {
			x, y = 8, y+18
		}
		if k.flow {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222222" stroke-width="0.8" marker-end="url(#arrow)"/>`, x, y, x+20, y)
		} else {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="20" height="12" fill="%s"/>`, x, y-6, k.fill)
		}
		fmt.Fprintf(b, `<text class="legend" x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", x+26, y, html.EscapeString(k.label))
		x += legendWidth(k)
	}
}
