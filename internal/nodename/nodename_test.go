package nodename

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMarkersParseAsTheirKind(t *testing.T) {
	for _, k := range []queue.Kind{queue.KindMutex, queue.KindRead, queue.KindWrite, queue.KindLease, queue.KindLatch, queue.KindObserver} {
		id := NewID()
		for _, seq := range []int64{0, 7, 2147483647, -2147483648} {
			name := Protected(id, k) + FormatSeq(seq)
			n, ok := queue.Parse(name)
			if !ok || n.Kind != k || n.ID != id || n.Seq != seq || n.Client != queue.Curator {
				t.Errorf("%s: parsed %+v, %v; want kind %v, id %s, seq %d", name, n, ok, k, id, seq)
			}
		}
		if n, ok := queue.Parse(Marker(k) + FormatSeq(3)); !ok || n.Kind != k || n.ID != "" {
			t.Errorf("bare %v marker: parsed %+v, %v", k, n, ok)
		}
	}
}

func TestProtectedRefusesWhatWouldNotParseBack(t *testing.T) {
	for _, c := range []struct {
		id string
		k  queue.Kind
	}{
		{NewID(), 0},
		{NewID(), queue.KindObserver + 1},
		{"not-an-id", queue.KindMutex},
		{NewID() + "x", queue.KindMutex},
	} {
		if got := Protected(c.id, c.k); got != "" {
			t.Errorf("Protected(%q, %v) = %q, want \"\"", c.id, c.k, got)
		}
	}
}

func TestPinsAreNeitherNodesNorForeign(t *testing.T) {
	pin := PinName(NewID())
	if !IsPin(pin) {
		t.Fatalf("IsPin(%q) = false", pin)
	}
	l := queue.NewListing([]string{pin, Protected(NewID(), queue.KindMutex) + FormatSeq(1)})
	if len(l.Nodes()) != 1 || len(l.Foreign()) != 0 {
		t.Errorf("a listing with a pin: nodes %v, foreign %v; want one node and no foreign name", l.Nodes(), l.Foreign())
	}
}

func TestNewIDsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if seen[id] {
			t.Fatalf("NewID repeated %s", id)
		}
		seen[id] = true
	}
}
