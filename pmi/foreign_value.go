package pmi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// How a Foreign session stores a binary value in a PMI KVS whose values are short
// printable strings (design.md, "Values"): the bytes are encoded as unpadded base64url and
// cut into parts. The first part, under gorma-RANK-KEY, starts with a header
// "g1:PARTS:BYTES:CRC:" (CRC-32 IEEE of the bytes, 8 hex digits); part i >= 1 sits under
// gorma-RANK-KEY.i. Get reads the head, then the other parts, and checks the length and
// the checksum, so that a truncated or garbled value is an error, never wrong bytes.

const (
	foreignKeyPrefix = "gorma-"
	valueMagic       = "g1"

	// MaxForeignValue bounds a value put through a Foreign session: endpoint cards are a
	// few hundred bytes, and every 700-odd bytes cost one more PMI round trip.
	MaxForeignValue = 1 << 20

	minKeyLen   = 16 // shortest keylen_max gorma works with (NUL excluded)
	minValueLen = 64 // shortest vallen_max gorma works with (NUL excluded)
)

// foreignKey is the PMI key of rank's value under key.
func foreignKey(rank int, key string) string {
	return foreignKeyPrefix + strconv.Itoa(rank) + "-" + key
}

// valueBudget is the longest value that can go under pmiKey in one request.
func (f *Foreign) valueBudget(pmiKey string) int {
	n := f.valMax
	if f.wire == wire1 {
		line := len("cmd=put kvsname=" + f.kvsname + " key=" + pmiKey + " value=\n")
		n = min(n, MaxSimpleRequest-line)
	}
	return n
}

// encode returns the PMI keys and values that hold value for rank under key.
func (f *Foreign) encode(rank int, key string, value []byte) (keys, vals []string, err error) {
	if !validKey(key) {
		return nil, nil, fmt.Errorf("pmi: put %q: a key is letters, digits, '_', '-' and '.'", Truncate(key))
	}
	if len(value) > MaxForeignValue {
		return nil, nil, fmt.Errorf("pmi: put %q: value of %d bytes exceeds %d", key, len(value), MaxForeignValue)
	}
	head := foreignKey(rank, key)
	data := base64.RawURLEncoding.EncodeToString(value)
	budget := f.valueBudget(head + ".9999999")
	crc := crc32.ChecksumIEEE(value)
	parts, hdr := 1, ""
	for {
		hdr = fmt.Sprintf("%s:%d:%d:%08x:", valueMagic, parts, len(value), crc)
		if budget-len(hdr) < minValueLen/2 {
			return nil, nil, fmt.Errorf("pmi: put %q: the server's values (%d bytes with this key) are too short", key, budget)
		}
		need := 1 + (max(len(data)-(budget-len(hdr)), 0)+budget-1)/budget
		if need == parts {
			break
		}
		parts = need
	}
	if last := head + "." + strconv.Itoa(parts-1); len(last) > f.keyMax {
		return nil, nil, fmt.Errorf("pmi: put %q: PMI key %q is longer than the server's %d bytes: use a shorter key", key, last, f.keyMax)
	}
	first := min(len(data), budget-len(hdr))
	keys, vals = append(keys, head), append(vals, hdr+data[:first])
	for i, rest := 1, data[first:]; rest != ""; i++ {
		n := min(len(rest), budget)
		keys, vals = append(keys, head+"."+strconv.Itoa(i)), append(vals, rest[:n])
		rest = rest[n:]
	}
	return keys, vals, nil
}

// decode reads and checks rank's value under key.
func (f *Foreign) decode(ctx context.Context, rank int, key string) ([]byte, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("pmi: get %q: a key is letters, digits, '_', '-' and '.'", Truncate(key))
	}
	head := foreignKey(rank, key)
	v, err := f.getRaw(ctx, head)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("pmi: get %q of rank %d: %w (not put, or not fenced yet)", key, rank, ErrNotFound)
		}
		return nil, err
	}
	garbled := func(why string, args ...any) error {
		return fmt.Errorf("pmi: get %q of rank %d: %w: the value under %s is garbled: %s", key, rank, ErrProtocol, head, fmt.Sprintf(why, args...))
	}
	h := strings.SplitN(v, ":", 5)
	if len(h) != 5 || h[0] != valueMagic {
		return nil, garbled("no %s header in %q", valueMagic, Truncate(v))
	}
	parts, err1 := strconv.Atoi(h[1])
	n, err2 := strconv.Atoi(h[2])
	crc, err3 := strconv.ParseUint(h[3], 16, 32)
	want := base64.RawURLEncoding.EncodedLen(n)
	if err1 != nil || err2 != nil || err3 != nil || len(h[3]) != 8 || n < 0 || n > MaxForeignValue || parts < 1 || parts > want+1 {
		return nil, garbled("bad header %q", Truncate(v))
	}
	data := h[4]
	for i := 1; i < parts && len(data) <= want; i++ {
		p, err := f.getRaw(ctx, head+"."+strconv.Itoa(i))
		if errors.Is(err, ErrNotFound) {
			return nil, garbled("part %d of %d is missing", i, parts)
		}
		if err != nil {
			return nil, err
		}
		data += p
	}
	if len(data) != want {
		return nil, garbled("%d characters of base64 for %d bytes, want %d", len(data), n, want)
	}
	b, err := base64.RawURLEncoding.DecodeString(data)
	if err != nil {
		return nil, garbled("%v", err)
	}
	if crc32.ChecksumIEEE(b) != uint32(crc) {
		return nil, garbled("checksum mismatch")
	}
	return b, nil
}
