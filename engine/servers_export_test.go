package engine

// OnLeader reports whether a connection of the engine is open to a server
// known to be the leader (or standalone), whose every answer moves the
// trust deadline.
func (e *Engine) OnLeader() bool {
	e.conns.mu.Lock()
	defer e.conns.mu.Unlock()
	for c := range e.conns.open {
		c.mu.Lock()
		leader := c.leader
		c.mu.Unlock()
		if leader {
			return true
		}
	}
	return false
}
