package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// TestTitleInside: a title line wider than the plot's part of the chart (a wide legend
// beside it) starts inside the picture, and one wider than the picture is wrapped; a
// title that fits stays centred over the plot.
func TestTitleInside(t *testing.T) {
	pts := []Point{{X: 8, Y: 1}, {X: 1024, Y: 10}, {X: 1 << 20, Y: 100}}
	series := []ChartSeries{{"gorma", pts}, {"Open MPI osc/sm, a long series name", pts}, {"MPICH", pts}}
	sty := plot.New().Title.TextStyle
	for _, c := range []struct {
		name, source string
		lines        int
	}{
		{"subtitle wider than the plot", "one sweep of each program, 2000 operations a size, a run apart from the tables", 2},
		{"subtitle wider than the chart", strings.Repeat("a sweep apart from the tables, ", 6), 3},
	} {
		ch := Chart{File: "c.svg", Title: "Put + Flush (LockAll), 2 ranks", Source: c.source, X: "bytes", LogY: true,
			XLabel: "message size (bytes)", YLabel: "latency (us)", Series: series}
		path := filepath.Join(t.TempDir(), "c.svg")
		if err := writeChart(ch, path); err != nil {
			t.Fatal(err)
		}
		texts, width := svgTexts(t, path)
		titled := 0
		for _, tx := range texts {
			if tx.body == ch.XLabel { // drawn after the title's lines
				break
			}
			titled++
			if w := float64(sty.Width(tx.body).Points()); tx.x < 0 || tx.x+w > width {
				t.Errorf("%s: title line %q spans x %.1f to %.1f, outside the picture's 0 to %.1f", c.name, tx.body, tx.x, tx.x+w, width)
			}
		}
		if titled != c.lines {
			t.Errorf("%s: %d title lines, want %d", c.name, titled, c.lines)
		}
	}
}

// svgText is a text element of an SVG gonum drew: its start and its text.
type svgText struct {
	x    float64
	body string
}

// svgTexts returns the text elements of the SVG at path and the picture's width in
// points.
func svgTexts(t *testing.T, path string) ([]svgText, float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Box   string `xml:"viewBox,attr"`
		Texts []struct {
			X    string `xml:"x,attr"`
			Body string `xml:",chardata"`
		} `xml:"g>text"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	box := strings.Fields(doc.Box)
	if len(box) != 4 {
		t.Fatalf("viewBox %q", doc.Box)
	}
	width, err := strconv.ParseFloat(box[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	var out []svgText
	for _, tx := range doc.Texts {
		x, err := strconv.ParseFloat(tx.X, 64)
		if err != nil {
			t.Fatalf("text %q at x %q", tx.Body, tx.X)
		}
		out = append(out, svgText{x, tx.Body})
	}
	return out, width
}
