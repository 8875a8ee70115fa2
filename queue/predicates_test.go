package queue_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/turnstile-go/turnstile/queue"
)

type predicate struct {
	name string
	fn   func([]queue.Node, string) queue.Decision
}

var (
	mutexP = predicate{"Mutex", queue.Mutex}
	readP  = predicate{"Read", queue.Read}
	writeP = predicate{"Write", queue.Write}
	latchP = predicate{"Latch", queue.Latch}
)

func semP(n int) predicate {
	return predicate{"Semaphore", func(nodes []queue.Node, self string) queue.Decision {
		return queue.Semaphore(nodes, self, n)
	}}
}

// predCase is one predicate call in listing tokens (see helpers_test.go);
// want is "holds", "missing", or the token of the node self must watch.
type predCase struct {
	p        predicate
	children string
	self     string
	want     string
}

func runPredCases(t *testing.T, cases []predCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.p.name+"/"+tc.children+"/"+tc.self, func(t *testing.T) {
			children, names := listing(t, tc.children)
			self, ok := names[tc.self]
			if !ok {
				self = nameOf(t, tc.self) // a node not in the listing
			}
			var want queue.Decision
			switch tc.want {
			case "holds":
				want.Holds = true
			case "missing":
				want.Missing = true
			default:
				want.Watch = names[tc.want]
				if want.Watch == "" {
					t.Fatalf("want token %q not in %q", tc.want, tc.children)
				}
			}
			nodes, _ := queue.Nodes(children)
			got := tc.p.fn(nodes, self)
			got.Next = false // see TestNext
			if got != want {
				t.Errorf("%s(%s, %s) = %+v; want %+v", tc.p.name, tc.children, tc.self, got, want)
			}
		})
	}
}

func TestMutex(t *testing.T) {
	runPredCases(t, []predCase{
		{mutexP, "M1", "M1", "holds"},
		{mutexP, "M1 M2 M3", "M1", "holds"},
		{mutexP, "M1 M2 M3", "M2", "M1"},
		{mutexP, "M1 M2 M3", "M3", "M2"},
		{mutexP, "M3 M1 M2", "M3", "M2"}, // listing order does not matter
		{mutexP, "M1 M2", "M9", "missing"},
		{mutexP, "", "M1", "missing"},
		{mutexP, "M1 ?M9", "?M9", "missing"}, // self is not a lock node at all
		// Gaps are normal: deletes advance the counter too.
		{mutexP, "M4 M17 M230", "M230", "M17"},
		// Foreign children neither block nor get watched.
		{mutexP, "?foo ?0000000001 ?lock-1 ?_c_bad-lock-0000000001 M5 ?leases M9", "M5", "holds"},
		{mutexP, "?foo ?0000000001 ?lock-1 ?_c_bad-lock-0000000001 M5 ?leases M9", "M9", "M5"},
		// Families mix on one path, ordered by sequence alone.
		{mutexP, "K3 M5 G4 P6", "K3", "holds"},
		{mutexP, "K3 M5 G4 P6", "G4", "K3"},
		{mutexP, "K3 M5 G4 P6", "M5", "G4"},
		{mutexP, "K3 M5 G4 P6", "P6", "M5"},
		// Readers and writers of any client block a mutex, and it them.
		{mutexP, "R1 M2", "M2", "R1"},
		{mutexP, "Q1 M2", "M2", "Q1"},
		{mutexP, "W1 M2", "M2", "W1"},
		{mutexP, "L1 M2", "M2", "L1"},
		// Sequences are compared as numbers.
		{mutexP, "M2 M-5", "M2", "M-5"},
		{mutexP, "M-2147483648 M2147483647", "M2147483647", "M-2147483648"},
	})
}

func TestRead(t *testing.T) {
	runPredCases(t, []predCase{
		{readP, "R1 R2 R3", "R1", "holds"},
		{readP, "R1 R2 R3", "R3", "holds"},         // readers share
		{readP, "Q1 R2 Q3", "R2", "holds"},         // with kazoo's readers too
		{readP, "W1 R2 R3", "R2", "W1"},            // a reader behind a writer waits
		{readP, "W1 R2 R3", "R3", "W1"},            // and watches the writer, never a reader
		{readP, "W1 W2 R3", "R3", "W2"},            // the LAST writer ahead
		{readP, "W1 R2 W3 R4", "R4", "W3"},         // ...
		{readP, "W1 R2 W3 R4", "R2", "W1"},         // never one queued after it
		{readP, "R1 W2", "R1", "holds"},            // a writer queued after a reader does not block it (kazoo #649)
		{readP, "R1 W2 R3", "R1", "holds"},         // ...
		{readP, "R1 W2 R3", "R3", "W2"},            // but blocks the readers behind it
		{readP, "K1 R2", "R2", "K1"},               // a kazoo __lock__ may be a WriteLock
		{readP, "M1 R2 R3", "R3", "M1"},            // a mutex node is exclusive
		{readP, "G1 R2", "R2", "G1"},               // go-zookeeper's too
		{readP, "L1 R2", "R2", "L1"},               // anything but a reader is exclusive
		{readP, "?x W1 ?y R2 ?z", "R2", "W1"},      // foreign names ignored
		{readP, "R1 ?__WRIT__1 R2", "R2", "holds"}, // ...
		{readP, "W1 R2", "R9", "missing"},
		// Downgrade (Curator 5.5, CURATOR-621): the holder of the write
		// lock creates its read node with the writer's sequence number.
		// Whichever of the pair sorts first, the reader is not blocked by it.
		{readP, "W5< R5>", "R5>", "holds"},
		{readP, "R5< W5>", "R5<", "holds"},
		{readP, "W5< R5> W7 R8", "R5>", "holds"},
		{readP, "W5< R5> W7 R8", "R8", "W7"},
		{readP, "W5< R5> R8", "R8", "W5<"}, // a later reader still waits for the writer
		{readP, "W3 W5< R5>", "R5>", "W3"}, // but an earlier writer blocks the downgraded reader
	})
}

