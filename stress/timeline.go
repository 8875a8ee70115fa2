package main

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// timeline is one run's record second by second, for -report: grants and
// their latencies (an HDR histogram each second, two significant digits),
// failed acquisitions, the faults injected and the measured window. Every
// method is a no-op on a nil timeline: runs without -report pay nothing.
type timeline struct {
	start time.Time

	mu      sync.Mutex
	secs    []*tlSecond
	faults  []faultMark
	from    time.Duration // the measured window, from start
	to      time.Duration
	hasWind bool
}

type tlSecond struct {
	grants, errs int64
	h            *hdrhistogram.Histogram // µs
}

// faultMark is one fault, from its injection to its end (from == to: an
// instant), after the timeline's start.
type faultMark struct {
	Kind     string
	From, To time.Duration
}

func newTimeline(start time.Time) *timeline { return &timeline{start: start} }

// second is the bucket of at; the lock is held.
func (t *timeline) second(at time.Time) *tlSecond {
	i := int(at.Sub(t.start) / time.Second)
	if i < 0 {
		i = 0
	}
	for len(t.secs) <= i {
		t.secs = append(t.secs, nil)
	}
	if t.secs[i] == nil {
		t.secs[i] = &tlSecond{h: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 2)}
	}
	return t.secs[i]
}

// grant records a grant at at, after waiting d.
func (t *timeline) grant(at time.Time, d time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	s := t.second(at)
	s.grants++
	_ = s.h.RecordValue(max(d.Microseconds(), 1))
	t.mu.Unlock()
}

// errorAt records a failed acquisition at at.
func (t *timeline) errorAt(at time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.second(at).errs++
	t.mu.Unlock()
}

// fault records a fault injected at from that ended at to.
func (t *timeline) fault(kind string, from, to time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.faults = append(t.faults, faultMark{Kind: kind, From: from.Sub(t.start), To: to.Sub(t.start)})
	t.mu.Unlock()
}

// window records the measured window.
func (t *timeline) window(from, to time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.from, t.to, t.hasWind = from.Sub(t.start), to.Sub(t.start), true
	t.mu.Unlock()
}

// point is one second of a timeline, as the report draws it.
type point struct {
	Sec                 int
	Grants, Errors      int64
	P50Ms, P99Ms, MaxMs float64
	HasLatency          bool
}

// points are the timeline's seconds, from the first to the last recorded
// (seconds with nothing recorded included, at zero).
func (t *timeline) points() []point {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]point, len(t.secs))
	for i, s := range t.secs {
		out[i].Sec = i
		if s == nil {
			continue
		}
		out[i].Grants, out[i].Errors = s.grants, s.errs
		if s.h.TotalCount() > 0 {
			out[i].HasLatency = true
			out[i].P50Ms = float64(s.h.ValueAtQuantile(50)) / 1000
			out[i].P99Ms = float64(s.h.ValueAtQuantile(99)) / 1000
			out[i].MaxMs = float64(s.h.Max()) / 1000
		}
	}
	return out
}

// marks are the faults and the window, copied.
func (t *timeline) marks() (faults []faultMark, from, to time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]faultMark(nil), t.faults...), t.from, t.to, t.hasWind
}
