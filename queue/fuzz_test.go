package queue_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// reformat writes a parsed node's name again from its fields.
func reformat(n queue.Node) string {
	seq := nodename.FormatSeq(n.Seq)
	if n.Client == queue.Kazoo {
		marker := "__lock__"
		if n.Kind == queue.KindRead {
			marker = "__rlock__"
		}
		return n.ID + marker + seq
	}
	return nodename.Protected(n.ID, n.Kind) + seq
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"lock-0000000012",
		"lock--000000001",
		"lock--2147483648",
		"lock--100000000",
		"lock--1000000000",
		"lock-2147483647",
		"lock-2147483648",
		"__READ__0000000003",
		"__WRIT__0000000003",
		"lease-0000000000",
		"latch-0000000000",
		"__lock__0000000001",
		"__rlock__0000000001",
		"_c_" + uuid1 + "-lock-0000000012",
		"_c_" + uuid1 + "-__READ__0000000003",
		"_c_" + uuid1 + "-__WRIT__-000000007",
		"_c_" + uuid1 + "-lease-0000000005",
		"_c_" + uuid1 + "-latch-0000000006",
		"_c_" + uuid1 + "-latch0000000006",
		"_c_" + uuid1 + "-observer-0000000007",
		"_c_" + hex1 + "-lock-0000000031",
		hex1 + "__lock__0000000032",
		hex1 + "__rlock__0000000032",
		"_c_",
		"_c_" + uuid1[:30],
		"_c_" + uuid1 + "-lock-000000001",
		"_c_" + uuid1 + "-lock-00000000012",
		"lock-00000000x2",
		"lock-٠٠٠٠٠٠٠٠١٢",
		"\xff\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := queue.Parse(name)
		if !ok {
			if n != (queue.Node{}) {
				t.Fatalf("Parse(%q) failed but returned %+v", name, n)
			}
			return
		}
		if n.Name != name {
			t.Fatalf("Parse(%q).Name = %q", name, n.Name)
		}
		if n.Seq < math.MinInt32 || n.Seq > math.MaxInt32 {
			t.Fatalf("Parse(%q).Seq = %d: outside int32", name, n.Seq)
		}
		if n.Kind < queue.KindMutex || n.Kind > queue.KindObserver {
			t.Fatalf("Parse(%q).Kind = %v", name, n.Kind)
		}
		switch {
		case n.Client == queue.Curator && n.ID != "" && len(n.ID) != 36,
			n.Client == queue.GoZK && len(n.ID) != 32,
			n.Client == queue.Kazoo && n.ID != "" && len(n.ID) != 32,
			n.Client == queue.Kazoo && n.Kind != queue.KindMutex && n.Kind != queue.KindRead,
			n.Client < queue.Curator || n.Client > queue.GoZK:
			t.Fatalf("Parse(%q) = %+v: inconsistent id, kind or client", name, n)
		}
		if got := reformat(n); got != name {
			t.Fatalf("Parse(%q) = %+v, which formats back as %q", name, n, got)
		}
		// A non-negative sequence is exactly ten digits. (A negative one
		// may legitimately grow: "-100000000" and "-1000000000" are both
		// what "%010d" writes.)
		if _, ok := queue.Parse(name + "0"); ok && n.Seq >= 0 {
			t.Fatalf("Parse accepts both %q and one more digit", name)
		}
	})
}

