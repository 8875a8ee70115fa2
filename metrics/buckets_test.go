package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/metrics"
	"github.com/turnstile-go/turnstile/queue"
)

// WithBuckets sets the acquire histogram's bounds and, given nil for the
// hold histogram, keeps that one's default ten. Fed reports by hand: no
// engine is needed to observe.
func TestWithBuckets(t *testing.T) {
	c := metrics.New(metrics.WithBuckets([]float64{0.5, 1, 2}, nil))
	node := "_c_8f0e9c55-5b9a-4a3e-9d8c-0a9d1d8b2c11-lock-0000000001"
	for _, r := range []events.Report{
		{Kind: events.Acquiring, ID: 1, Path: "/p", NodeKind: queue.KindMutex},
		{Kind: events.Granted, ID: 1, Path: "/p", Node: node},
		{Kind: events.Released, ID: 1, Path: "/p"},
	} {
		c.Observe(r)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"turnstile_acquire_duration_seconds": 3, "turnstile_hold_duration_seconds": 10}
	for _, f := range families {
		n, ok := want[f.GetName()]
		if !ok {
			continue
		}
		delete(want, f.GetName())
		h := f.GetMetric()[0].GetHistogram()
		if got := len(h.GetBucket()); got != n || h.GetSampleCount() != 1 {
			t.Errorf("%s: %d buckets, %d samples; want %d, 1", f.GetName(), got, h.GetSampleCount(), n)
		}
	}
	if len(want) > 0 {
		t.Errorf("not exported: %v", want)
	}
}
