// Package latch is a channel closed once something happened, made only
// when someone asks for it. A lease has three (lost, suspended, revoked),
// and most leases are never asked for any: a channel made for each would
// be most of a lease's memory.
package latch

// Latch is open until Fire. Its owner's lock guards every method; the
// zero Latch is open.
type Latch struct {
	ch    chan struct{}
	fired bool
}

// Done is closed once Fire is called.
func (s *Latch) Done() <-chan struct{} {
	if s.ch == nil {
		if s.fired {
			return closed
		}
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Fire closes Done, if it is open.
func (s *Latch) Fire() {
	if s.fired {
		return
	}
	s.fired = true
	if s.ch != nil {
		close(s.ch)
	}
}

// Fired reports whether Fire was called.
func (s *Latch) Fired() bool { return s.fired }

// closed is a channel closed from the start, for latches that fired before
// anyone asked.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
