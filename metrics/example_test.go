package metrics_test

import (
	"context"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/metrics"
)

// A collector is the engine's observer from the start, reads the engine's
// counters once attached, and is scraped like any other.
func Example() {
	ctx := context.Background()
	m := metrics.New()
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{"127.0.0.1:2181"}, Observer: m.Observe})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	m.Attach(eng)
	prometheus.MustRegister(m)

	http.Handle("/metrics", promhttp.Handler())
	log.Fatal(http.ListenAndServe("127.0.0.1:9464", nil))
}
