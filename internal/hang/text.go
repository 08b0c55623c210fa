package hang

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Bounds of the text form. AppendRecord and AppendReport cut what exceeds them (strings to
// MaxString bytes, Members to MaxMembers entries, Records to MaxRecords with the rest
// counted in Omitted, Stacks to MaxStacks bytes), so what they write parses whenever the
// numbers are in range (doc.go lists the ranges).
const (
	MaxString    = 256     // bytes of one string field (a record's Call, API, Comm, Type, Op, Win; a report's Host, Trace, End, PMI's), decoded
	MaxMembers   = 4096    // entries of Members
	MaxRank      = 1 << 24 // bound (exclusive) of a member's world rank
	MaxRecordLen = 64 << 10
	MaxRecords   = 256     // records of one report
	MaxStacks    = 1 << 20 // bytes of Stacks
	maxHeaderLen = 8 << 10 // the longest header AppendReport writes (six strings of MaxString escaped bytes) fits
)

// ErrSyntax is wrapped by every error of ParseRecord and ParseReport.
var ErrSyntax = errors.New("hang: bad text form")

func syntaxf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSyntax}, args...)...)
}

// wrap puts where in front of err, making it wrap ErrSyntax if it does not yet.
func wrap(where string, err error) error {
	if errors.Is(err, ErrSyntax) {
		return fmt.Errorf("%s: %w", where, err)
	}
	return syntaxf("%s: %v", where, err)
}

// AppendRecord appends r's one-line text form to b (without a newline) and returns the
// extended buffer. Fields go in a fixed order as space-separated key=value pairs, and a
// field at its default (Comm "", Members nil, Seq 0, Peer NoRank, Tag, Root and Count -1,
// Type, Op and Win "", Since 0) is left out:
//
//	call=Recv comm=World peer=1 tag=0 since=31200000000
//	call=Allreduce comm=World.split3 members=0-3,8 seq=2 count=8 type=float64 op=sum
//
// String values are percent-encoded (every byte but A-Z a-z 0-9 and "-._~:/#@+,"), so any
// string round-trips; Members is a comma-separated list of ranks and ascending runs "a-b";
// Since is in nanoseconds. Members outside [0, MaxRank) are left out.
func AppendRecord(b []byte, r Record) []byte {
	b = append(b, "call="...)
	b = appendEscaped(b, r.Call)
	b = appendString(b, " api=", r.API)
	if r.Comm != "" {
		b = append(b, " comm="...)
		b = appendEscaped(b, r.Comm)
	}
	if m := r.Members; len(m) > 0 {
		if len(m) > MaxMembers {
			m = m[:MaxMembers]
		}
		b = append(b, " members="...)
		b = appendMembers(b, m)
	}
	b = appendUint(b, " seq=", r.Seq, 0)
	b = appendInt(b, " peer=", r.Peer, NoRank)
	b = appendInt(b, " tag=", r.Tag, -1)
	b = appendInt(b, " root=", r.Root, -1)
	b = appendInt(b, " count=", r.Count, -1)
	b = appendString(b, " type=", r.Type)
	b = appendString(b, " op=", r.Op)
	b = appendString(b, " win=", r.Win)
	if r.Since != 0 {
		b = append(b, " since="...)
		b = strconv.AppendInt(b, int64(r.Since), 10)
	}
	return b
}

func appendUint(b []byte, key string, v, def uint64) []byte {
	if v == def {
		return b
	}
	return strconv.AppendUint(append(b, key...), v, 10)
}