func TestWrite(t *testing.T) {
	runPredCases(t, []predCase{
		{writeP, "W1", "W1", "holds"},
		{writeP, "W1 W2", "W2", "W1"},
		{writeP, "R1 W2", "W2", "R1"},    // waits for earlier readers
		{writeP, "R1 R2 W3", "W3", "R2"}, // watching the immediate predecessor
		{writeP, "W1 R2 W3", "W3", "R2"}, // of any kind
		{writeP, "R1 W2 R3", "W2", "R1"}, // ...
		{writeP, "Q1 W2", "W2", "Q1"},    // kazoo readers
		{writeP, "K1 W2", "W2", "K1"},    // kazoo writers
		{writeP, "M1 W2", "W2", "M1"},    // mutex nodes
		{writeP, "W2 ?x ?lock-9", "W2", "holds"},
		{writeP, "W1", "W2", "missing"},
		// Downgrade: the owner's read node with its writer's number does
		// not block the writer, even if it sorts first.
		{writeP, "R5< W5>", "W5>", "holds"},
		{writeP, "W5< R5>", "W5<", "holds"},
		{writeP, "R4 R5< W5>", "W5>", "R4"}, // skipped when choosing whom to watch
		{writeP, "R5< W5> W7", "W7", "W5>"}, // but it blocks a later writer
		{writeP, "W5< R5> W7", "W7", "R5>"}, // ...
	})
}

func TestSemaphore(t *testing.T) {
	const five = "L1 L2 L3 L4 L5"
	runPredCases(t, []predCase{
		{semP(1), five, "L1", "holds"},
		{semP(1), five, "L2", "L1"},
		{semP(1), five, "L5", "L4"},

		{semP(2), five, "L1", "holds"},
		{semP(2), five, "L2", "holds"},
		{semP(2), five, "L3", "L1"}, // n places ahead: the slot it inherits
		{semP(2), five, "L4", "L2"},
		{semP(2), five, "L5", "L3"},

		{semP(3), five, "L3", "holds"},
		{semP(3), five, "L4", "L1"},
		{semP(3), five, "L5", "L2"},
		{semP(3), "L1 L2", "L2", "holds"},
		{semP(3), "L7 L2 L9", "L9", "holds"},

		{semP(2), "?a L1 ?b L2 ?c L3", "L3", "L1"}, // foreign names take no slot
		{semP(2), "L10 L20 L30 L40", "L40", "L20"},
		{semP(2), "M1 R2 L3", "L3", "M1"}, // every lock node takes a slot
		{semP(2), five, "L9", "missing"},
		{semP(0), five, "L1", "holds"}, // below one permit means one
		{semP(0), five, "L2", "L1"},
		{semP(-3), five, "L2", "L1"},
		{semP(100), five, "L5", "holds"},
	})
}

func TestLatch(t *testing.T) {
	runPredCases(t, []predCase{
		{latchP, "E1", "E1", "holds"},
		{latchP, "E1 E2 E3", "E1", "holds"},
		{latchP, "E1 E2 E3", "E2", "E1"},
		{latchP, "E1 E2 E3", "E3", "E2"}, // its predecessor, never the leader
		{latchP, "E3 E1 E2", "E3", "E2"},
		{latchP, "E4 E17 E230", "E230", "E17"},
		{latchP, "E1 E2", "E9", "missing"},
		{latchP, "", "E1", "missing"},
		// Only latch nodes are candidates: another recipe's nodes, or
		// foreign names, neither lead, block nor get watched.
		{latchP, "M1 L2 ?x O0 E3 R4 O4 E5", "E3", "holds"},
		{latchP, "M1 L2 ?x O0 E3 R4 O4 E5", "E5", "E3"},
		{latchP, "O1 E2", "O1", "missing"},
		{latchP, "M1 E2", "M1", "missing"},
		{latchP, "E-5 E0 E7", "E0", "E-5"},
	})
}

