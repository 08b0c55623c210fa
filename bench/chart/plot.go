package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

const (
	chartWidth  = 7 * vg.Inch
	chartHeight = 4.2 * vg.Inch
	// legendSlack widens the legend's measured text: a viewer without Liberation Serif
	// or Times New Roman (the SVG names them) draws in a wider font such as DejaVu Serif,
	// and the text, placed by Liberation's widths, runs further right.
	legendSlack = 1.4
	// rightGap keeps the last x tick label and the legend apart; topGap keeps the title
	// and the y label inside the picture in a larger font.
	rightGap = 0.35 * vg.Inch
	topGap   = 0.08 * vg.Inch
	// legendMargin keeps the legend's icons off the picture's right edge.
	legendMargin = 0.05 * vg.Inch
	// coincide is the relative distance under which two lines lie on each other.
	coincide = 0.03
	// maxSizeLabels is the most labels a size axis gets.
	maxSizeLabels = 8
)

// svgFonts are the fonts an SVG asks for: Liberation Serif (gonum measures with it), then
// its metric twin Times New Roman.
const svgFonts = "font-family:'Liberation Serif','Times New Roman',Times,serif;"

// writeChart draws ch to path: an SVG, or a PNG preview for a .png path.
func writeChart(ch Chart, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b bytes.Buffer
	if strings.HasSuffix(path, ".png") {
		c := vgimg.New(chartWidth, chartHeight)
		if err := drawChart(ch, draw.New(c)); err != nil {
			return err
		}
		if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&b); err != nil {
			return err
		}
		return os.WriteFile(path, b.Bytes(), 0o644)
	}
	c := vgsvg.NewWith(vgsvg.UseWH(chartWidth, chartHeight), vgsvg.EmbedFonts(false))
	if err := drawChart(ch, draw.New(c)); err != nil {
		return err
	}
	if _, err := c.WriteTo(&b); err != nil {
		return err
	}
	svg := bytes.ReplaceAll(b.Bytes(), []byte("font-family:Liberation Serif;"), []byte(svgFonts))
	return os.WriteFile(path, svg, 0o644)
}

// drawChart draws ch on dc: the plot on the left, its legend to the right of the plot
// area, where no data can lie.
func drawChart(ch Chart, dc draw.Canvas) error {
	p := plot.New()
	p.Title.Text = ch.Title
	if ch.Source != "" {
		p.Title.Text += "\n(" + ch.Source + ")"
	}
	p.X.Label.Text = ch.XLabel
	p.Y.Label.Text = ch.YLabel
	if ch.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	grid := plotter.NewGrid()
	if ch.X == "" {
		grid.Vertical.Color = nil // bars stand between the category ticks
	}
	p.Add(grid)
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.Padding = vg.Points(4)
	leg.TextStyle.Font.Size = vg.Points(10)
	var err error
	if ch.X == "" {
		err = addBars(p, &leg, ch)
	} else {
		err = addLines(p, &leg, ch)
	}
	if err != nil {
		return fmt.Errorf("chart %s: %w", ch.File, err)
	}
	var lw vg.Length
	if r := leg.Rectangle(dc); r.Size().X > 0 {
		lw = r.Size().X * legendSlack
	}
	dc = draw.Crop(dc, topGap, 0, 0, -topGap)
	pc := draw.Crop(dc, 0, -(lw + rightGap), 0, 0)
	// The plot's background, then its title, as p.Draw would draw them; p.Draw then
	// draws the rest below the title.
	pc.SetColor(p.BackgroundColor)
	pc.Fill(pc.Rectangle.Path())
	p.BackgroundColor = nil
	top := drawTitle(pc, dc, p.Title.TextStyle, p.Title.Padding, p.Title.Text)
	p.Title.Text = ""
	pc.Max.Y -= top
	p.Draw(pc)
	leg.Draw(draw.Crop(dc, dc.Size().X-lw, -legendMargin, 0, -top))
	return nil
}

