package engine_test

import (
	"path"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/queue"
)

// cohortCheck holds lock cohorting to its bound: a pass may overtake
// another client waiting on the lock path (any lock node but the
// carrier's, which waits behind that exclusive holder) only while less
// than MaxHold has passed since the carrier's grant, in simulated time.
// So a waiter the cohort keeps out waits at most MaxHold and one hold,
// whatever the policy (CohortConfig.YieldToOthers or not).
//
// The carrier's grant is when the checker first saw it held: at its
// grant's report, or at the latest after the step that granted it, so
// never earlier than the engine's own reading. A pass is judged when the
// checker first sees its lease, after the step that made it: passes are
// made in a release's step, which reads the clock as the checker does.
type cohortCheck struct {
	seenAt map[*lock.Lease]time.Duration // held leases: when first seen held
	// passes counts the passes judged while another client waited.
	passes int
}

func newCohortCheck() cohortCheck {
	return cohortCheck{seenAt: make(map[*lock.Lease]time.Duration)}
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
		if waiting == "" {
			continue
		}
		cc.passes++
		hold := k.holdOf(l)
		if now-granted >= hold {
			w.fail("cohort: %s passed at %.3fs, %v after its node's grant (first seen at %.3fs), past MaxHold %v, while %s waited on %s",
				k.name(l), now.Seconds(), now-granted, granted.Seconds(), hold, waiting, path.Dir(carrier.Node()))
			return
		}
	}
	for l := range cc.seenAt {
		if !held[l] {
			delete(cc.seenAt, l)
		}
	}
}

// waitingBehind names a lock node on carrier's path, now, other than the
// carrier's own and the read node its holder's downgrade took with the
// same number; "" when there is none.
func (k *checker) waitingBehind(carrier *lock.Lease) string {
	own, ok := queue.Parse(path.Base(carrier.Node()))
	if !ok {
		return ""
	}
	children, _ := k.w.model.Children(path.Dir(carrier.Node()))
	for _, c := range children {
		n, ok := queue.Parse(c)
		if ok && c != path.Base(carrier.Node()) && n.Seq != own.Seq {
			return c
		}
	}
	return ""
}

// holdOf is the MaxHold of the engine that holds l.
func (k *checker) holdOf(l *lock.Lease) time.Duration {
	for _, c := range k.w.clients {
		if c.eng == l.Engine() {
			return c.cohortHold
		}
	}
	return engine.DefaultCohortHold
}
