package lock

import (
	"context"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/internal/seam"
)

// Revoke asks the holder of the lock node node (a full path, as
// Lease.Node returns it or Participants lists it) to let go, the way
// Curator's Revoker does: it writes Curator's revocation marker into the
// node. A turnstile holder acquired WithRevocation sees its Lease.Revoked
// channel close; a Curator holder made revocable gets its listener called.
// Holders that are not revocable are not told, and none is forced: letting
// go is the holder's decision.
func Revoke(ctx context.Context, eng *engine.Engine, node string) error {
	return seam.SetData(eng, ctx, node, nodename.RevokeData)
}
