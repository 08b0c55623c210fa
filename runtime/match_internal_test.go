package runtime

import (
	"testing"

	"github.com/gorma-hpc/gorma/runtime/internal/matching"
)

// TestWildcards checks that the runtime's wildcards are the ones package matching knows.
func TestWildcards(t *testing.T) {
	if AnySource != matching.AnySource || AnyTag != matching.AnyTag {
		t.Fatalf("AnySource, AnyTag = %d, %d; matching has %d, %d", AnySource, AnyTag, matching.AnySource, matching.AnyTag)
	}
	r := Request{ctx: 3, peer: AnySource, tag: MaxTag}
	if !r.want().Takes(envelope(3, 5, MaxTag)) || r.want().Takes(envelope(3, 5, MaxTag-1)) {
		t.Fatal("a receive's Envelope does not keep its tag")
	}
}
