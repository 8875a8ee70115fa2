package nodename_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

const (
	uuid1 = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	hex1  = "8eb60557ba51e0da67eefc47467d3f34"
)

func TestFormatSeq(t *testing.T) {
	for _, seq := range []int64{0, 1, 12, 999999999, 1000000000, math.MaxInt32, -1, -12, -999999999, -1000000000, math.MinInt32} {
		s := nodename.FormatSeq(seq)
		if want := fmt.Sprintf("%010d", seq); s != want {
			t.Errorf("FormatSeq(%d) = %q, want %q", seq, s, want)
		}
		n, ok := queue.Parse(nodename.Mutex + s)
		if !ok || n.Seq != seq {
			t.Errorf("Parse(lock-%s) = %+v, %v; want seq %d", s, n, ok, seq)
		}
	}
}

func TestNewID(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		id := nodename.NewID()
		if len(id) != 36 || id != strings.ToLower(id) {
			t.Fatalf("NewID() = %q: want 36 lower-case characters", id)
		}
		if id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("NewID() = %q: not a version 4, RFC 4122 variant UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
		n, ok := queue.Parse(nodename.Protected(id, queue.KindMutex) + "0000000001")
		if !ok || n.ID != id || n.Client != queue.Curator {
			t.Fatalf("a name made with NewID() = %q does not parse back: %+v, %v", id, n, ok)
		}
	}
}

func TestProtectedPrefix(t *testing.T) {
	kinds := []queue.Kind{queue.KindMutex, queue.KindRead, queue.KindWrite, queue.KindLease, queue.KindLatch, queue.KindObserver}
	seqs := []int64{0, 12, math.MaxInt32, -1, math.MinInt32}
	ids := map[string]queue.Client{uuid1: queue.Curator, nodename.NewID(): queue.Curator, hex1: queue.GoZK, "": queue.Curator}
	for id, client := range ids {
		for _, k := range kinds {
			p := nodename.Protected(id, k)
			if p == "" {
				t.Fatalf("ProtectedPrefix(%q, %v) = \"\"", id, k)
			}
			if id != "" && !strings.HasPrefix(p, "_c_"+id+"-") {
				t.Errorf("ProtectedPrefix(%q, %v) = %q: want the _c_<id>- form", id, k, p)
			}
			for _, seq := range seqs {
				name := p + nodename.FormatSeq(seq) // what the server would create
				n, ok := queue.Parse(name)
				want := queue.Node{Name: name, Kind: k, Seq: seq, ID: id, Client: client}
				if !ok || n != want {
					t.Errorf("Parse(%q) = %+v, %v; want %+v", name, n, ok, want)
				}
			}
		}
	}
	if got := nodename.Protected(uuid1, queue.KindMutex); got != "_c_"+uuid1+"-lock-" {
		t.Errorf("ProtectedPrefix(mutex) = %q", got)
	}
	if got := nodename.Protected(uuid1, queue.KindRead); got != "_c_"+uuid1+"-__READ__" {
		t.Errorf("ProtectedPrefix(read) = %q", got)
	}
	for _, id := range []string{"x", uuid1[1:], uuid1 + "0", "not-a-uuid", hex1[1:], "../" + hex1[3:]} {
		if got := nodename.Protected(id, queue.KindMutex); got != "" {
			t.Errorf("ProtectedPrefix(%q, mutex) = %q, want \"\"", id, got)
		}
	}
	if got := nodename.Protected(uuid1, queue.KindLatch); got != "_c_"+uuid1+"-latch-" {
		t.Errorf("ProtectedPrefix(latch) = %q, want Curator LeaderLatch's form", got)
	}
	for _, k := range []queue.Kind{0, queue.KindObserver + 1, -1} {
		if got := nodename.Protected(uuid1, k); got != "" {
			t.Errorf("ProtectedPrefix(%q, %v) = %q, want \"\"", uuid1, k, got)
		}
	}
}