// TestNext: a waiter is told that it holds once the node it watches has
// held and gone only when that node is exclusive, alone at its number, and
// the last node ahead that can keep the waiter out.
func TestNext(t *testing.T) {
	for _, tc := range []struct {
		p        predicate
		children string
		self     string
		next     bool
	}{
		{mutexP, "M1 M2", "M2", true},
		{mutexP, "M1 M2 M3", "M3", true}, // M1 is gone by the time M2 holds
		{mutexP, "K1 M2", "M2", true},    // kazoo's __lock__ is exclusive
		{mutexP, "W1 M2", "M2", true},
		{mutexP, "R1 M2", "M2", false}, // readers ahead of a reader may still hold
		{mutexP, "R1 R2 M3", "M3", false},
		{mutexP, "Q1 M2", "M2", false},      // kazoo's __rlock__ is a reader
		{mutexP, "L1 M2", "M2", false},      // a lease is no exclusive node
		{mutexP, "R5< W5> M6", "M6", false}, // a downgraded writer: its reader stays
		{mutexP, "W5< R5> M6", "M6", false}, // (watched either way)
		{writeP, "M1 W2", "W2", true},
		{writeP, "W1 R2 W3", "W3", false},
		{writeP, "R5< W5> W7", "W7", false},
		{writeP, "R1 W2", "W2", false},
		{readP, "W1 R2", "R2", true},
		{readP, "W1 R2 R3", "R3", true}, // the readers between share with it
		{readP, "M1 Q2 R3", "R3", true},
		{readP, "K1 R2", "R2", true},
		{readP, "R5< W5> R8", "R8", false},
		{semP(1), "M1 M2", "M2", true},
		{semP(2), "M1 M2 M3", "M3", false}, // M2 may still hold when M1 goes
		{semP(2), "L1 L2 L3", "L3", false},
	} {
		children, names := listing(t, tc.children)
		nodes, _ := queue.Nodes(children)
		d := tc.p.fn(nodes, names[tc.self])
		if d.Holds || d.Missing || d.Next != tc.next {
			t.Errorf("%s(%s, %s) = %+v, want Next %v", tc.p.name, tc.children, tc.self, d, tc.next)
		}
	}
}

// TestPredicatesInputOrder: the predicates give the same verdicts for any
// order of their input, and leave the caller's slice as it was.
func TestPredicatesInputOrder(t *testing.T) {
	children, _ := listing(t, "W5< R5> R1 W2 M3 Q4 K6 L7 R8 W9 R10 ?x E11 E12")
	sorted, _ := queue.Nodes(children)
	preds := []predicate{mutexP, readP, writeP, semP(2), semP(3), latchP}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		shuffled := slices.Clone(sorted)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		before := slices.Clone(shuffled)
		for _, p := range preds {
			for _, self := range sorted {
				if got, want := p.fn(shuffled, self.Name), p.fn(sorted, self.Name); got != want {
					t.Fatalf("%s(shuffled, %s) = %+v; sorted gives %+v", p.name, self.Name, got, want)
				}
			}
		}
		if !slices.Equal(shuffled, before) {
			t.Fatal("a predicate reordered its input")
		}
	}
}

// TestRWScenario walks one read-write queue through releases, checking at
// each step who holds and that watches follow the ZooKeeper recipe.
func TestRWScenario(t *testing.T) {
	children, names := listing(t, "R1 R2 W3 R4 R5 W6 R7")
	decide := func(self string) queue.Decision {
		nodes, _ := queue.Nodes(children)
		if n, _ := queue.Parse(self); n.Kind == queue.KindRead {
			return queue.Read(nodes, self)
		}
		return queue.Write(nodes, self)
	}
	holders := func() (hs []string) {
		for tok, n := range names {
			if slices.Contains(children, n) && decide(n).Holds {
				hs = append(hs, tok)
			}
		}
		slices.Sort(hs)
		return hs
	}
	release := func(toks ...string) {
		for _, tok := range toks {
			children = slices.DeleteFunc(children, func(c string) bool { return c == names[tok] })
		}
	}
	steps := []struct {
		release []string
		holders []string
	}{
		{nil, []string{"R1", "R2"}},
		{[]string{"R1"}, []string{"R2"}},
		{[]string{"R2"}, []string{"W3"}},
		{[]string{"W3"}, []string{"R4", "R5"}},
		{[]string{"R5", "R4"}, []string{"W6"}},
		{[]string{"W6"}, []string{"R7"}},
	}
	for i, s := range steps {
		release(s.release...)
		if got := holders(); !slices.Equal(got, s.holders) {
			t.Fatalf("step %d: holders %v, want %v", i, got, s.holders)
		}
	}
	// The watches in the initial queue: W3 on R2, R4 and R5 on W3, W6 on R5,
	// R7 on W6. Releasing R1 wakes no one.
	children, _ = listing(t, "R1 R2 W3 R4 R5 W6 R7")
	for self, watch := range map[string]string{"W3": "R2", "R4": "W3", "R5": "W3", "W6": "R5", "R7": "W6"} {
		if got := decide(names[self]).Watch; got != names[watch] {
			t.Errorf("%s watches %q, want %s", self, got, watch)
		}
	}
}
