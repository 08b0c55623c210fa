//go:build !amd64

package window

// copyPieces reports false: memmove copies every size (copy_amd64.go).
func copyPieces(dst, src []byte) bool { return false }
