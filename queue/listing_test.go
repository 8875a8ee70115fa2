package queue_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// The predicates as first written: a scan back from self over a sorted
// slice, O(n) per contender. The Listing must agree with them everywhere.
func refLocate(nodes []queue.Node, self string) int {
	return slices.IndexFunc(nodes, func(n queue.Node) bool { return n.Name == self })
}

func refSemaphore(nodes []queue.Node, self string, n int) queue.Decision {
	i := refLocate(nodes, self)
	if i < 0 {
		return queue.Decision{Missing: true}
	}
	n = max(n, 1)
	if i < n {
		return queue.Decision{Holds: true}
	}
	return queue.Decision{Watch: nodes[i-n].Name}
}

func refWrite(nodes []queue.Node, self string) queue.Decision {
	i := refLocate(nodes, self)
	if i < 0 {
		return queue.Decision{Missing: true}
	}
	for j := i - 1; j >= 0; j-- {
		if n := nodes[j]; n.Kind != queue.KindRead || n.Seq != nodes[i].Seq {
			return queue.Decision{Watch: n.Name}
		}
	}
	return queue.Decision{Holds: true}
}

func refRead(nodes []queue.Node, self string) queue.Decision {
	i := refLocate(nodes, self)
	if i < 0 {
		return queue.Decision{Missing: true}
	}
	for j := i - 1; j >= 0; j-- {
		if n := nodes[j]; n.Kind != queue.KindRead && n.Seq < nodes[i].Seq {
			return queue.Decision{Watch: n.Name}
		}
	}
	return queue.Decision{Holds: true}
}

// checkAgainstReference fails if a Listing's verdict for any child differs
// from the scanning predicates' (Next aside, which they never set).
func checkAgainstReference(t *testing.T, children []string, permits int) {
	t.Helper()
	l := queue.NewListing(children)
	nodes, _ := queue.Nodes(children)
	selves := append(slices.Clone(children), "foreign-0000000001", nodename.Protected(nodename.NewID(), queue.KindRead)+"0000000001")
	for _, self := range selves {
		for _, c := range []struct {
			name      string
			got, want queue.Decision
		}{
			{"Mutex", l.Mutex(self), refSemaphore(nodes, self, 1)},
			{"Semaphore", l.Semaphore(self, permits), refSemaphore(nodes, self, permits)},
			{"Write", l.Write(self), refWrite(nodes, self)},
			{"Read", l.Read(self), refRead(nodes, self)},
		} {
			c.got.Next = false
			if c.got != c.want {
				t.Fatalf("%s(%s) over %q = %+v; the scan gives %+v", c.name, self, children, c.got, c.want)
			}
		}
	}
}

func TestListingAgreesWithScanningPredicates(t *testing.T) {
	for _, spec := range []string{
		"",
		"M1",
		"R1 R2 W3 R4 R5 W6 R7",
		"W5< R5> R1 W2 M3 Q4 K6 L7 R8 W9 R10 ?x",
		"R5< W5> W7 R8 R9",
		"R4 R5< W5> R5#x W6",
		"?a L1 ?b L2 ?c L3 L4",
		"M-2147483648 M2147483647 R-5 W3",
	} {
		children, _ := listing(t, spec)
		for _, permits := range []int{0, 1, 2, 3} {
			checkAgainstReference(t, children, permits)
		}
	}
}

func FuzzListing(f *testing.F) {
	f.Add([]byte{2, 9, 1, 9, 1, 10, 2, 11, 17, 8}, int8(2))
	f.Add([]byte{1, 9, 2, 9, 33, 9, 50, 9}, int8(3))
	f.Add([]byte{7, 1, 8, 2, 0, 3, 6, 4, 5, 5, 4, 6, 3, 7, 9, 8, 10, 9}, int8(1))
	f.Fuzz(func(t *testing.T, data []byte, permits int8) {
		checkAgainstReference(t, fuzzListing(data), int(permits))
	})
}

