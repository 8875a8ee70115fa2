package metrics_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/apicheck"
	"github.com/turnstile-go/turnstile/internal/apiwalk"
	"github.com/turnstile-go/turnstile/metrics"
)

// TestWalk calls every exported function and method of the package with
// nil and zero arguments, and with usable ones but one nil, as
// internal/apiwalk's TestWalk does for the library: no call panics or
// hangs. (Failing first: a nil option in New, and a nil or zero
// Collector, died of nil dereferences; Describe and Collect with a nil
// channel blocked forever.)
func TestWalk(t *testing.T) {
	api, err := apicheck.List("..")
	if err != nil {
		t.Fatal(err)
	}
	eng := startEngine(t, engine.Config{})
	w := &apiwalk.Walk{
		Packages: []string{"metrics"},
		API:      api,
		Timeout:  time.Second,
		Funcs:    map[string]any{"metrics.New": metrics.New, "metrics.WithBuckets": metrics.WithBuckets},
		Types: map[string][]apiwalk.Receiver{
			"metrics.Collector": {
				{Name: "new", Make: func(*testing.T, context.Context) any { return metrics.New() }},
				{Name: "attached", Make: func(*testing.T, context.Context) any {
					c := metrics.New(metrics.WithBuckets([]float64{1}, nil))
					c.Attach(eng)
					return c
				}},
			},
		},
		Live: func(t *testing.T, ctx context.Context, typ reflect.Type) (reflect.Value, bool) {
			switch typ {
			case reflect.TypeFor[*engine.Engine]():
				return reflect.ValueOf(eng), true
			case reflect.TypeFor[[]float64]():
				return reflect.ValueOf([]float64{0.5, 2}), true
			case reflect.TypeFor[chan<- *prometheus.Desc]():
				return reflect.ValueOf((chan<- *prometheus.Desc)(make(chan *prometheus.Desc, 1000))), true
			case reflect.TypeFor[chan<- prometheus.Metric]():
				return reflect.ValueOf((chan<- prometheus.Metric)(make(chan prometheus.Metric, 1000))), true
			}
			return reflect.Value{}, false
		},
	}
	w.Run(t)
}
