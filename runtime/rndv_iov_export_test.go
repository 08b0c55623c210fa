package runtime

// LayoutReads counts the layout offers this process has read straight into receive
// buffers (rndv_iov.go).
func LayoutReads() int64 { return layoutReads.Load() }
