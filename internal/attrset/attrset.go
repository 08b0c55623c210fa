package attrset

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// ErrClosed is what Put returns on a Set that TakeAll emptied: its owner was freed.
var ErrClosed = errors.New("attrset: the set is closed")

// Key is the freed state of one kind of attribute (MPI_Comm_free_keyval). Embed it in
// the key type of a Set; the zero Key is live.
type Key struct{ freed atomic.Bool }

// Free marks k freed and reports whether it was live until this call: false for a
// second Free.
func (k *Key) Free() bool { return !k.freed.Swap(true) }

// Freed reports whether Free was called on k.
func (k *Key) Freed() bool { return k.freed.Load() }

// Entry is one attribute of a Set: its key and value.
type Entry[K comparable] struct {
	Key   K
	Value any
}

// Set is the name and attributes of one object, keyed by K (a pointer to the owning
// package's key type).
type Set[K comparable] struct {
	mu     sync.Mutex
	name   string
	named  bool       // SetName was called: name holds, even ""
	closed bool       // TakeAll emptied the set: Put fails
	list   []Entry[K] // in the order their keys were first set
}

// SetName names the set's owner.
func (s *Set[K]) SetName(name string) {
	s.mu.Lock()
	s.name, s.named = name, true
	s.mu.Unlock()
}

// Name returns the name SetName gave, and whether SetName was called.
func (s *Set[K]) Name() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name, s.named
}

// Get returns the value of k and true, or nil and false if the set has none.
func (s *Set[K]) Get(k K) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.index(k); i >= 0 {
		return s.list[i].Value, true
	}
	return nil, false
}

// Put sets the value of k to v and returns the value it replaced and true, or nil and
// false if k had none; a new key goes last. It fails with ErrClosed after TakeAll.
func (s *Set[K]) Put(k K, v any) (old any, replaced bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, ErrClosed
	}
	i := s.index(k)
	if i < 0 {
		s.list = append(s.list, Entry[K]{Key: k, Value: v})
		return nil, false, nil
	}
	old, s.list[i].Value = s.list[i].Value, v
	return old, true, nil
}

// Take removes k and returns its value and true, or nil and false if the set has none.
func (s *Set[K]) Take(k K) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(k)
	if i < 0 {
		return nil, false
	}
	old := s.list[i].Value
	s.list = slices.Delete(s.list, i, i+1)
	return old, true
}

// TakeAll removes every entry and returns them in the reverse of the order their keys
// were set, the order delete functions run at an owner's Free. It closes the set:
// Put fails after it, while Get, Take and TakeAll find nothing.
func (s *Set[K]) TakeAll() []Entry[K] {
	s.mu.Lock()
	list := s.list
	s.list, s.closed = nil, true
	s.mu.Unlock()
	slices.Reverse(list)
	return list
}

// CopyTo replaces dst's entries with those of s that keep keeps (an MPI_Comm_dup's
// copy functions): keep runs on a snapshot of s, in the order the keys were set, with
// no lock held, and returns the value dst gets and whether dst gets the entry at all.
// dst's name is not copied.
func (s *Set[K]) CopyTo(dst *Set[K], keep func(k K, v any) (any, bool)) {
	s.mu.Lock()
	src := slices.Clone(s.list)
	s.mu.Unlock()
	var list []Entry[K]
	for _, e := range src {
		if v, ok := keep(e.Key, e.Value); ok {
			list = append(list, Entry[K]{Key: e.Key, Value: v})
		}
	}
	dst.mu.Lock()
	dst.list = list
	dst.mu.Unlock()
}

// index returns the position of k in s.list, or -1; s.mu is held.
func (s *Set[K]) index(k K) int {
	for i := range s.list {
		if s.list[i].Key == k {
			return i
		}
	}
	return -1
}
