package verbs

import (
	"sort"
	"sync"
)

var registry struct {
	mu        sync.Mutex
	providers map[string]Provider
}

// Register makes a provider available to Open. Providers call it from init. It panics if
// the name is empty or taken, as a duplicate registration is a programming error.
func Register(p Provider) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	name := p.Name()
	if name == "" {
		panic("verbs: Register with empty provider name")
	}
	if registry.providers == nil {
		registry.providers = make(map[string]Provider)
	}
	if _, dup := registry.providers[name]; dup {
		panic("verbs: Register called twice for provider " + name)
	}
	registry.providers[name] = p
}

// Lookup returns the registered provider called name.
func Lookup(name string) (Provider, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	p, ok := registry.providers[name]
	return p, ok
}

// Providers returns the registered provider names, sorted.
func Providers() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	names := make([]string, 0, len(registry.providers))
	for n := range registry.providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open opens a device of the provider called name, with cfg's defaults applied.
func Open(name string, cfg Config) (Device, error) {
	p, ok := Lookup(name)
	if !ok {
		return nil, &Error{Op: "open", Provider: name, Err: ErrUnknownProvider,
			Detail: "registered providers: " + joinNames(Providers()) + "; import the provider package for its side effect"}
	}
	return p.Open(cfg.WithDefaults())
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	s := names[0]
	for _, n := range names[1:] {
		s += ", " + n
	}
	return s
}
