package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
)

// ErrMismatch means the ranks of a World made different collective calls at the same point:
// another call, or another count, element type, operator, root or window. Under
// GORMA_CHECK=1 every collective call is compared first and fails at every rank with a
// *MismatchError. Otherwise collectives fail with it where they see it.
var ErrMismatch = errors.New("mismatched collective call")

// CallSig describes a collective call: what every rank of the World must agree on
// (MismatchError, package runtime/substrate's Track).
type CallSig = subcore.CallSig

// sigRecord returns s, number seq on comm, as a hang record.
func sigRecord(s *CallSig, seq uint64, comm string) hang.Record {
	return hang.Record{Call: s.Call, Comm: comm, Seq: seq, Peer: hang.NoRank, Tag: -1,
		Count: s.Count, Type: s.Type, Op: s.Op, Root: s.Root, Win: s.Win}
}

// MismatchError is GORMA_CHECK=1's report of different collective calls at call number Seq
// on the World Comm: this rank, Rank, made Mine, rank Other (job ranks) made Theirs. It
// wraps ErrMismatch.
type MismatchError struct {
	Comm         string
	Seq          uint64
	Rank, Other  int
	Mine, Theirs CallSig
}

func (e *MismatchError) Error() string {
	mine, theirs := sigRecord(&e.Mine, e.Seq, e.Comm), sigRecord(&e.Theirs, e.Seq, e.Comm)
	first, second := e.Rank, e.Other
	if second < first {
		first, second = second, first
		mine, theirs = theirs, mine
	}
	return "rank " + strconv.Itoa(first) + " is in " + mine.String() + ", rank " + strconv.Itoa(second) +
		" in " + theirs.String() + ": every rank of " + e.Comm +
		" must make its collective calls in the same order, with the same count, type, operator and root"
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// The check's messages travel on the World's Sibling's internal context (ctx+3), which
// hang reports leave out while a Track names a call, with tags checkTag | call number <<
// checkRoundBits | round. A message a failed check left behind matches no later call
// within 2^25 calls.
const (
	checkTag       = 1 << 30
	checkRoundBits = 5
	checkSeqMask   = 1<<25 - 1
	checkMaxString = 255
	checkMaxMsg    = 1 + 2*(4+8+8+4+4*(1+checkMaxString))
	checkVersion   = 1
)

// checkEntry is one rank's call in a check message.
type checkEntry struct {
	rank int    // job rank
	sig  []byte // appendCheckSig's encoding
}

// CheckCall compares sig, the collective call number seq on t's World, with every other
// rank's call of that number (subcore.Track.Check). A dissemination exchange of
// ceil(log2 n) rounds, each rank passing on the least and the greatest call it has seen,
// so that every rank ends knowing whether all calls are equal and, if not, one that
// differs from its own. A difference is a *MismatchError at every rank.
func (o trackOps) CheckCall(ctx context.Context, t *subcore.Track, seq uint64, sig *CallSig) error {
	e, in := o.e, (*trackInfo)(subcore.Info(t))
	mine := checkEntry{rank: in.job(in.Me), sig: appendCheckSig(nil, seq, sig)}
	lo, hi := mine, mine
	buf := make([]byte, checkMaxMsg)
	for round, k := 0, 1; k < in.Size; round, k = round+1, k<<1 {
		dst, src := in.job((in.Me+k)%in.Size), in.job((in.Me-k+in.Size)%in.Size)
		tag := checkTag | int(seq&checkSeqMask)<<checkRoundBits | round
		msg := appendCheckMsg(nil, lo, hi)
		// Not failing when any rank fails: a rank that found the mismatch first and ended
		// at once must not keep the others from finding it too.
		st, err := e.sendrecv(ctx, callNone, in.Ctx+3, msg, 1, dst, tag, buf, 1, src, tag, false)
		if err != nil {
			return withOp("collective call check", err)
		}
		olo, ohi, err := decodeCheckMsg(buf[:st.Bytes])
		if err != nil {
			return fmt.Errorf("collective call check: rank %d sent a malformed message (mixed gorma builds in one job?): %w", src, err)
		}
		if bytes.Compare(olo.sig, lo.sig) < 0 {
			lo = checkEntry{olo.rank, bytes.Clone(olo.sig)} // olo.sig is in buf
		}
		if bytes.Compare(ohi.sig, hi.sig) > 0 {
			hi = checkEntry{ohi.rank, bytes.Clone(ohi.sig)}
		}
	}
	if bytes.Equal(lo.sig, hi.sig) {
		return nil
	}
	other := lo
	if bytes.Equal(lo.sig, mine.sig) {
		other = hi
	}
	_, theirs, err := decodeCheckSig(other.sig)
	if err != nil { // decodeCheckMsg checked it
		return err
	}
	return &MismatchError{Comm: in.Comm, Seq: seq, Rank: mine.rank, Other: other.rank, Mine: *sig, Theirs: theirs}
}

// job returns the job rank of member r of the Track's World.
func (in *trackInfo) job(r int) int {
	if in.Members == nil {
		return r
	}
	return in.Members[r]
}

// trackInfo adds job to subcore.TrackInfo.
type trackInfo subcore.TrackInfo

// A check message (little-endian) is a version byte, then the least and the greatest
// call seen, each as rank u32 and a call. A call is seq u64, count i64, root i32, then
// Call, Type, Op and Win, each a length byte and that many bytes (longer strings are
// cut to checkMaxString bytes). Calls compare as their encodings, bytewise.

func appendCheckMsg(b []byte, lo, hi checkEntry) []byte {
	b = append(b, checkVersion)
	for _, x := range [2]checkEntry{lo, hi} {
		b = binary.LittleEndian.AppendUint32(b, uint32(x.rank))
		b = append(b, x.sig...)
	}
	return b
}

func appendCheckSig(b []byte, seq uint64, s *CallSig) []byte {
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(int64(s.Count)))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(s.Root)))
	for _, str := range [4]string{s.Call, s.Type, s.Op, s.Win} {
		str = str[:min(len(str), checkMaxString)]
		b = append(b, byte(len(str)))
		b = append(b, str...)
	}
	return b
}

