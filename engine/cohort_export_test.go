package engine

// What the cohort tests (cohort_test.go, package engine_test) read of a
// cohort's inside.

// CohortSeesOthers reports whether a cohort of path (relative to the root)
// knows that another client waits: the listing it asked for showed one, or
// its watch fired since.
func (e *Engine) CohortSeesOthers(path string) bool {
	cs := &e.cohorts
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.byPath[path] {
		if c.carrier != nil && c.watchKnown && c.othersWait() {
			return true
		}
	}
	return false
}

// CohortListed reports whether every cohort of path holding a node
// has had the answer to the listing that tells whether another client
// waits.
func (e *Engine) CohortListed(path string) bool {
	cs := &e.cohorts
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.byPath[path] {
		if c.carrier != nil && !c.watchKnown {
			return false
		}
	}
	return true
}