// fuzzListing turns fuzz bytes into a listing: each byte pair is a family
// (or a foreign name), an id nibble and a small sequence number, so ties,
// negative numbers, mixed families and foreign names are all common. It is
// capped at 64 children: the checks are quadratic, and no property needs a
// longer queue to break.
func fuzzListing(data []byte) []string {
	data = data[:min(len(data), 128)]
	seen := make(map[string]bool)
	var children []string
	for i := 0; i+1 < len(data); i += 2 {
		fam, b := data[i], data[i+1]
		h := strings.Repeat(string("0123456789abcdef"[fam>>4]), 32)
		uuid := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
		seq := nodename.FormatSeq(int64(b%24) - 4)
		var name string
		switch fam % 13 {
		case 0:
			name = nodename.Protected(uuid, queue.KindMutex) + seq
		case 1:
			name = nodename.Protected(uuid, queue.KindRead) + seq
		case 2:
			name = nodename.Protected(uuid, queue.KindWrite) + seq
		case 3:
			name = nodename.Protected(uuid, queue.KindLease) + seq
		case 4:
			name = nodename.Mutex + seq
		case 5:
			name = nodename.Read + seq
		case 6:
			name = nodename.Protected(h, queue.KindMutex) + seq
		case 7:
			name = h + "__lock__" + seq
		case 8:
			name = h + "__rlock__" + seq
		case 9:
			name = "_c_" + uuid + "-lock-" + seq[1:] // foreign: a digit short
		case 10:
			name = nodename.Protected(uuid, queue.KindLatch) + seq
		case 11:
			name = nodename.Protected(uuid, queue.KindObserver) + seq
		default:
			name = "foreign-" + seq
		}
		if !seen[name] {
			seen[name] = true
			children = append(children, name)
		}
	}
	return children
}

