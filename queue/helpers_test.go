package queue_test

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// A listing is written as tokens, e.g. "W1 R2 ?junk K3". A token is a letter
// for the family and marker, then the sequence number, then optionally "<"
// or ">" to sort first or last among nodes sharing that number (the id
// decides, and "<" and ">" pick the smallest and largest ids):
//
//	M Curator lock-     R Curator __READ__   W Curator __WRIT__
//	L Curator lease-    P plain lock-        G go-zookeeper lock-
//	K kazoo __lock__    Q kazoo __rlock__    E Curator latch-
//	O turnstile observer-                    ?text  a foreign child "text"
//
// A token may carry a tag after "#" to tell apart nodes that would
// otherwise get one name ("R5#a", "R5#b").
var families = map[byte]func(id32, uuid string) string{
	'M': func(_, u string) string { return nodename.Protected(u, queue.KindMutex) },
	'R': func(_, u string) string { return nodename.Protected(u, queue.KindRead) },
	'W': func(_, u string) string { return nodename.Protected(u, queue.KindWrite) },
	'L': func(_, u string) string { return nodename.Protected(u, queue.KindLease) },
	'E': func(_, u string) string { return nodename.Protected(u, queue.KindLatch) },
	'O': func(_, u string) string { return nodename.Protected(u, queue.KindObserver) },
	'P': func(_, _ string) string { return nodename.Mutex },
	'G': func(h, _ string) string { return nodename.Protected(h, queue.KindMutex) },
	'K': func(h, _ string) string { return h + "__lock__" },
	'Q': func(h, _ string) string { return h + "__rlock__" },
}

// nameOf turns one token into a child name.
func nameOf(t testing.TB, tok string) string {
	t.Helper()
	if rest, ok := strings.CutPrefix(tok, "?"); ok {
		return rest
	}
	mk, ok := families[tok[0]]
	if !ok {
		t.Fatalf("bad token %q", tok)
	}
	body, _, _ := strings.Cut(tok[1:], "#")
	var h string
	switch {
	case strings.HasSuffix(body, "<"):
		h, body = strings.Repeat("0", 32), body[:len(body)-1]
	case strings.HasSuffix(body, ">"):
		h, body = strings.Repeat("f", 32), body[:len(body)-1]
	default:
		f := fnv.New128a()
		f.Write([]byte(tok))
		h = fmt.Sprintf("%x", f.Sum(nil))
	}
	seq, err := strconv.ParseInt(body, 10, 32)
	if err != nil {
		t.Fatalf("bad token %q: %v", tok, err)
	}
	uuid := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	return mk(h, uuid) + nodename.FormatSeq(seq)
}

// listing returns the children a spec names, in spec order, and a map from
// each token to its child name.
func listing(t testing.TB, spec string) ([]string, map[string]string) {
	t.Helper()
	var children []string
	names := make(map[string]string)
	for _, tok := range strings.Fields(spec) {
		n := nameOf(t, tok)
		if _, dup := names[tok]; dup {
			t.Fatalf("token %q twice in %q", tok, spec)
		}
		names[tok] = n
		children = append(children, n)
	}
	return children, names
}
