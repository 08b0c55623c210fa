package prof

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"unicode/utf8"
)

// viridis holds colour stops of matplotlib's viridis map, low to high: it stays
// ordered in lightness and readable in grey and to colour-blind readers.
var viridis = [...][3]float64{
	{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37},
}

// zeroColour fills cells without traffic; it lies outside the map.
const zeroColour = "#ffffff"

// colour returns the map's colour at t in [0, 1].
func colour(t float64) string {
	t = math.Max(0, math.Min(1, t)) * float64(len(viridis)-1)
	i := min(int(t), len(viridis)-2)
	f := t - float64(i)
	var c [3]int
	for k := range c {
		c[k] = int(math.Round(viridis[i][k] + f*(viridis[i+1][k]-viridis[i][k])))
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}

// HeatMap writes m (m[i][j]: what rank i sent to rank j) as an SVG heat map:
// senders down, receivers across, a logarithmic colour scale between the
// smallest and the largest non-zero cell, white for zero, rank labels on both
// axes, a legend, and a tooltip per cell. unit names the cells' unit ("bytes").
// Cells are at least 6 px, so that 64 ranks give a 640 px square. The picture is at
// least as wide as the title.
func HeatMap(w io.Writer, m [][]uint64, title, unit string) error {
	n := len(m)
	for _, row := range m {
		if len(row) != n {
			return fmt.Errorf("prof: heat map of a matrix that is not square")
		}
	}
	cell := max(6, min(32, 640/max(n, 1)))
	step := 1 // a label every step ranks, at least 24 px apart
	for step*cell < 24 {
		step *= 2
	}
	const left, top, gap, barW, titleSize = 64, 64, 24, 16, 14
	grid := n * cell
	width, height := left+grid+gap+barW+80, top+grid+56
	width = max(width, left+textWidth(title, titleSize)+16) // a few ranks' grid is narrower than the title

	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, row := range m {
		for _, v := range row {
			if v != 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	scale := func(v uint64) float64 {
		if hi == lo {
			return 1
		}
		return (math.Log(float64(v)) - math.Log(float64(lo))) / (math.Log(float64(hi)) - math.Log(float64(lo)))
	}

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		width, height, width, height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="%d" y="20" font-size="%d" font-weight="bold">%s</text>`+"\n", left, titleSize, html.EscapeString(title))
	// Axes: receiver ranks across the top, sender ranks down the left.
	fmt.Fprintf(b, `<text x="%d" y="38" text-anchor="middle">receiver rank</text>`+"\n", left+grid/2)
	fmt.Fprintf(b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">sender rank</text>`+"\n", top+grid/2)
	for r := 0; r < n; r += step {
		c := r*cell + cell/2
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%d</text>`+"\n", left+c, top-6, r)
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%d</text>`+"\n", left-6, top+c, r)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888888"/>`+"\n", left, top, grid, grid)
	for i, row := range m {
		for j, v := range row {
			fill := zeroColour
			if v != 0 {
				fill = colour(scale(v))
			}
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%d → %d: %d %s</title></rect>`+"\n",
				left+j*cell, top+i*cell, cell, cell, fill, i, j, v, html.EscapeString(unit))
		}
	}
	heatLegend(b, left+grid+gap, top, barW, grid, lo, hi, unit)
	if err := b.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "</svg>\n")
	return err
}

// textWidth bounds the width in pixels of s in bold sans-serif of size px: 0.65 em a
// character, above the average of the common faces (DejaVu Sans Bold, Arial Bold,
// Liberation Sans Bold), so that the title fits whichever one the viewer draws with.
func textWidth(s string, px int) int {
	return int(math.Ceil(0.65 * float64(px) * float64(utf8.RuneCountInString(s))))
}

// heatLegend draws the colour bar (high at the top), its ticks and the zero swatch.
func heatLegend(b *bufio.Writer, x, y, w, h int, lo, hi uint64, unit string) {
	fmt.Fprintf(b, `<defs><linearGradient id="scale" x1="0" y1="1" x2="0" y2="0">`)
	for i := range viridis {
		fmt.Fprintf(b, `<stop offset="%g" stop-color="%s"/>`, float64(i)/float64(len(viridis)-1), colour(float64(i)/float64(len(viridis)-1)))
	}
	fmt.Fprintf(b, "</linearGradient></defs>\n")
	fmt.Fprintf(b, `<text x="%d" y="%d">%s (log)</text>`+"\n", x, y-18, html.EscapeString(unit))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="url(#scale)" stroke="#888888"/>`+"\n", x, y, w, h)
	tick := func(v uint64, t float64) {
		ty := y + int(math.Round((1-t)*float64(h)))
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000000"/>`, x+w, ty, x+w+4, ty)
		fmt.Fprintf(b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", x+w+6, ty, decimal(v))
	}
	if hi != 0 {
		ticks := legendTicks(lo, hi)
		span := math.Log(float64(hi)) - math.Log(float64(lo))
		for _, v := range ticks {
			t := 1.0
			if span > 0 {
				t = (math.Log(float64(v)) - math.Log(float64(lo))) / span
			}
			tick(v, t)
		}
	}
	zy := y + h + 12
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#888888"/>`, x, zy, w, 12, zeroColour)
	fmt.Fprintf(b, `<text x="%d" y="%d" dominant-baseline="middle">0</text>`+"\n", x+w+6, zy+6)
}

// legendTicks returns lo, hi and, between them, the powers of ten (or, where
// fewer than two fit, the values 1, 2 and 5 times a power of ten) at least a
// twelfth of the bar from lo and from hi. It keeps at most five of those: while
// there are more, it keeps every second one.
func legendTicks(lo, hi uint64) []uint64 {
	ticks := []uint64{lo}
	if hi == lo {
		return ticks
	}
	span := math.Log(float64(hi)) - math.Log(float64(lo))
	far := func(a, b uint64) bool {
		return math.Abs(math.Log(float64(a))-math.Log(float64(b))) >= span/12
	}
	between := func(mults ...uint64) []uint64 {
		var vs []uint64
		for p := uint64(1); p <= hi && p <= math.MaxUint64/10; p *= 10 {
			for _, m := range mults {
				if v := m * p; v > lo && v < hi && far(v, lo) && far(v, hi) {
					vs = append(vs, v)
				}
			}
		}
		return vs
	}
	inner := between(1)
	if len(inner) < 2 {
		inner = between(1, 2, 5)
	}
	for len(inner) > 5 { // keep every other value until five remain
		var half []uint64
		for i := 0; i < len(inner); i += 2 {
			half = append(half, inner[i])
		}
		inner = half
	}
	return append(append(ticks, inner...), hi)
}

// decimal formats v with an SI prefix: 950, 12k, 3.4M.
func decimal(v uint64) string {
	const prefixes = "kMGTPE"
	if v < 1000 {
		return fmt.Sprintf("%d", v)
	}
	f, i := float64(v)/1000, 0
	for f >= 1000 && i < len(prefixes)-1 {
		f /= 1000
		i++
	}
	if f < 10 && f != math.Trunc(f) {
		return fmt.Sprintf("%.1f%c", f, prefixes[i])
	}
	return fmt.Sprintf("%.0f%c", f, prefixes[i])
}
