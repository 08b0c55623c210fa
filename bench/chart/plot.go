package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// drawSVG draws ss against the size and writes o.out.
func drawSVG(ss []series, o options) error {
	p := plot.New()
	p.Title.Text = o.title
	p.X.Label.Text = o.xlabel
	p.Y.Label.Text = o.ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	if o.x != "bytes" {
		p.X.Tick.Marker = countTicks{}
	}
	if o.logy {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	p.Legend.Left = true // latency and bandwidth both rise to the right
	p.Add(plotter.NewGrid())
	for i, s := range ss {
		xys := make(plotter.XYs, 0, len(s.Points))
		for _, x := range s.xs() {
			if y := s.Points[x]; x > 0 && (!o.logy || y > 0) {
				xys = append(xys, plotter.XY{X: x, Y: y})
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
		p.Add(line, pts)
		p.Legend.Add(s.Name, line, pts)
	}
	if strings.HasSuffix(o.out, ".png") { // a preview
		return p.Save(7*vg.Inch, 4.2*vg.Inch, o.out)
	}
	c := vgsvg.NewWith(vgsvg.UseWH(7*vg.Inch, 4.2*vg.Inch), vgsvg.EmbedFonts(false))
	p.Draw(draw.New(c))
	f, err := os.Create(o.out)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sizeTicks labels a log2 byte axis at powers of 4 (8, 32, 128, ..., 1K, 4K, ...) with
// unlabelled minor ticks at the other powers of two.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log2(lo)); e <= math.Ceil(math.Log2(hi)); e++ {
		x := math.Exp2(e)
		if x < lo || x > hi {
			continue
		}
		t := plot.Tick{Value: x}
		if int(e)%2 == 1 {
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