// drawTitle draws title at the top of pc, the plot's part of the chart whose whole
// canvas is all, and returns the height it takes with its padding (0 without a title).
// It is centred over pc, as plot.Plot centres it, unless a line is too wide for pc: then
// it moves right just enough that its widest line starts inside all, and a line wider
// than all is wrapped at spaces.
func drawTitle(pc, all draw.Canvas, sty text.Style, pad vg.Length, title string) vg.Length {
	if title == "" {
		return 0
	}
	width := all.Size().X - 2*legendMargin
	var lines []string
	for _, l := range strings.Split(title, "\n") {
		lines = append(lines, wrapLine(sty, l, width)...)
	}
	title = strings.Join(lines, "\n")
	half := vg.Length(0)
	for _, l := range lines {
		half = max(half, sty.Width(l)/2)
	}
	x := max(pc.Center().X, all.Min.X+legendMargin+half)
	pc.FillText(sty, vg.Point{X: x, Y: pc.Max.Y + sty.FontExtents().Descent}, title)
	return sty.Rectangle(title).Size().Y + pad
}

// wrapLine splits l at spaces into lines no wider than width; a word wider than width
// stays whole on its own line.
func wrapLine(sty text.Style, l string, width vg.Length) []string {
	if sty.Width(l) <= width {
		return []string{l}
	}
	var lines []string
	cur := ""
	for _, w := range strings.Fields(l) {
		next := w
		if cur != "" {
			next = cur + " " + w
		}
		if cur != "" && sty.Width(next) > width {
			lines = append(lines, cur)
			next = w
		}
		cur = next
	}
	return append(lines, cur)
}

// addLines draws each series as a line on log2 x (and log y with LogY). A series that
// lies on an earlier one gets larger markers and says so in the legend.
func addLines(p *plot.Plot, leg *plot.Legend, ch Chart) error {
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	if ch.X != "bytes" {
		p.X.Tick.Marker = countTicks{}
	}
	var drawn []ChartSeries
	for i, s := range ch.Series {
		xys := make(plotter.XYs, 0, len(s.Points))
		for _, pt := range s.Points {
			if pt.X > 0 && (!ch.LogY || pt.Y > 0) {
				xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		pts.Color = plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		pts.Radius = vg.Points(2.5)
		name := s.Name
		if on := coincides(s, drawn); on != "" {
			name += " (on " + on + ")"
			pts.Radius = vg.Points(5) // around the earlier line's markers; its dashes let that line show
		}
		drawn = append(drawn, s)
		p.Add(line, pts)
		leg.Add(name, line, pts)
	}
	return nil
}

// coincides returns the name of the first of earlier that s lies on: both have at
// least two sizes in common and differ by less than coincide at each.
func coincides(s ChartSeries, earlier []ChartSeries) string {
	for _, e := range earlier {
		ys := map[float64]float64{}
		for _, pt := range e.Points {
			ys[pt.X] = pt.Y
		}
		shared, apart := 0, false
		for _, pt := range s.Points {
			y, ok := ys[pt.X]
			if !ok {
				continue
			}
			shared++
			if m := math.Max(math.Abs(y), math.Abs(pt.Y)); m > 0 && math.Abs(y-pt.Y) > coincide*m {
				apart = true
			}
		}
		if shared >= 2 && !apart {
			return e.Name
		}
	}
	return ""
}

// addBars draws a group of bars per category, a bar per series, with a whisker from a
// point's Min to its Max where it has them.
func addBars(p *plot.Plot, leg *plot.Legend, ch Chart) error {
	if len(ch.Categories) == 0 {
		return fmt.Errorf("bars without categories")
	}
	b := &bars{series: ch.Series, n: len(ch.Categories), logy: ch.LogY}
	p.Add(b)
	p.X.Tick.Marker = categoryTicks(ch.Categories)
	lo, hi := b.yrange()
	if ch.LogY {
		if lo <= 0 {
			return fmt.Errorf("a log axis needs values above 0")
		}
		p.Y.Min, p.Y.Max = math.Pow(10, math.Floor(math.Log10(lo))), hi*1.5
	} else {
		p.Y.Min, p.Y.Max = 0, hi*1.08
	}
	for i, s := range ch.Series {
		leg.Add(s.Name, box{plotutil.Color(i)})
	}
	return nil
}

// bars is the plotter of addBars.
type bars struct {
	series []ChartSeries
	n      int
	logy   bool
}

func (b *bars) yrange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range b.series {
		for _, pt := range s.Points {
			for _, v := range []*float64{&pt.Y, pt.Min, pt.Max} {
				if v != nil && (!b.logy || *v > 0) {
					lo, hi = math.Min(lo, *v), math.Max(hi, *v)
				}
			}
		}
	}
	if math.IsInf(lo, 0) {
		return 1, 10
	}
	return lo, hi
}

// DataRange makes the x axis span the categories; the y axis is set by addBars.
func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	lo, hi := b.yrange()
	return -0.5, float64(b.n) - 0.5, lo, hi
}