func FuzzPredicates(f *testing.F) {
	f.Add([]byte{}, int8(1))
	f.Add([]byte{0, 5, 16, 6, 32, 7}, int8(1))
	f.Add([]byte{2, 9, 1, 9, 1, 10, 2, 11, 17, 8}, int8(2)) // a downgrade pair and neighbours
	f.Add([]byte{1, 9, 2, 9, 33, 9, 50, 9}, int8(3))        // everything ties
	f.Add([]byte{7, 1, 8, 2, 0, 3, 6, 4, 5, 5, 4, 6, 3, 7, 9, 8, 10, 9}, int8(2))
	f.Add([]byte{3, 0, 3, 1, 19, 2, 35, 3, 51, 4}, int8(0))
	f.Add([]byte{2, 20, 1, 0, 1, 1, 2, 2}, int8(-4))
	f.Fuzz(func(t *testing.T, data []byte, permits int8) {
		children := fuzzListing(data)
		nodes, _ := queue.Nodes(children)
		reversed := slices.Clone(nodes)
		slices.Reverse(reversed)
		n := int(permits)
		sem := func(nodes []queue.Node, self string) queue.Decision { return queue.Semaphore(nodes, self, n) }
		preds := map[string]func([]queue.Node, string) queue.Decision{
			"Mutex": queue.Mutex, "Read": queue.Read, "Write": queue.Write, "Semaphore": sem,
		}
		byName := make(map[string]queue.Node)
		for _, nd := range nodes {
			byName[nd.Name] = nd
		}

		for pname, p := range preds {
			holders := 0
			for i, self := range nodes {
				d := p(nodes, self.Name)
				if d != p(reversed, self.Name) {
					t.Fatalf("%s(%s): input order changed the verdict", pname, self.Name)
				}
				if d.Missing {
					t.Fatalf("%s(%s) = missing, but it is listed", pname, self.Name)
				}
				if i == 0 && !d.Holds {
					t.Fatalf("%s: the first node %s does not hold", pname, self.Name)
				}
				if d.Holds {
					holders++
					if d.Watch != "" {
						t.Fatalf("%s(%s) holds and watches %q", pname, self.Name, d.Watch)
					}
					continue
				}
				w, ok := byName[d.Watch]
				if !ok {
					t.Fatalf("%s(%s) watches %q, which is not a listed lock node", pname, self.Name, d.Watch)
				}
				if !queue.Less(w, self) {
					t.Fatalf("%s(%s) watches %s, which does not queue before it", pname, self.Name, w.Name)
				}
				if d.Next {
					// Once w has held (everything before it gone) and gone
					// itself, self holds.
					after := slices.DeleteFunc(slices.Clone(nodes), func(o queue.Node) bool { return !queue.Less(w, o) })
					if !p(after, self.Name).Holds {
						t.Fatalf("%s(%s) = Next behind %s, but does not hold once it is gone", pname, self.Name, w.Name)
					}
				}
			}
			switch limit := max(n, 1); {
			case pname == "Mutex" && len(nodes) > 0 && holders != 1:
				t.Fatalf("Mutex: %d holders", holders)
			case pname == "Semaphore" && holders != min(limit, len(nodes)):
				t.Fatalf("Semaphore(%d): %d holders of %d nodes", n, holders, len(nodes))
			}
			// Not a lock node, or not listed at all: missing.
			for _, self := range []string{"foreign-0000000001", nodename.Protected(nodename.NewID(), queue.KindMutex) + "0000000001"} {
				if d := p(nodes, self); d != (queue.Decision{Missing: true}) {
					t.Fatalf("%s(absent %s) = %+v", pname, self, d)
				}
			}
		}

		for _, self := range nodes {
			d := queue.Read(nodes, self.Name)
			for _, o := range nodes {
				if o.Kind != queue.KindRead && o.Seq < self.Seq && d.Holds {
					t.Fatalf("Read(%s) holds behind exclusive %s", self.Name, o.Name)
				}
			}
			if w := byName[d.Watch]; !d.Holds && (w.Kind == queue.KindRead || w.Seq >= self.Seq) {
				t.Fatalf("Read(%s) watches %s, which cannot block it", self.Name, w.Name)
			}
			if queue.Write(nodes, self.Name).Holds {
				for _, o := range nodes {
					if queue.Less(o, self) && (o.Kind != queue.KindRead || o.Seq != self.Seq) {
						t.Fatalf("Write(%s) holds behind %s", self.Name, o.Name)
					}
				}
			}
		}

		// Latch: the first latch node leads, every other latch node watches
		// the latch node just before it, and nothing else is a candidate.
		var latches []queue.Node
		for _, nd := range nodes {
			if nd.Kind == queue.KindLatch {
				latches = append(latches, nd)
			}
		}
		for _, self := range nodes {
			d := queue.Latch(nodes, self.Name)
			if d != queue.Latch(reversed, self.Name) {
				t.Fatalf("Latch(%s): input order changed the verdict", self.Name)
			}
			i := slices.IndexFunc(latches, func(l queue.Node) bool { return l.Name == self.Name })
			var want queue.Decision
			switch {
			case i < 0:
				want.Missing = true
			case i == 0:
				want.Holds = true
			default:
				want.Watch = latches[i-1].Name
			}
			if d != want {
				t.Fatalf("Latch(%s) = %+v, want %+v", self.Name, d, want)
			}
		}

		// Each node runs the predicate of its kind, as its owner would on a
		// read-write path (kazoo's WriteLock is a "__lock__" mutex node): at
		// most one exclusive holder, and readers beside it only if they are
		// its own downgrade, with its sequence number.
		var exclusive []queue.Node
		var readers []queue.Node
		for _, self := range nodes {
			switch {
			case self.Kind == queue.KindRead:
				if queue.Read(nodes, self.Name).Holds {
					readers = append(readers, self)
				}
			case self.Kind == queue.KindWrite:
				if queue.Write(nodes, self.Name).Holds {
					exclusive = append(exclusive, self)
				}
			default:
				if queue.Mutex(nodes, self.Name).Holds {
					exclusive = append(exclusive, self)
				}
			}
		}
		if len(exclusive) > 1 {
			t.Fatalf("exclusive holders %v", exclusive)
		}
		for _, x := range exclusive {
			for _, r := range readers {
				if r.Seq != x.Seq {
					t.Fatalf("reader %s holds beside exclusive %s", r.Name, x.Name)
				}
			}
		}
	})
}
