package gorma_test

import (
	"go/ast"
	"strings"
	"testing"
)

// The window is a facade over parts (window/design.md, "Parts"). These tests hold it to
// that shape: Win hands each call to a part and keeps little of its own, no part grows
// into a second hub, and the parts' files call one way.
const (
	winMaxFields     = 12   // the facade's own fields
	winMaxUnexported = 6    // the facade's own unexported methods
	partMaxMethods   = 50   // any type of the window package
	partMaxFields    = 25   // any struct of the window package
	winMaxTwoWay     = 0.15 // of the file pairs that reference each other at all
)

func TestWindowFacade(t *testing.T) {
	_, files := packageFiles(t, "window")
	if n := structFields(files)["Win"]; n > winMaxFields {
		t.Errorf("window.Win has %d fields (limit %d): keep state in the part that uses it", n, winMaxFields)
	}
	unexported := 0
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv != nil && recvName(fd.Recv.List[0].Type) == "Win" && !fd.Name.IsExported() {
				unexported++
			}
		}
	}
	if unexported > winMaxUnexported {
		t.Errorf("window.Win has %d unexported methods (limit %d): move them to the part they serve", unexported, winMaxUnexported)
	}
}

func TestWindowParts(t *testing.T) {
	_, files := packageFiles(t, "window")
	if big := over(typeMethods(files), partMaxMethods); len(big) > 0 {
		t.Errorf("window types over %d methods: %s: split the part", partMaxMethods, strings.Join(big, ", "))
	}
	if big := over(structFields(files), partMaxFields); len(big) > 0 {
		t.Errorf("window structs over %d fields: %s: split the part", partMaxFields, strings.Join(big, ", "))
	}
}

func TestWindowOneWayFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks window from source")
	}
	pairs, both := twoWay(fileRefs(t, "window"))
	share := float64(len(both)) / float64(pairs)
	t.Logf("window: %d file pairs reference each other, %d both ways (%.1f%%)", pairs, len(both), 100*share)
	if share > winMaxTwoWay {
		t.Errorf("%.1f%% of window's referencing file pairs run both ways (limit %.0f%%):\n\t%s\n"+
			"Put a part's code in its own files and let it call down, not back up.",
			100*share, 100*winMaxTwoWay, strings.Join(both, "\n\t"))
	}
}
