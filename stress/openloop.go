package main

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// schedule is an open-loop run's timetable (-rate): acquisition i is meant
// to start at start + i/rate, whether or not earlier ones were granted. A
// scheduler goroutine releases the tickets as their times come and never
// waits for a worker; a free worker takes the oldest released ticket, and
// its latency counts from the ticket's time, so a backlog shows in the
// latencies instead of slowing the offered load (no coordinated omission).
type schedule struct {
	rate  float64
	total int64 // tickets in all; 0: until finish
	start time.Time

	released atomic.Int64 // tickets due so far
	taken    atomic.Int64 // tickets a worker took

	mu       sync.Mutex
	bell     chan struct{} // closed at each release, then replaced
	done     bool          // no ticket will be released any more
	finished chan struct{} // closed with done
}

func newSchedule(rate float64, total int64) *schedule {
	return &schedule{rate: rate, total: total, bell: make(chan struct{}), finished: make(chan struct{})}
}

// at is ticket i's intended start.
func (s *schedule) at(i int64) time.Time {
	return s.start.Add(offsetOf(i, s.rate))
}

// offsetOf is ticket i's intended start after the schedule's start.
func offsetOf(i int64, rate float64) time.Duration {
	return time.Duration(math.Round(float64(i) * float64(time.Second) / rate))
}

// dueBy is how many tickets are due elapsed after the start: ticket 0 at
// once, then one per 1/rate, at most total (0: no limit).
func dueBy(elapsed time.Duration, rate float64, total int64) int64 {
	if elapsed < 0 {
		return 0
	}
	n := int64(math.Floor(elapsed.Seconds()*rate)) + 1
	// Rounding: a ticket is due once its own intended offset has passed.
	for n > 0 && offsetOf(n-1, rate) > elapsed {
		n--
	}
	for offsetOf(n, rate) <= elapsed {
		n++
	}
	if total > 0 && n > total {
		n = total
	}
	return n
}

// release makes the tickets before due available and wakes the waiting
// workers.
func (s *schedule) release(due int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || due <= s.released.Load() {
		return
	}
	s.released.Store(due)
	close(s.bell)
	s.bell = make(chan struct{})
}

// finish releases no more tickets; workers that find none left return.
func (s *schedule) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.done = true
		close(s.bell)
		close(s.finished)
	}
}

// take takes the oldest released ticket, if any.
func (s *schedule) take() (time.Time, bool) {
	for {
		t := s.taken.Load()
		if t >= s.released.Load() {
			return time.Time{}, false
		}
		if s.taken.CompareAndSwap(t, t+1) {
			return s.at(t), true
		}
	}
}

// next waits for a ticket and returns its intended start; false once the
// schedule is finished and drained, or ctx ended.
func (s *schedule) next(ctx context.Context) (time.Time, bool) {
	for {
		// The bell is read before looking for a ticket: a release between
		// the two closes this very bell, so no wake-up is missed.
		s.mu.Lock()
		bell, done := s.bell, s.done
		s.mu.Unlock()
		if at, ok := s.take(); ok {
			return at, true
		}
		if done || ctx.Err() != nil {
			return time.Time{}, false
		}
		select {
		case <-bell:
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
}

// backlog is the tickets released and not yet taken.
func (s *schedule) backlog() int64 { return s.released.Load() - s.taken.Load() }

// run releases tickets on time until every ticket is out, finish, or ctx
// ends. start must be set before.
func (s *schedule) run(ctx context.Context) {
	defer s.finish()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		due := dueBy(time.Since(s.start), s.rate, s.total)
		s.release(due)
		if s.total > 0 && due >= s.total {
			return
		}
		// Sleep to the next ticket's time; a timer that fires late only
		// releases more at once, each still timed from its own start.
		t.Reset(time.Until(s.at(due)))
		select {
		case <-t.C:
		case <-s.finished:
			return
		case <-ctx.Done():
			return
		}
	}
}
