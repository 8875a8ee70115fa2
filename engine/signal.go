package engine

// signal is a channel closed once something happened, made only when
// someone asks for it. A lease has three (lost, suspended, revoked), and
// most leases are never asked for any: a channel made for each would be
// most of a lease's memory. Its owner's lock guards every method; the
// zero signal is open.
type signal struct {
	ch    chan struct{}
	fired bool
}

// Done is closed once Fire is called.
func (s *signal) Done() <-chan struct{} {
	if s.ch == nil {
		if s.fired {
			return closedSignal
		}
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Fire closes Done, if it is open.
func (s *signal) Fire() {
	if s.fired {
		return
	}
	s.fired = true
	if s.ch != nil {
		close(s.ch)
	}
}

// Fired reports whether Fire was called.
func (s *signal) Fired() bool { return s.fired }

// closedSignal is a channel closed from the start, for signals that fired
// before anyone asked.
var closedSignal = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
