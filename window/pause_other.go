//go:build !amd64

package window

// spinPause does nothing where no spin hint is wired.
func spinPause() {}
