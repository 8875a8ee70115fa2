package engine

import "github.com/go-zookeeper/zk"

// LingerWatch is for the simulator's check of linger: for the cohort node
// whose watch of its lock path is ch, it returns what to call once the
// wake that ch's firing stepped is done, which names the node if it is
// still there with no holder (lingering: it should have gone back, since
// the watch fired) and is "" otherwise. A node whose watch a poll already
// took (then the wake is stepped at once) is not found: "" always.
func (e *Engine) LingerWatch(ch <-chan zk.Event) (after func() string) {
	cs := &e.cohorts
	var n *node
	cs.mu.Lock()
	for m := range cs.nodes.All() {
		if m.watch == ch {
			n = m
		}
	}
	cs.mu.Unlock()
	return func() string {
		if n == nil {
			return ""
		}
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.nodes.Get(n.attempt) == n && n.holder == nil {
			return n.lease.node
		}
		return ""
	}
}
