package interop_test

import (
	"context"
	"testing"

	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/lock"
)

// kazooRetry is a kazoo contender that keeps one Lock object, as a
// long-lived worker does: it tries the lock once without blocking, prints
// TRIED, waits for a line on stdin, then acquires the lock (blocking, with
// a timeout) and prints ACQUIRED, or ERROR and the exception's name.
const kazooRetry = `
import sys
from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock
client = KazooClient(hosts=sys.argv[1])
client.start(timeout=30)
# lock- : see turnstile's nodes too (kazoo/peer.py, DEFAULT_PATTERNS).
lk = Lock(client, sys.argv[2], "kazoo retry", extra_lock_patterns=["lock-"])
print("TRIED %s" % lk.acquire(blocking=False), flush=True)
sys.stdin.readline()
try:
    print("ACQUIRED %s" % lk.acquire(timeout=30), flush=True)
    lk.release()
except Exception as exc:
    print("ERROR %s" % type(exc).__name__, flush=True)
client.stop()
client.close()
`

// A kazoo Lock makes sure of its lock path once and then only creates its
// nodes there: when the path is gone, its acquire fails with NoNodeError
// (it does not retry, and does not make the path again). So a lock path
// turnstile made must outlive turnstile's own node on it: a kazoo
// contender that saw the path, and tried the lock while turnstile held
// it, acquires it once turnstile has let go. (The server's reaper could
// still take the empty container in the instant between the release and
// kazoo's create; it runs once a minute, by default.)
func TestKazooAcquiresAfterTurnstileReleasesAColdKey(t *testing.T) {
	kazoo(t)
	ctx := testCtx(t)
	path := lockPath(t) // a key no client has used: turnstile makes it
	eng := turnstileEngine(t)
	held, err := lock.NewMutex(eng, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}

	peer, err := interop.StartProgram(ctx, "kazoo", interop.KazooPython(), []string{"-c", kazooRetry, zookeeper(t), path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peer.Kill)
	if tried, err := peer.WaitLine(ctx, "TRIED "); err != nil || tried != "False" {
		t.Fatalf("kazoo's try while turnstile holds: %q, %v; want False\n%s", tried, err, peer.Output())
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := peer.Send(""); err != nil {
		t.Fatal(err)
	}
	if got, err := peer.WaitLine(ctx, "ACQUIRED "); err != nil || got != "True" {
		t.Errorf("kazoo's acquire once turnstile let go: %q, %v; want True\n%s", got, err, peer.Output())
	}
}
