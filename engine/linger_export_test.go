package engine

// LingerWatch is for the simulator's check of linger: for the cohort
// nodes whose wake is armed on path's children watch, it returns what to
// call once a notification for path has run their wakes, which names one
// that is still there with no holder (lingering: it should have gone
// back, since its watch fired) and is "" otherwise. A node whose
// listing's reply has not been taken yet is not looked at: its wake runs
// once it is.
func (e *Engine) LingerWatch(path string) (after func() string) {
	armed := e.wakes.Armed(path)
	return func() string {
		cs := &e.cohorts
		cs.mu.Lock()
		defer cs.mu.Unlock()
		for _, a := range armed {
			if n := cs.nodes.Get(a); n != nil && n.holder == nil {
				return n.lease.node
			}
		}
		return ""
	}
}
