package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// An interleaved open loop (the suite's open-loop scenarios, -bench-latency):
// every impl's client runs at once, and the schedule hands each impl slices
// of one timeline in turn, so that a stall of the machine or of the server
// (a slow fsync of its log) falls into whichever slices it meets, of every
// impl alike, instead of into one impl's whole window. In each slice one
// impl alone is offered the run's rate, so the server carries one offered
// load at a time, as in sequential windows; running every impl at the full
// rate at once would offer the server several times the rate the goal
// names, and running each at a share of it would offer each less.
// A slice's tickets not granted at its end stay in the impl's queue and are
// granted later, timed from their intended start (no coordinated omission);
// the impl's histogram is one over all its slices.

// slice is a span of a schedule, from its start (the interleaving's epoch).
type slice struct{ from, length time.Duration }

// interleaving is the timeline: first a warm-up slice of warm for each impl
// in turn, then rounds rounds of one slice each per impl, the order changing
// from round to round.
type interleaving struct {
	epoch  time.Time
	n      int // impls
	warm   time.Duration
	slice  time.Duration
	rounds int
}

// newInterleaving splits duration into slices of at most sliceLen for n
// impls, after a warm-up slice of warm each; the timeline starts at epoch.
func newInterleaving(epoch time.Time, n int, warm, duration, sliceLen time.Duration) interleaving {
	rounds := int((duration + sliceLen - 1) / sliceLen)
	rounds = max(rounds, 1)
	return interleaving{epoch: epoch, n: n, warm: warm, slice: duration / time.Duration(rounds), rounds: rounds}
}

// windowFrom is when the measured rounds begin, after the epoch.
func (p interleaving) windowFrom() time.Duration { return time.Duration(p.n) * p.warm }

// window is the measured rounds' length: every impl's slices.
func (p interleaving) window() time.Duration {
	return time.Duration(p.rounds*p.n) * p.slice
}

// measured is one impl's share of the window: its own slices.
func (p interleaving) measured() time.Duration { return time.Duration(p.rounds) * p.slice }

// slot is impl j's place in round k: rounds alternate between the impls'
// order and its reverse, each shifted by the round, so that no impl always
// follows the same one (whose backlog it would meet) nor always comes
// first.
func (p interleaving) slot(j, k int) int {
	if k%2 == 0 {
		return (j + k/2) % p.n
	}
	return (p.n - 1 - j + k/2) % p.n
}

// slicesOf is impl j's slices, in time order: its warm-up, then one a round.
func (p interleaving) slicesOf(j int) []slice {
	var out []slice
	if p.warm > 0 {
		out = append(out, slice{from: time.Duration(j) * p.warm, length: p.warm})
	}
	for k := range p.rounds {
		from := p.windowFrom() + time.Duration(k*p.n+p.slot(j, k))*p.slice
		out = append(out, slice{from: from, length: p.slice})
	}
	return out
}

// interleaveSlice is the slices' length in the suite: several rounds in a
// window of seconds, each slice long enough for a few hundred acquisitions
// at the suite's rates.
const interleaveSlice = time.Second

// interleaveLead is the time from launching the impls to the epoch: the
// Curator driver (Java, compiled at start) and kazoo's need seconds to
// connect on a loaded machine.
const interleaveLead = 15 * time.Second

// runInterleaved runs one open-loop scenario's impls at once on one
// interleaving, and returns their results in the impls' order.
func runInterleaved(ctx context.Context, cfg *config, env *runEnv, impls []impl, idx int) []*result {
	p := newInterleaving(time.Now().Add(interleaveLead), len(impls), cfg.Warmup, cfg.Duration, interleaveSlice)
	env.con.logf("interleaved open loop: %d impls, warm-up %v each in turn, then %d rounds of a %v slice each (%v measured each, %v in all)",
		len(impls), p.warm, p.rounds, p.slice, p.measured(), p.window())
	results := make([]*result, len(impls))
	var wg sync.WaitGroup
	for j, im := range impls {
		c := *cfg
		// Lock paths of its own: the impls run at once, and each looks
		// for leaked and orphaned nodes under its root.
		c.LockRoot = fmt.Sprintf("%s/i%d", cfg.LockRoot, idx+j)
		c.LockPath = c.LockRoot + "/one"
		c.interleave = &p
		c.slices = p.slicesOf(j)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[j] = runOne(ctx, &c, env, im, idx+j)
		}()
	}
	wg.Wait()
	return results
}
