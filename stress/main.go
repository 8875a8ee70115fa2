// Command stress is turnstile's stress and benchmark harness: it runs lock
// workloads against a real ZooKeeper (embedded, or -servers), for turnstile
// and for the libraries it is measured against (go-zookeeper's Lock, Apache
// Curator and kazoo as processes of their own, a Redis lock on a
// redis-server it starts, the bare requests), injects faults, proves
// exclusion three ways (in process, by fencing tokens, and with
// -witness-file by a witness file peer processes share), counts orphaned
// lock nodes, and reports throughput, latency, requests per cycle, CPU time
// per cycle on the client and the server, and memory.
//
//	go run ./stress -bench -warmup 2s -duration 6s
//	go run ./stress -bench-latency -warmup 2s -duration 6s
//	go run ./stress -impl all -plain -workload keys -workers 64 -duration 6s
//	go run ./stress -impl turnstile,gozk,rawzk,redis -workload keys -rate 1000 -workers 64 -duration 10s -report /tmp/r.html
//	go run ./stress -workload contended -workers 16 -duration 20s -faults conn-cut
//	go run ./stress -impl all -plain -workload uncontended -workers 64 -duration 10s
//	go run ./stress -impl all -workload waiters -paths 100 -workers 100
//	go run ./stress -impl turnstile,redis -faults pause -session-timeout 2s -duration 12s
//	go run ./stress -impl turnstile,turnstile-sqlfence,gozk -faults pause -pause-resource postgres -session-timeout 2s -duration 12s
//	go run ./stress -ensemble 3 -faults leader-kill -workload paths -duration 60s
//	go run ./stress nemesis -duration 2m -seed 1   (as root: see nemesis.go)
//
// Run with -help for every flag. The exit code is non-zero when a run saw a
// violation, an orphaned or leaked lock node, a stuck worker or an error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if code, ok := childMode(); ok {
		os.Exit(code)
	}
	// SIGINT/SIGTERM cancel the run: workers stop, clients close, the
	// embedded ZooKeeper is closed, and what was measured is printed. A
	// second signal ends the process at once (the servers it started die
	// with it: zkserver sets their parent-death signal).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	var code int
	if len(os.Args) > 1 && os.Args[1] == "nemesis" {
		code = nemesisMain(ctx, os.Args[2:], os.Stdout, os.Stderr)
	} else {
		code = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	curatorPeer.close()
	stop()
	os.Exit(code)
}
