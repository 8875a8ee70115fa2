package engine

// LingerWatch is for the simulator's check of linger: for the cohort
// nodes whose listing with a watch of path (a server path) is asked, it
// returns what to call once the loop has taken a notification for path,
// which names one that is still there with no holder (lingering: it
// should have gone back, since its watch fired) and is "" otherwise.
func (e *Engine) LingerWatch(path string) (after func() string) {
	armed := e.core.CohortWatching(path)
	return func() string { return e.core.Unheld(armed) }
}
