package pmi

import (
	"fmt"
	"strings"
)

// parseLine splits one PMI-1 line (without its newline) into its fields, values as they
// travel: keys in any order, fields without '=' ignored, the first of a repeated key
// kept. A line without cmd= is an error.
func parseLine(s string) (msg, error) {
	if len(s) > MaxLine {
		return nil, fmt.Errorf("%w: line of %d bytes exceeds %d", ErrProtocol, len(s), MaxLine)
	}
	m := make(msg)
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	if m["cmd"] == "" {
		return nil, fmt.Errorf("%w: line without cmd= (%q)", ErrProtocol, trunc(s))
	}
	return m, nil
}
