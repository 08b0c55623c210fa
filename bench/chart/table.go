package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// parseSizes parses sizes such as 8, 4K, 1M, 24M (powers of 1024).
func parseSizes(list []string) ([]float64, error) {
	var out []float64
	for _, s := range list {
		mult := 1.0
		switch {
		case strings.HasSuffix(s, "K"):
			mult = 1 << 10
		case strings.HasSuffix(s, "M"):
			mult = 1 << 20
		case strings.HasSuffix(s, "G"):
			mult = 1 << 30
		}
		n, err := strconv.ParseFloat(strings.TrimRight(s, "KMG"), 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--sizes: %q: want a byte count such as 8, 4K or 24M", s)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

// sizeLabel writes a byte count the short way: 8, 4K, 1M, 24M.
func sizeLabel(x float64) string {
	for _, u := range []struct {
		n    float64
		unit string
	}{{1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}} {
		if x >= u.n && x/u.n == float64(int(x/u.n)) {
			return strconv.Itoa(int(x/u.n)) + u.unit
		}
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// markdown is the table of ss at sizes (every size of any series when sizes is empty),
// with the ratio of the first series to each other one.
func markdown(ss []series, sizes []float64, digits int) string {
	if len(sizes) == 0 {
		seen := map[float64]bool{}
		for _, s := range ss {
			for x := range s.Points {
				if !seen[x] {
					seen[x] = true
					sizes = append(sizes, x)
				}
			}
		}
		sort.Float64s(sizes)
	}
	var b strings.Builder
	b.WriteString("| bytes |")
	sep := "|---:|"
	for _, s := range ss {
		fmt.Fprintf(&b, " %s |", s.Name)
		sep += "---:|"
	}
	for _, s := range ss[1:] {
		fmt.Fprintf(&b, " %s / %s |", ss[0].Name, s.Name)
		sep += "---:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, x := range sizes {
		fmt.Fprintf(&b, "| %s |", sizeLabel(x))
		for _, s := range ss {
			if y, ok := s.Points[x]; ok {
				fmt.Fprintf(&b, " %s |", num(y, digits))
			} else {
				b.WriteString(" - |")
			}
		}
		g, gok := ss[0].Points[x]
		for _, s := range ss[1:] {
			if y, ok := s.Points[x]; ok && gok && y != 0 {
				fmt.Fprintf(&b, " %s |", ratioText(g/y))
			} else {
				b.WriteString(" - |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// num formats v with digits significant digits, without an exponent.
func num(v float64, digits int) string {
	s := strconv.FormatFloat(v, 'g', digits, 64)
	if strings.ContainsAny(s, "e") {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return s
}
