package window

// Window options and flavors: what a constructor is told and what it makes.

// Flavor is how a window's memory was obtained.
type Flavor uint8

// Window flavors (MPI_WIN_FLAVOR_*).
const (
	FlavorAllocate Flavor = iota + 1 // Allocate: memory from the pre-registered arena
	FlavorCreate                     // Create: the caller's slice
	FlavorShared                     // AllocateShared: arena memory with SharedQuery
	FlavorDynamic                    // CreateDynamic: memory attached later
)

var flavorNames = [...]string{"", "allocate", "create", "shared", "dynamic"}

// trackNames are the hang reports' names of the creation calls, by flavor.
var trackNames = [...]string{"", "window.Allocate", "window.Create", "window.AllocateShared", "window.CreateDynamic"}

func (f Flavor) String() string {
	if int(f) < len(flavorNames) && f != 0 {
		return flavorNames[f]
	}
	return "Flavor(?)"
}

// Option configures a window at creation. Every rank must pass the same options.
type Option func(*options)

type options struct {
	pageSize  int
	cache     bool
	dynSlots  int
	noZero    bool
	noncontig bool
}

// PageSize sets the page size (bytes, a power of two from 512 to 1 MiB; default 4096) of
// the coherent page cache for cross-host targets.
func PageSize(n int) Option { return func(o *options) { o.pageSize = n } }

// NoCache switches the coherent page cache off: every Get from a cross-host target reads
// the target's memory.
func NoCache() Option { return func(o *options) { o.cache = false } }

// NoZero makes Allocate and AllocateShared leave the window's memory as the arena holds
// it, as MPI_Win_allocate does, instead of clearing it: a freed window's bytes may show.
// It saves writing the whole window, during which the other ranks wait for this one
// (`bin/rmabench --test alloc_free.allocate,alloc_free.nozero` measures both); the
// program must initialize what it reads. Other constructors ignore it.
func NoZero() Option { return func(o *options) { o.noZero = true } }
