package window

// pscwState is the state of general active-target synchronization (Post, Start,
// Complete, Wait).
type pscwState struct {
	access   []int // the group of the open access epoch (Start), nil when none
	exposure []int // the group of the open exposure epoch (Post), nil when none
}

// active reports whether an access or exposure epoch is open.
func (s *pscwState) active() bool { return s.access != nil || s.exposure != nil }
