// Command metrics serves a turnstile engine's Prometheus metrics on
// /metrics, on a loopback port, after taking and releasing a lock a number
// of times:
//
//	go run ./examples/metrics -n 10
//	curl -s http://127.0.0.1:9464/metrics | grep ^turnstile_
//
// It runs until interrupted. Set ZK_SERVERS to use servers of your own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/examples/internal/zkenv"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/metrics"
)

// workload is what the example does, and where it serves.
type workload struct {
	servers []string
	listen  string        // host:port of the /metrics server
	path    string        // the lock path
	n       int           // acquisitions, each released
	hold    time.Duration // how long each lease is held
}

func main() {
	w := workload{}
	flag.StringVar(&w.listen, "listen", "127.0.0.1:9464", "address of the /metrics server")
	flag.StringVar(&w.path, "path", "/examples/metrics/orders", "the lock path")
	flag.IntVar(&w.n, "n", 10, "acquisitions to make, each released")
	flag.DurationVar(&w.hold, "hold", 5*time.Millisecond, "how long each lease is held")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	servers, stopZK, err := zkenv.Servers(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
	w.servers = servers
	err = w.run(ctx, func(addr string) {
		fmt.Printf("%d acquisitions done; metrics at http://%s/metrics (interrupt to stop)\n", w.n, addr)
	})
	stopZK()
	if err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

// run starts the engine and the /metrics server, makes the acquisitions,
// calls ready with the server's address, and serves until ctx ends.
func (w workload) run(ctx context.Context, ready func(addr string)) error {
	m := metrics.New()
	eng, err := engine.Start(ctx, engine.Config{Servers: w.servers, Observer: m.Observe})
	if err != nil {
		return err
	}
	defer eng.Close()
	m.Attach(eng)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	ln, err := net.Listen("tcp", w.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		<-served
	}()

	mutex := lock.NewMutex(eng, w.path, lock.WithOwner("examples/metrics"))
	for range w.n {
		if err := hold(ctx, mutex, w.hold); err != nil {
			return err
		}
	}
	ready(ln.Addr().String())
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		return err
	}
}

// hold takes the lock, holds it for d unless it is lost, and releases it.
func hold(ctx context.Context, m *lock.Mutex, d time.Duration) error {
	l, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.Lost():
		return l.Err()
	case <-ctx.Done():
	}
	if err := l.Release(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, engine.ErrLost) {
		return err
	}
	return nil
}
