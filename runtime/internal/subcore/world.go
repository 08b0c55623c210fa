package subcore

// World is what the layers above the runtime ask of a runtime.World beyond the user's
// API. The runtime implements it; Of returns it for a *runtime.World.
type World interface {
	AllocRegion(n int) (*Region, error)
	AllocHostRegion(n int) (*Region, error)
	RegisterRegion(buf []byte) (*Region, error)
	Attach(rank int, desc []byte) (*Remote, error)
	NewCounter() *Counter
	NewTrack() *Track
	MarkInternal()
	OnFree(f func()) error
	FreedErr() error
	Broken() error
	Sibling() (any, error) // a *runtime.World
	ServePeers()
	PollPeers() bool
	ReachOf(r int) Reach
	ReachBetween(a, b int) Reach
	TransportBetween(a, b int) string
	CPUsOf(r int) []int
	Connections() int
	Observe() (*Obs, []int)
	Waiting() *Waiting
}

// Of returns the World interface of w, a *runtime.World. The runtime sets it at init.
var Of func(w any) World

// ReadsUser reports whether the work requests of w (a *runtime.World) read rank r's user
// memory (RegisterRegion), connecting to r first. The runtime sets it at init.
var ReadsUser func(w any, r int) (bool, error)
