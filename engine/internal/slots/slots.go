// Package slots keeps records by id, and seats the ones that goroutines
// must find without their owner's lock in slots: small numbers, reused,
// read through a table of atomic pointers. The lock cohort's shell keeps
// its nodes here: a passed lease carries its node's slot rather than a
// pointer of the shell's, and its release reads the node, to ask the
// watchdog about it, before it takes the shell's mutex.
package slots

import (
	"iter"
	"sync/atomic"
)

// Table is records by id, some seated. Its owner's lock guards every
// method but Seated, which anyone may call. A record is seated before its
// slot is handed out, and a slot freed may seat another record later: what
// Seated returns is a hint, which its reader checks under the owner's
// lock. The zero Table is empty and ready.
type Table[R any] struct {
	byID  map[uint64]*seat[R]
	slots atomic.Pointer[[]atomic.Pointer[R]]
	free  []uint64 // the slots freed, for reuse
	used  uint64   // the slots given so far; slot 0 is never given
}

type seat[R any] struct {
	rec  *R
	slot uint64 // 0: not seated
}

// Add keeps r under id.
func (t *Table[R]) Add(id uint64, r *R) {
	if t.byID == nil {
		t.byID = map[uint64]*seat[R]{}
	}
	t.byID[id] = &seat[R]{rec: r}
}

// Get is the record kept under id, or nil.
func (t *Table[R]) Get(id uint64) *R {
	if s := t.byID[id]; s != nil {
		return s.rec
	}
	return nil
}

// Seat gives id's record a slot and returns it. The slots grow by
// copying; a reader goes on with the ones it loaded, whose records it
// checks anyway.
func (t *Table[R]) Seat(id uint64) uint64 {
	s := t.byID[id]
	if k := len(t.free); k > 0 {
		s.slot, t.free = t.free[k-1], t.free[:k-1]
	} else {
		t.used++
		s.slot = t.used
	}
	slots := t.slots.Load()
	if slots == nil || s.slot >= uint64(len(*slots)) {
		grown := make([]atomic.Pointer[R], max(8, 2*s.slot))
		if slots != nil {
			for i := range *slots {
				grown[i].Store((*slots)[i].Load())
			}
		}
		t.slots.Store(&grown)
		slots = &grown
	}
	(*slots)[s.slot].Store(s.rec)
	return s.slot
}

// Seated is the record in slot i, or nil; safe without the owner's lock.
func (t *Table[R]) Seated(i uint64) *R {
	if slots := t.slots.Load(); slots != nil && i < uint64(len(*slots)) {
		return (*slots)[i].Load()
	}
	return nil
}

// Take removes id's record, freeing its slot, and returns it (nil if
// there was none).
func (t *Table[R]) Take(id uint64) *R {
	s := t.byID[id]
	if s == nil {
		return nil
	}
	delete(t.byID, id)
	if s.slot != 0 {
		(*t.slots.Load())[s.slot].Store(nil)
		t.free = append(t.free, s.slot)
	}
	return s.rec
}

// All is every record kept, in no order.
func (t *Table[R]) All() iter.Seq[*R] {
	return func(yield func(*R) bool) {
		for _, s := range t.byID {
			if !yield(s.rec) {
				return
			}
		}
	}
}