func appendInt(b []byte, key string, v, def int) []byte {
	if v == def {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

func appendString(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendEscaped(append(b, key...), v)
}

// appendMembers writes the ranks of m in [0, MaxRank), ascending runs of two or more as "a-b".
func appendMembers(b []byte, m []int) []byte {
	first := true
	for i := 0; i < len(m); {
		if m[i] < 0 || m[i] >= MaxRank {
			i++
			continue
		}
		j := i
		for j+1 < len(m) && m[j+1] == m[j]+1 && m[j+1] < MaxRank {
			j++
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendInt(b, int64(m[i]), 10)
		if j > i {
			b = strconv.AppendInt(append(b, '-'), int64(m[j]), 10)
		}
		i = j + 1
	}
	return b
}

// safe reports whether byte c is written as itself in a percent-encoded value.
func safe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._~:/#@+,", c) >= 0
}

// appendEscaped percent-encodes the first MaxString bytes of s.
func appendEscaped(b []byte, s string) []byte {
	if len(s) > MaxString {
		s = s[:MaxString]
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		if c := s[i]; safe(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}

// unescape decodes a percent-encoded value.
func unescape(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		for i := 0; i < len(s); i++ {
			if !safe(s[i]) {
				return "", syntaxf("byte %q in a value", s[i])
			}
		}
		if len(s) > MaxString {
			return "", syntaxf("value longer than %d bytes", MaxString)
		}
		return s, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) {
				return "", syntaxf("truncated %%-escape")
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", syntaxf("bad %%-escape %q", s[i:i+3])
			}
			out = append(out, hi<<4|lo)
			i += 2
		case safe(c):
			out = append(out, c)
		default:
			return "", syntaxf("byte %q in a value", c)
		}
	}
	if len(out) > MaxString {
		return "", syntaxf("value longer than %d bytes", MaxString)
	}
	return string(out), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// fields splits a line of space-separated key=value pairs, in order. A key appears at
// most once; keys is the set of keys the caller knows, and pairs with other keys (whose
// syntax is still checked) are left out, so that a newer writer's fields do not break an
// older reader.
func fields(line string, keys map[string]bool) ([][2]string, error) {
	if line == "" {
		return nil, syntaxf("empty line")
	}
	var out [][2]string
	seen := map[string]bool{}
	for f := range strings.SplitSeq(line, " ") {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, syntaxf("field %.40q is not key=value", f)
		}
		for i := 0; i < len(k); i++ {
			if c := k[i]; !('a' <= c && c <= 'z') {
				return nil, syntaxf("bad key %.40q", k)
			}
		}
		if seen[k] {
			return nil, syntaxf("key %q twice", k)
		}
		seen[k] = true
		if keys[k] {
			out = append(out, [2]string{k, v})
		}
	}
	return out, nil
}

var recordKeys = map[string]bool{"call": true, "api": true, "comm": true, "members": true, "seq": true, "peer": true,
	"tag": true, "root": true, "count": true, "type": true, "op": true, "win": true, "since": true}

// ParseRecord parses the text form AppendRecord writes. Fields may come in any order,
// unknown keys are skipped, and call is required. A value out of its range (Peer below
// NoRank, Tag, Root or Count below -1, a member outside [0, MaxRank)) or beyond the bounds
// is an error wrapping ErrSyntax.
func ParseRecord(s string) (Record, error) {
	if len(s) > MaxRecordLen {
		return Record{}, syntaxf("record longer than %d bytes", MaxRecordLen)
	}
	fs, err := fields(s, recordKeys)
	if err != nil {
		return Record{}, err
	}
	r := Record{Peer: NoRank, Tag: -1, Root: -1, Count: -1}
	hasCall := false
	for _, f := range fs {
		k, v := f[0], f[1]
		switch k {
		case "call":
			r.Call, err = unescape(v)
			hasCall = true
		case "api":
			r.API, err = unescape(v)
		case "comm":
			r.Comm, err = unescape(v)
		case "members":
			r.Members, err = parseMembers(v)
		case "seq":
			r.Seq, err = strconv.ParseUint(v, 10, 64)
		case "peer":
			r.Peer, err = parseInt(v, NoRank)
		case "tag":
			r.Tag, err = parseInt(v, -1)
		case "root":
			r.Root, err = parseInt(v, -1)
		case "count":
			r.Count, err = parseInt(v, -1)
		case "type":
			r.Type, err = unescape(v)
		case "op":
			r.Op, err = unescape(v)
		case "win":
			r.Win, err = unescape(v)
		case "since":
			var n int64
			n, err = strconv.ParseInt(v, 10, 64)
			r.Since = time.Duration(n)
		}
		if err != nil {
			return Record{}, wrap(k, err)
		}
	}
	if !hasCall {
		return Record{}, syntaxf("no call")
	}
	return r, nil
}

// parseInt parses a decimal int no smaller than lo.
func parseInt(s string, lo int) (int, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, err
	}
	if int(n) < lo {
		return 0, syntaxf("%d below %d", n, lo)
	}
	return int(n), nil
}

// parseMembers parses a members list: ranks and ascending runs "a-b", comma-separated.
func parseMembers(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var m []int
	for item := range strings.SplitSeq(s, ",") {
		a, b, isRun := strings.Cut(item, "-")
		lo, err := parseMember(a)
		if err != nil {
			return nil, err
		}
		hi := lo
		if isRun {
			if hi, err = parseMember(b); err != nil {
				return nil, err
			}
			if hi <= lo {
				return nil, syntaxf("members run %q does not ascend", item)
			}
		}
		if len(m)+hi-lo+1 > MaxMembers {
			return nil, syntaxf("more than %d members", MaxMembers)
		}
		for r := lo; r <= hi; r++ {
			m = append(m, r)
		}
	}
	return m, nil
}

func parseMember(s string) (int, error) {
	if s == "" || len(s) > 8 {
		return 0, syntaxf("bad member %.20q", s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, syntaxf("bad member %.20q", s)
		}
		n = n*10 + int(s[i]-'0')
	}
	if n >= MaxRank {
		return 0, syntaxf("member %d not below %d", n, MaxRank)
	}
	return n, nil
}