func (b *bars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	w := 0.8 / float64(len(b.series))
	base := trY(plt.Y.Min)
	for j, s := range b.series {
		col := plotutil.Color(j)
		for _, pt := range s.Points {
			if b.logy && pt.Y <= 0 {
				continue
			}
			x0 := pt.X - 0.4 + float64(j)*w
			r := vg.Rectangle{Min: vg.Point{X: trX(x0), Y: base}, Max: vg.Point{X: trX(x0 + w), Y: trY(pt.Y)}}
			c.SetColor(col)
			c.Fill(r.Path())
			if pt.Min == nil || pt.Max == nil {
				continue
			}
			x, cap := trX(x0+w/2), (trX(x0+w)-trX(x0))/4
			ls := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
			lo, hi := trY(*pt.Min), trY(*pt.Max)
			c.StrokeLines(ls, []vg.Point{{X: x, Y: lo}, {X: x, Y: hi}})
			c.StrokeLines(ls, []vg.Point{{X: x - cap, Y: lo}, {X: x + cap, Y: lo}})
			c.StrokeLines(ls, []vg.Point{{X: x - cap, Y: hi}, {X: x + cap, Y: hi}})
		}
	}
}

// box is a bar's legend thumbnail.
type box struct{ color color.Color }

func (b box) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	r.Min.Y += (r.Max.Y - r.Min.Y) / 6
	r.Max.Y -= (r.Max.Y - r.Min.Y) / 6
	c.SetColor(b.color)
	c.Fill(r.Path())
}

// categoryTicks labels the bar groups.
type categoryTicks []string

func (ct categoryTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := make([]plot.Tick, len(ct))
	for i, l := range ct {
		ts[i] = plot.Tick{Value: float64(i), Label: l}
	}
	return ts
}

// sizeTicks labels a log2 byte axis at powers of two from the smallest size, every
// second, third or more so that at most maxSizeLabels fit, with minor ticks between.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	first, last := math.Ceil(math.Log2(lo)), math.Floor(math.Log2(hi))
	step := 1.0
	for (last-first)/step >= maxSizeLabels {
		step++
	}
	for e := math.Floor(math.Log2(lo)); e <= math.Ceil(math.Log2(hi)); e++ {
		x := math.Exp2(e)
		if x < lo || x > hi {
			continue
		}
		t := plot.Tick{Value: x}
		if math.Mod(e-first, step) == 0 {
			t.Label = sizeLabel(x)
		}
		ts = append(ts, t)
	}
	return ts
}

// countTicks labels a log2 count axis (ranks) at every power of two.
type countTicks struct{}

func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log2(lo)); e <= math.Ceil(math.Log2(hi)); e++ {
		if x := math.Exp2(e); x >= lo && x <= hi {
			ts = append(ts, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
		}
	}
	return ts
}
