package shm

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestOpenRejectsProviderOptions: the shm provider has no options of its own; a non-nil
// Config.Provider (another provider's, most likely) fails Open with ErrInvalid naming its
// type.
func TestOpenRejectsProviderOptions(t *testing.T) {
	type otherOptions struct{ Secret []byte }
	_, err := verbs.Open(Name, verbs.Config{ArenaSize: 16 << 20, Provider: otherOptions{}})
	var ve *verbs.Error
	if !errors.Is(err, verbs.ErrInvalid) || !errors.As(err, &ve) || !strings.Contains(err.Error(), "otherOptions") {
		t.Fatalf("Open with Provider otherOptions: %v, want a *verbs.Error with ErrInvalid naming the type", err)
	}
}
