package runtime

// KillTransportQuietly closes w's transport as its process's death would, but keeps its
// connection to the agent open, so the agent has nothing to report: to its peers it looks
// like a rank that died under a stopped agent.
func KillTransportQuietly(w *World) {
	w.e.halt()
	w.e.links.cm.closeCM()
	w.e.mu.Lock()
	w.e.closeDevicesLocked()
	w.e.mu.Unlock()
}