// decodeCheckMsg decodes a check message. It never panics; a malformed message is an
// error.
func decodeCheckMsg(b []byte) (lo, hi checkEntry, err error) {
	if len(b) < 1 || b[0] != checkVersion {
		return lo, hi, fmt.Errorf("check message of %d bytes without version %d", len(b), checkVersion)
	}
	b = b[1:]
	var es [2]checkEntry
	for i := range es {
		if len(b) < 4 {
			return lo, hi, fmt.Errorf("check message cut in entry %d", i)
		}
		es[i].rank = int(binary.LittleEndian.Uint32(b))
		if es[i].rank >= hang.MaxRank {
			return lo, hi, fmt.Errorf("check message names rank %d", es[i].rank)
		}
		n, _, err := decodeCheckSig(b[4:])
		if err != nil {
			return lo, hi, err
		}
		es[i].sig = b[4 : 4+n]
		b = b[4+n:]
	}
	if len(b) != 0 {
		return lo, hi, fmt.Errorf("check message has %d bytes past its end", len(b))
	}
	return es[0], es[1], nil
}

// decodeCheckSig decodes the call at the start of b and returns its length.
func decodeCheckSig(b []byte) (int, CallSig, error) {
	var s CallSig
	const fixed = 8 + 8 + 4
	if len(b) < fixed {
		return 0, s, fmt.Errorf("check message cut in a call (%d bytes)", len(b))
	}
	s.Count = int(int64(binary.LittleEndian.Uint64(b[8:])))
	s.Root = int(int32(binary.LittleEndian.Uint32(b[16:])))
	n := fixed
	for _, f := range [4]*string{&s.Call, &s.Type, &s.Op, &s.Win} {
		if len(b) < n+1 || len(b) < n+1+int(b[n]) {
			return 0, s, fmt.Errorf("check message cut in a call's name")
		}
		*f = string(b[n+1 : n+1+int(b[n])])
		n += 1 + int(b[n])
	}
	return n, s, nil
}
