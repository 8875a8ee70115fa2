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
	// slices, when set, are the only spans in which tickets are due (an
	// interleaved run, interleave.go): counts[k] tickets in slices[k],
	// one per 1/rate from its start; total is their sum.
	slices []slice
	counts []int64

	released atomic.Int64 // tickets due so far
	taken    atomic.Int64 // tickets a worker took
	// peak is the most tickets released and not taken at a release: how
	// far the workers fell behind the schedule, all of them busy or not
	// running.
	peak atomic.Int64

	mu       sync.Mutex
	done     atomic.Bool   // no ticket will be released any more
	finished chan struct{} // closed with done
	// wake holds a token per ticket released (as far as it has room): a
	// waiting worker takes a token, then a ticket. One ticket wakes one
	// worker; waking every idle worker at each release instead (a closed
	// channel) cost the harness's process tens of goroutine wake-ups a
	// ticket, CPU that the clients under test and the server on the same
	// cores then lacked.
	wake chan struct{}
}

// wakeRoom is the most tokens waiting in a schedule's wake: past the
// workers of any run, so that a burst of releases can wake every idle one.
const wakeRoom = 1024

func newSchedule(rate float64, total int64) *schedule {
	return &schedule{rate: rate, total: total, finished: make(chan struct{}), wake: make(chan struct{}, wakeRoom)}
}

// ring adds up to n tokens to wake, as many as it has room for: a token
// left out needs no room, as each worker that takes a ticket rings again
// while the backlog lasts.
func (s *schedule) ring(n int64) {
	for ; n > 0; n-- {
		select {
		case s.wake <- struct{}{}:
		default:
			return
		}
	}
}

// newSlicedSchedule is a schedule whose tickets fall only in slices, each
// at rate from the slice's start: the same offered rate as an unsliced
// schedule while a slice lasts, and none between.
func newSlicedSchedule(rate float64, slices []slice) *schedule {
	counts := make([]int64, len(slices))
	var total int64
	for k, sl := range slices {
		counts[k] = sliceTickets(sl.length, rate)
		total += counts[k]
	}
	s := newSchedule(rate, total)
	s.slices, s.counts = slices, counts
	return s
}

// sliceTickets is how many tickets a slice of length holds at rate: the
// drivers (drivers/) count the same way.
func sliceTickets(length time.Duration, rate float64) int64 {
	return int64(math.Ceil(float64(length) * rate / float64(time.Second)))
}

// at is ticket i's intended start.
func (s *schedule) at(i int64) time.Time {
	return s.start.Add(s.offset(i))
}

// offset is ticket i's intended start after the schedule's start: past
// the last slice's tickets, a time no timer reaches.
func (s *schedule) offset(i int64) time.Duration {
	if s.slices == nil {
		return offsetOf(i, s.rate)
	}
	for k, n := range s.counts {
		if i < n {
			return s.slices[k].from + offsetOf(i, s.rate)
		}
		i -= n
	}
	return math.MaxInt64 / 2
}

// due is how many tickets are due elapsed after the start.
func (s *schedule) due(elapsed time.Duration) int64 {
	if s.slices == nil {
		return dueBy(elapsed, s.rate, s.total)
	}
	var n int64
	for k, sl := range s.slices {
		if elapsed < sl.from {
			break
		}
		n += dueBy(elapsed-sl.from, s.rate, s.counts[k])
	}
	return n
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
	prev := s.released.Load()
	if s.done.Load() || due <= prev {
		return
	}
	s.released.Store(due)
	if b := due - s.taken.Load(); b > s.peak.Load() {
		s.peak.Store(b) // only release stores it, under mu
	}
	s.ring(due - prev)
}

// finish releases no more tickets; workers that find none left return.
func (s *schedule) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done.Load() {
		s.done.Store(true)
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
		// done is read before looking for a ticket: once it is set no
		// ticket is released any more, so a worker that then finds none
		// may return. A release after the look rings a token this worker
		// waits for below.
		done := s.done.Load()
		if at, ok := s.take(); ok {
			if s.backlog() > 0 {
				s.ring(1) // the next ticket's worker, if this one took its token
			}
			return at, true
		}
		if done || ctx.Err() != nil {
			return time.Time{}, false
		}
		select {
		case <-s.wake:
		case <-s.finished:
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
		due := s.due(time.Since(s.start))
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
