package turnstiletest

import (
	"context"
	"fmt"

	"github.com/turnstile-go/turnstile/engine"
)

// A nil Cluster, or one declared rather than returned by New or Start, has
// no server to act on; a nil context cannot bound a wait. Both are a
// mistake in the test, reported as engine.ErrInvalidRequest, not a nil
// dereference.
var (
	errNilCluster = fmt.Errorf("%w: a nil *turnstiletest.Cluster, or one not made by New or Start", engine.ErrInvalidRequest)
	// A Partition not made by Cluster.NewPartition of a live Cluster has
	// no servers to dial; Silence and Heal of a nil one do nothing.
	errNilPartition = fmt.Errorf("%w: a nil *turnstiletest.Partition, or one not made by Cluster.NewPartition", engine.ErrInvalidRequest)
	errNilContext   = fmt.Errorf("%w: nil context.Context", engine.ErrInvalidRequest)
	// Start has no error to return and a nil t to fail: it panics with this.
	errNilTB = fmt.Errorf("%w: turnstiletest.Start with a nil testing.TB", engine.ErrInvalidRequest)
)

// check refuses a Cluster no constructor made, and a nil ctx where a call
// takes one (pass a non-nil ctx where it takes none).
func (c *Cluster) check(ctx context.Context) error {
	switch {
	case c == nil || len(c.servers) == 0:
		return errNilCluster
	case ctx == nil:
		return errNilContext
	}
	return nil
}
