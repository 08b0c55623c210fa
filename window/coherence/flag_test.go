package coherence

import "testing"

func TestFlagEncoding(t *testing.T) {
	tests := []struct {
		name   string
		flag   uint64
		state  FlagState
		token  uint64
		usable bool
	}{
		{"zero", 0, Invalid, 0, false},
		{"filling 1", FillingFlag(1), Filling, 1, false},
		{"filling max", FillingFlag(maxToken), Filling, maxToken, false},
		{"valid 1", ValidFlag(1), Valid, 1, true},
		{"valid max", ValidFlag(maxToken), Valid, maxToken, true},
		{"valid bit alone", validBit, Invalid, 0, false},
		{"raw filling", 42, Filling, 42, false},
		{"raw valid", 42 | 1<<63, Valid, 42, true},
		{"all ones", ^uint64(0), Valid, maxToken, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, tok := DecodeFlag(tt.flag)
			if st != tt.state || tok != tt.token {
				t.Errorf("DecodeFlag(%#x) = %v, %d; want %v, %d", tt.flag, st, tok, tt.state, tt.token)
			}
			if got := Usable(tt.flag); got != tt.usable {
				t.Errorf("Usable(%#x) = %v, want %v", tt.flag, got, tt.usable)
			}
		})
	}
}

func TestFlagTokenRange(t *testing.T) {
	for _, tok := range []uint64{0, maxToken + 1, ^uint64(0)} {
		for name, f := range map[string]func(uint64) uint64{"ValidFlag": ValidFlag, "FillingFlag": FillingFlag} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s(%#x) did not panic", name, tok)
					}
				}()
				f(tok)
			}()
		}
	}
}

func TestFlagStateString(t *testing.T) {
	for st, want := range map[FlagState]string{Invalid: "Invalid", Filling: "Filling", Valid: "Valid", 9: "FlagState(?)"} {
		if got := st.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", st, got, want)
		}
	}
}

func BenchmarkUsable(b *testing.B) {
	flags := []uint64{0, FillingFlag(7), ValidFlag(7), ValidFlag(8)}
	n := 0
	for i := 0; b.Loop(); i++ {
		if Usable(flags[i&3]) {
			n++
		}
	}
	_ = n
}
