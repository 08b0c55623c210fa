package prof

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// matrix64 is a 64-rank pattern: a heavy ring to the right, a 2D halo of
// 8 x 8 with lighter up and down neighbours, a little everyone-to-everyone, and
// rank 5 sending nothing.
func matrix64() [][]uint64 {
	const n = 64
	m := square(n)
	for i := range n {
		if i == 5 {
			continue
		}
		for j := range n {
			if j != i {
				m[i][j] = 100 + uint64(i+j)
			}
		}
		m[i][(i+1)%n] = 50 << 20
		m[i][(i+8)%n] = 4 << 20
		m[i][(i+n-8)%n] = 1 << 20
	}
	return m
}

func TestHeatMap(t *testing.T) {
	var b bytes.Buffer
	if err := HeatMap(&b, matrix64(), "bytes sent, 64 ranks", "bytes"); err != nil {
		t.Fatal(err)
	}
	svg := b.Bytes()
	// Well-formed XML: one rect per cell plus background, frame, legend bar and zero swatch.
	dec := xml.NewDecoder(bytes.NewReader(svg))
	rects, white := 0, 0
	texts := map[string]bool{}
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
			if e.Name.Local == "rect" {
				rects++
				for _, a := range e.Attr {
					if a.Name.Local == "fill" && a.Value == zeroColour {
						white++
					}
				}
			}
		case xml.CharData:
			texts[strings.TrimSpace(string(e))] = true
		}
	}
	if rects != 64*64+4 {
		t.Errorf("%d rects, want %d", rects, 64*64+4)
	}
	// White: the diagonal (64), rank 5's row but its diagonal cell (63), the
	// background and the zero swatch.
	if white != 64+63+2 {
		t.Errorf("%d white rects, want %d", white, 64+63+2)
	}
	for _, s := range []string{"receiver rank", "sender rank", "bytes (log)", "0", "60", "101", "52M", "5 → 6: 0 bytes", "0 → 1: 52428800 bytes"} {
		if !texts[s] {
			t.Errorf("SVG lacks the text %q", s)
		}
	}
	path := filepath.Join(t.TempDir(), "heat64.svg")
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		t.Fatal(err)
	}
	// A real renderer takes it: rsvg-convert (Debian's librsvg2-bin).
	if tool, err := exec.LookPath("rsvg-convert"); err == nil {
		png := strings.TrimSuffix(path, ".svg") + ".png"
		if out, err := exec.Command(tool, "-o", png, path).CombinedOutput(); err != nil {
			t.Fatalf("rsvg-convert: %v\n%s", err, out)
		}
		if st, err := os.Stat(png); err != nil || st.Size() == 0 {
			t.Fatalf("rsvg-convert wrote no PNG: %v", err)
		}
	}
}

func TestHeatMapEdges(t *testing.T) {
	for name, m := range map[string][][]uint64{"empty": {}, "one": {{7}}, "zeros": {{0, 0}, {0, 0}}, "equal": {{0, 3}, {3, 0}}} {
		var b bytes.Buffer
		if err := HeatMap(&b, m, name, "bytes"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil {
			t.Errorf("%s: not XML: %v", name, err)
		}
	}
	if err := HeatMap(io.Discard, [][]uint64{{1, 2}}, "", ""); err == nil {
		t.Error("HeatMap took a matrix that is not square")
	}
}

func TestLegendTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi uint64
		want   string
	}{
		{1, 1, "1"},
		{101, 50 << 20, "101 1k 10k 100k 1M 10M 52M"},
		{3, 7, "3 5 7"},
	} {
		var got []string
		for _, v := range legendTicks(c.lo, c.hi) {
			got = append(got, decimal(v))
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("ticks %d..%d = %s, want %s", c.lo, c.hi, s, c.want)
		}
	}
}

// TestHeatMapTitleFits: the picture is as wide as its title needs, however few the
// ranks: the runtime's title of a 4-rank job is wider than its grid and legend.
func TestHeatMapTitleFits(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8, 64} {
		title := fmt.Sprintf("bytes sent, rank to rank, all kinds (%d ranks)", n)
		var b bytes.Buffer
		if err := HeatMap(&b, square(n), title, "bytes"); err != nil {
			t.Fatal(err)
		}
		var svg struct {
			Width int    `xml:"width,attr"`
			Box   string `xml:"viewBox,attr"`
		}
		if err := xml.Unmarshal(b.Bytes(), &svg); err != nil {
			t.Fatal(err)
		}
		// The title starts at x 64 and takes at most 0.6 em (14 px) a character in the
		// usual bold sans-serif faces.
		need := 64 + int(0.6*14*float64(len(title)))
		if svg.Width < need {
			t.Errorf("%d ranks: %d px wide; the title needs %d", n, svg.Width, need)
		}
		if !strings.HasPrefix(svg.Box, fmt.Sprintf("0 0 %d ", svg.Width)) {
			t.Errorf("%d ranks: viewBox %q does not span the width %d", n, svg.Box, svg.Width)
		}
	}
}