func TestListingIndexAndParts(t *testing.T) {
	children, names := listing(t, "?zeta M12 K3 ?leases R7 W9 ?lock-12")
	l := queue.NewListing(children)
	if !slices.Equal(l.Children(), children) {
		t.Errorf("Children = %q, want the listing as given", l.Children())
	}
	if want := []string{"zeta", "leases", "lock-12"}; !slices.Equal(l.Foreign(), want) {
		t.Errorf("Foreign = %q, want %q", l.Foreign(), want)
	}
	for i, tok := range []string{"K3", "R7", "W9", "M12"} {
		if got := l.Index(names[tok]); got != i || l.Nodes()[i].Name != names[tok] {
			t.Errorf("Index(%s) = %d, want %d", tok, got, i)
		}
	}
	for _, name := range []string{"zeta", "", "lock-", nameOf(t, "M13")} {
		if got := l.Index(name); got != -1 {
			t.Errorf("Index(%q) = %d, want -1", name, got)
		}
	}
	for _, name := range children {
		if !l.Has(name) {
			t.Errorf("Has(%q) = false for a listed child", name)
		}
	}
	for _, name := range []string{"", "lock-", "zet", nameOf(t, "M13")} {
		if l.Has(name) {
			t.Errorf("Has(%q) = true for a child not listed", name)
		}
	}
}

// One Listing is shared by every contender of a path, and may be asked
// from several goroutines at once (run with -race).
func TestListingConcurrentUse(t *testing.T) {
	children, names := listing(t, "W1 R2 R3 W4 R5")
	l := queue.NewListing(children)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if d := l.Read(names["R5"]); d.Watch != names["W4"] || !d.Next {
				t.Errorf("Read(R5) = %+v, want Next behind W4", d)
			}
		})
	}
	wg.Wait()
}

// After 2^31 changes of a path that never empties, ZooKeeper's numbers
// wrap to negative; Parse reads them, and numeric order puts the newest
// node first. A Listing tells.
func TestListingWrapped(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		wrapped bool
	}{
		{"", false},
		{"M2147483647", false},
		{"M0 M1 M2", false},
		{"M-5 M3", false},         // the counter passed -1 to 0: order holds
		{"M0 M2147483647", false}, // 2^31-1 apart: still one way round
		{"M-1 M2147483647", true}, // 2^31 apart: either may be older
		{"M2147483646 M2147483647 M-2147483648", true},
		{"R2147483640 W-2147483647 ?x", true},
		{"M-2147483648 M-2147483647", false}, // the nodes from before the wrap are gone
	} {
		children, _ := listing(t, tc.spec)
		if got := queue.NewListing(children).Wrapped(); got != tc.wrapped {
			t.Errorf("Wrapped(%s) = %v, want %v", tc.spec, got, tc.wrapped)
		}
	}
	// The predicates still answer by number: the node made after the wrap
	// is first. Refusing to grant on it is the caller's part.
	children, names := listing(t, "M2147483646 M2147483647 M-2147483648")
	if d := queue.NewListing(children).Mutex(names["M-2147483648"]); !d.Holds {
		t.Errorf("Mutex(M-2147483648) = %+v: numeric order should put it first", d)
	}
}

// A nil Listing lists nothing, and every predicate finds self missing.
// (Failing first: each died of a nil dereference.)
func TestNilListing(t *testing.T) {
	var l *queue.Listing
	if l.Wrapped() || l.Nodes() != nil || l.Foreign() != nil || l.Index("x") != -1 || l.Has("x") {
		t.Error("a nil listing lists something")
	}
	for name, d := range map[string]queue.Decision{"Mutex": l.Mutex("x"), "Semaphore": l.Semaphore("x", 2),
		"Read": l.Read("x"), "Write": l.Write("x"), "Latch": l.Latch("x")} {
		if d != (queue.Decision{Missing: true}) {
			t.Errorf("%s on a nil listing: %+v", name, d)
		}
	}
}
