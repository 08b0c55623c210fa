package coherence

// The flag word at a cacher C for (home H, page p) encodes the state of C's copy:
//
//	0                 Invalid
//	t       (t != 0)  Filling(t): C registered token t and is reading the page
//	t|1<<63 (t != 0)  Valid(t):   the copy read under token t may be served locally
//
// Tokens are nonzero and below 2^63. Any rank may store 0 into a flag at any time; C itself
// changes its flags only to Filling (by a plain local store) and from Filling to Valid (by CAS).

// validBit marks a Valid flag; the low 63 bits hold the token.
const validBit = uint64(1) << 63

// maxToken is the largest token a Machine hands out.
const maxToken = validBit - 1

// FlagState is the decoded state of a flag word.
type FlagState uint8

// The flag states.
const (
	Invalid FlagState = iota
	Filling
	Valid
)

func (s FlagState) String() string {
	switch s {
	case Invalid:
		return "Invalid"
	case Filling:
		return "Filling"
	case Valid:
		return "Valid"
	}
	return "FlagState(?)"
}

// Usable reports whether a flag word read from the cacher's own memory allows serving a Get
// from the cached copy without entering the Machine. It is the hit path: branch-only, no
// allocation. The driver must load the flag atomically before copying the cached page.
func Usable(flag uint64) bool {
	return flag&validBit != 0 && flag != validBit
}

// ValidFlag returns the flag word for Valid(token).
func ValidFlag(token uint64) uint64 {
	checkToken(token)
	return token | validBit
}

// FillingFlag returns the flag word for Filling(token).
func FillingFlag(token uint64) uint64 {
	checkToken(token)
	return token
}

// DecodeFlag splits a flag word into its state and token (0 for Invalid). The word
// 1<<63 (Valid with token 0) is never written by any Machine; it decodes as Invalid.
func DecodeFlag(flag uint64) (FlagState, uint64) {
	t := flag &^ validBit
	switch {
	case t == 0:
		return Invalid, 0
	case flag&validBit != 0:
		return Valid, t
	default:
		return Filling, t
	}
}

func checkToken(t uint64) {
	if t == 0 || t > maxToken {
		panic("coherence: token out of range")
	}
}
