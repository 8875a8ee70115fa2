package engine_test

import (
	"path"
	"slices"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// cohortCheck holds lock cohorting to its bound: a pass may overtake
// another client waiting on the lock path (any lock node but the
// carrier's, which waits behind that exclusive holder) only while less
// than MaxHold has passed since the carrier's grant, in simulated time,
// or while its engine has not been told of that client: no listing of the
// path that names its node, and no notification of the path's children
// since it was made, taken in by a loop turn before the one that passed.
// A node unheard of past MaxHold and the engine's session timeout after
// the later of the grant and its making is a failure too: the engine
// watches the path, and a notification held up that long has its trust
// lapse (no pass then). So a waiter the cohort keeps out waits at most
// MaxHold and one hold from the grant, or from the notification that
// tells of it if later, whatever the policy (CohortConfig.YieldToOthers
// or not).
//
// The carrier's grant is when the checker first saw it held: at its
// grant's report, or at the latest after the step that granted it, so
// never earlier than the engine's own reading. A waiting node's making is
// when the checker first saw it, after the step that made it: never
// earlier than the server's. A pass is judged when the checker first sees
// its lease, after the step that made it: passes are made in a release's
// step, which reads the clock as the checker does.
type cohortCheck struct {
	seenAt map[*lock.Lease]time.Duration // held leases: when first seen held
	// nodeSeenAt are the lock nodes on the paths of held carriers: when
	// first seen.
	nodeSeenAt map[string]time.Duration
	// passes counts the passes judged while another client waited.
	passes int
}

func newCohortCheck() cohortCheck {
	return cohortCheck{seenAt: make(map[*lock.Lease]time.Duration), nodeSeenAt: make(map[string]time.Duration)}
}

// cohortHold is the MaxHold an engine's cohorts take from cfg.
func cohortHold(cfg engine.CohortConfig) time.Duration {
	if cfg.MaxHold == 0 {
		return engine.DefaultCohortHold
	}
	return cfg.MaxHold
}

// cohorts judges the passes first seen now, among k.leases (every lease
// held); it forgets the leases no longer held.
func (k *checker) cohorts() {
	w, cc := k.w, &k.cohort
	now := w.clock.now
	held := make(map[*lock.Lease]bool, len(k.leases))
	noted := map[string]bool{}
	for _, l := range k.leases {
		if c := l.Carrier(); c != nil {
			if dir := path.Dir(c.Node()); !noted[dir] {
				noted[dir] = true
				k.noteNodes(dir, now)
			}
		}
	}
	for _, l := range k.leases {
		held[l] = true
		if _, ok := cc.seenAt[l]; ok {
			continue
		}
		cc.seenAt[l] = now
		carrier := l.Carrier()
		if carrier == nil || l.Token()&(1<<engine.TokenPassBits-1) == 0 {
			continue // not a pass: the node's first holder under this grant takes it at the grant
		}
		granted, ok := cc.seenAt[carrier]
		if !ok {
			continue // the carrier was never seen held: the lease is judged elsewhere
		}
		waiting := k.waitingBehind(carrier)
		if len(waiting) == 0 {
			continue
		}
		cc.passes++
		hold, cl := k.holdOf(l), k.clientOf(l)
		if now-granted < hold || cl == nil {
			continue
		}
		for _, n := range waiting {
			if turn, ok := cl.heard[n]; ok && turn+1 < cl.turns {
				w.fail("cohort: %s passed at %.3fs, %v after its node's grant (first seen at %.3fs), past MaxHold %v, though %s had taken in word of %s waiting, %d loop turns before",
					k.name(l), now.Seconds(), now-granted, granted.Seconds(), hold, cl.name, n, cl.turns-turn-1)
				return
			}
			if since := cc.nodeSeenAt[n]; now-max(granted, since) >= hold+cl.timeout {
				w.fail("cohort: %s passed at %.3fs, %v after its node's grant (first seen at %.3fs) and %v after %s was first seen waiting, past MaxHold %v and the session timeout %v, its engine never told of it",
					k.name(l), now.Seconds(), now-granted, granted.Seconds(), now-since, n, hold, cl.timeout)
				return
			}
		}
	}
	for l := range cc.seenAt {
		if !held[l] {
			delete(cc.seenAt, l)
		}
	}
}

// noteNodes notes when each node under lockPath was first seen; it
// forgets the path's nodes gone.
func (k *checker) noteNodes(lockPath string, now time.Duration) {
	children, _ := k.w.model.Children(lockPath)
	for _, c := range children {
		if _, ok := k.cohort.nodeSeenAt[lockPath+"/"+c]; !ok {
			k.cohort.nodeSeenAt[lockPath+"/"+c] = now
		}
	}
	for p := range k.cohort.nodeSeenAt {
		if path.Dir(p) == lockPath && !slices.Contains(children, path.Base(p)) {
			delete(k.cohort.nodeSeenAt, p)
		}
	}
}

// waitingBehind names the lock nodes on carrier's path, now, other than
// the carrier's own and the read node its holder's downgrade took with the
// same number, by full path.
func (k *checker) waitingBehind(carrier *lock.Lease) []string {
	own, ok := queue.Parse(path.Base(carrier.Node()))
	if !ok {
		return nil
	}
	dir := path.Dir(carrier.Node())
	children, _ := k.w.model.Children(dir)
	var waiting []string
	for _, c := range children {
		n, ok := queue.Parse(c)
		if ok && c != path.Base(carrier.Node()) && n.Seq != own.Seq {
			waiting = append(waiting, dir+"/"+c)
		}
	}
	return waiting
}

// clientOf is the client whose engine holds l.
func (k *checker) clientOf(l *lock.Lease) *client {
	for _, c := range k.w.clients {
		if c.eng == l.Engine() {
			return c
		}
	}
	return nil
}

// holdOf is the MaxHold of the engine that holds l.
func (k *checker) holdOf(l *lock.Lease) time.Duration {
	if c := k.clientOf(l); c != nil {
		return c.cohortHold
	}
	return engine.DefaultCohortHold
}
