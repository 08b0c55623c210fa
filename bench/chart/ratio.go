package main

import (
	"fmt"
	"math"
	"strings"
)

// Every ratio the command prints goes through ratioText: two decimals and an x ("0.19x").

// ratioText writes a ratio with two decimals and an x. One that rounds to 0.00 is
// "< 0.01x"; one that is not a number is "-".
func ratioText(q float64) string {
	switch {
	case math.IsNaN(q) || math.IsInf(q, 0):
		return "-"
	case q >= 0 && q < 0.005:
		return "< 0.01x"
	}
	return fmt.Sprintf("%.2fx", q)
}

// optRatio is ratioText of q, or "-" when q is nil (not stated).
func optRatio(q *float64) string {
	if q == nil {
		return "-"
	}
	return ratioText(*q)
}

// ratioRange writes the ratios lo to hi as one range with the x once: "0.45–0.71x".
// When both print the same, it is that one ratio.
func ratioRange(lo, hi float64) string {
	a, b := ratioText(lo), ratioText(hi)
	if a == b {
		return a
	}
	return strings.TrimSuffix(a, "x") + "–" + b
}
