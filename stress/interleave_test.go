package main

import (
	"testing"
	"time"
)

// TestInterleavingSlices: after a warm-up slice each, in turn, the measured
// window is cut into rounds in which every impl has one slice of the same
// length; the slices never overlap and fill the window; every impl gets the
// same measured time; the order changes so that no impl always follows the
// same one.
func TestInterleavingSlices(t *testing.T) {
	const n = 4
	p := newInterleaving(time.Unix(1000, 0), n, 2*time.Second, 6*time.Second, time.Second)
	if p.rounds != 6 || p.slice != time.Second || p.windowFrom() != 8*time.Second || p.window() != 24*time.Second || p.measured() != 6*time.Second {
		t.Fatalf("rounds %d, slice %v, window from %v for %v, measured %v; want 6, 1s, 8s for 24s, 6s",
			p.rounds, p.slice, p.windowFrom(), p.window(), p.measured())
	}
	owner := map[time.Duration]int{}   // measured slice start → impl
	preceded := map[int]map[int]bool{} // impl → the impls whose slice came just before its own
	for j := range n {
		sl := p.slicesOf(j)
		if len(sl) != 1+p.rounds {
			t.Fatalf("impl %d: %d slices, want %d", j, len(sl), 1+p.rounds)
		}
		if sl[0] != (slice{from: time.Duration(j) * 2 * time.Second, length: 2 * time.Second}) {
			t.Errorf("impl %d: warm-up %+v, want its own 2s in turn", j, sl[0])
		}
		var own time.Duration
		for k, s := range sl[1:] {
			if s.length != p.slice {
				t.Errorf("impl %d: slice %+v, want length %v", j, s, p.slice)
			}
			round := (s.from - p.windowFrom()) / (n * p.slice)
			if int(round) != k {
				t.Errorf("impl %d: its slice %d at %v is in round %d", j, k, s.from, round)
			}
			if o, ok := owner[s.from]; ok {
				t.Errorf("impls %d and %d both have the slice at %v", o, j, s.from)
			}
			owner[s.from] = j
			own += s.length
		}
		if own != p.measured() {
			t.Errorf("impl %d: %v measured, want %v", j, own, p.measured())
		}
	}
	if len(owner) != p.rounds*n {
		t.Fatalf("%d measured slices, want %d", len(owner), p.rounds*n)
	}
	prev := -1
	for at := p.windowFrom(); at < p.windowFrom()+p.window(); at += p.slice {
		j, ok := owner[at]
		if !ok {
			t.Fatalf("no impl's slice at %v: the window has a hole", at)
		}
		if prev >= 0 && prev != j {
			if preceded[j] == nil {
				preceded[j] = map[int]bool{}
			}
			preceded[j][prev] = true
		}
		prev = j
	}
	for j := range n {
		if len(preceded[j]) < 2 {
			t.Errorf("impl %d always follows the same impl (%v): it would always meet that one's backlog", j, preceded[j])
		}
	}
}

// TestSlicedSchedule: tickets fall in the slices only, at the rate from
// each slice's start; none between; the schedule ends with the last slice.
func TestSlicedSchedule(t *testing.T) {
	s := newSlicedSchedule(10, []slice{{0, time.Second}, {3 * time.Second, 500 * time.Millisecond}})
	s.start = time.Unix(1000, 0)
	if s.total != 15 {
		t.Fatalf("total %d, want 10 + 5", s.total)
	}
	for _, c := range []struct {
		elapsed time.Duration
		want    int64
	}{
		{-time.Millisecond, 0}, {0, 1}, {900 * time.Millisecond, 10}, {2 * time.Second, 10},
		{3 * time.Second, 11}, {3400 * time.Millisecond, 15}, {time.Hour, 15},
	} {
		if got := s.due(c.elapsed); got != c.want {
			t.Errorf("due(%v) = %d, want %d", c.elapsed, got, c.want)
		}
	}
	for _, c := range []struct {
		i    int64
		want time.Duration
	}{{0, 0}, {9, 900 * time.Millisecond}, {10, 3 * time.Second}, {14, 3400 * time.Millisecond}} {
		if got := s.at(c.i).Sub(s.start); got != c.want {
			t.Errorf("ticket %d at %v, want %v", c.i, got, c.want)
		}
	}
	if got := s.offset(15); got < time.Hour {
		t.Errorf("a ticket past the last slice's is due %v after the start", got)
	}
}

// TestInterleavedHistogram: an impl's histogram is one over all its
// measured slices (not its warm-up), and a slice's backlog at its end is
// not dropped: granted during a later slice, or never, it counts with its
// wait from its intended start.
func TestInterleavedHistogram(t *testing.T) {
	// The timeline ended just now: the backlog cut short has waited a
	// few seconds.
	p := newInterleaving(time.Now().Add(-5*time.Second), 2, time.Second, 2*time.Second, time.Second)
	sl := p.slicesOf(0)
	r := &runState{open: newSlicedSchedule(10, sl), lat: newLatencies(), lag: newLatencies()}
	r.open.start = p.epoch
	r.windowFrom.Store(p.epoch.Add(p.windowFrom()).UnixNano())

	grantAll := func(until time.Duration, wait time.Duration, leave int) {
		r.open.release(r.open.due(until))
		for r.open.backlog() > int64(leave) {
			at, _ := r.open.take()
			r.recordGrant(at, at.Add(wait))
		}
	}
	grantAll(sl[0].from+sl[0].length, time.Millisecond, 0) // warm-up: not measured
	if n := r.lat.h.TotalCount(); n != 0 {
		t.Fatalf("%d warm-up grants in the histogram", n)
	}
	// The first measured slice: 2 of its 10 tickets left at its end,
	// granted 1.5 s after their time, in the other impl's slice or later.
	grantAll(sl[1].from+sl[1].length, 2*time.Millisecond, 2)
	for range 2 {
		at, _ := r.open.take()
		r.recordGrant(at, at.Add(1500*time.Millisecond))
	}
	// The second: 3 never granted, cut short at the end of the run.
	grantAll(sl[2].from+sl[2].length, 3*time.Millisecond, 3)
	r.abandonBacklog()

	if n := r.lat.h.TotalCount(); n != 20 {
		t.Fatalf("%d in the histogram, want the 20 tickets of the 2 measured slices", n)
	}
	if r.unfinished.Load() != 3 {
		t.Errorf("%d unfinished, want 3", r.unfinished.Load())
	}
	if got := r.lat.maxMs(); got < 1500 {
		t.Errorf("max %.1f ms: the slice's backlog lost its wait", got)
	}
}
