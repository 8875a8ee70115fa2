package engine

import (
	"cmp"
	"slices"
)

// What the cohort tests (cohort_test.go, package engine_test) read of the
// cohorts' inside.

// CohortSeesOthers reports whether a cohort of path (relative to the root)
// knows that another client waits: the listing it asked for showed one, or
// its watch fired since.
func (e *Engine) CohortSeesOthers(path string) bool {
	cs := &e.cohorts
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, others := cs.m.Known(path); others {
		return true
	}
	for n := range cs.nodes.All() {
		if n.lease == nil || n.watch == nil || e.namespacePath(n.lease.path) != path {
			continue
		}
		select {
		case <-n.watch: // a watch channel closes once it fired: the next release sees it too
			return true
		default:
		}
	}
	return false
}

// CohortListed reports whether every cohort of path holding a node that
// asked the listing that tells whether another client waits (under
// YieldToOthers, or lingering) has had its answer.
func (e *Engine) CohortListed(path string) bool {
	e.cohorts.mu.Lock()
	defer e.cohorts.mu.Unlock()
	listed, _ := e.cohorts.m.Known(path)
	return listed
}

// CohortLeases are the leases held now by way of a cohort, one per cohort
// holding a node: the leases passed to holders, which Leases (the loop's
// own: a cohort's node is one carrier lease) does not list. In the order
// of their paths, then of their passing.
func (e *Engine) CohortLeases() []*Lease {
	cs := &e.cohorts
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var leases []*Lease
	for n := range cs.nodes.All() {
		if n.holder != nil {
			leases = append(leases, n.holder)
		}
	}
	slices.SortFunc(leases, func(a, b *Lease) int { return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.id, b.id)) })
	return leases
}

// cohortNode is the record of attempt, a cohort's node.
func (e *Engine) cohortNode(attempt uint64) *node {
	e.cohorts.mu.Lock()
	defer e.cohorts.mu.Unlock()
	return e.cohorts.nodes.Get(attempt)
}

// LapseTrust ends the watchdog's trust now, as its timer does at the
// deadline: every held lease is lost. Trust comes back at the next reply
// to a request sent in time.
func (e *Engine) LapseTrust() {
	e.trust.mu.Lock()
	defer e.trust.mu.Unlock()
	e.trust.lapse(ErrLost)
}
