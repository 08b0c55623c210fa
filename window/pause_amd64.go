package window

// spinPause executes PAUSE: a poll loop tells the core it spins.
//
//go:noescape
func spinPause()
