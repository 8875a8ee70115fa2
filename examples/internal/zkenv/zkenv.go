// Package zkenv gives the examples a ZooKeeper: the servers named in
// ZK_SERVERS (host:port,...), or else one started locally for the run.
package zkenv

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// Servers returns the ZooKeeper addresses to use and a function that stops
// whatever Servers started.
func Servers(ctx context.Context) (servers []string, stop func(), err error) {
	if env := os.Getenv("ZK_SERVERS"); env != "" {
		return strings.Split(env, ","), func() {}, nil
	}
	srv, err := zkserver.Start(ctx, zkserver.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("start a local ZooKeeper (or set ZK_SERVERS): %w", err)
	}
	fmt.Printf("started ZooKeeper at %s (pid %d)\n", srv.Addr(), srv.PID())
	return []string{srv.Addr()}, func() { srv.Close() }, nil
}
