package queue_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/queue"
)

const (
	uuid1 = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	hex1  = "8eb60557ba51e0da67eefc47467d3f34"
)

type parseCase struct {
	name string
	want queue.Node
	ok   bool
}

func good(name string, kind queue.Kind, seq int64, id string, client queue.Client) parseCase {
	return parseCase{name, queue.Node{Name: name, Kind: kind, Seq: seq, ID: id, Client: client}, true}
}

func bad(name string) parseCase { return parseCase{name: name} }

func TestParse(t *testing.T) {
	tests := []parseCase{
		// Curator, protected: every marker.
		good("_c_"+uuid1+"-lock-0000000012", queue.KindMutex, 12, uuid1, queue.Curator),
		good("_c_"+uuid1+"-__READ__0000000003", queue.KindRead, 3, uuid1, queue.Curator),
		good("_c_"+uuid1+"-__WRIT__0000000004", queue.KindWrite, 4, uuid1, queue.Curator),
		good("_c_"+uuid1+"-lease-0000000005", queue.KindLease, 5, uuid1, queue.Curator),
		good("_c_"+uuid1+"-latch-0000000006", queue.KindLatch, 6, uuid1, queue.Curator),
		good("_c_"+uuid1+"-observer-0000000007", queue.KindObserver, 7, uuid1, queue.Curator),
		good("_c_"+strings.ToUpper(uuid1)+"-lock-0000000012", queue.KindMutex, 12, strings.ToUpper(uuid1), queue.Curator),
		// Curator, unprotected.
		good("lock-0000000012", queue.KindMutex, 12, "", queue.Curator),
		good("__READ__0000000000", queue.KindRead, 0, "", queue.Curator),
		good("__WRIT__0000000001", queue.KindWrite, 1, "", queue.Curator),
		good("lease-0000000002", queue.KindLease, 2, "", queue.Curator),
		good("latch-0000000003", queue.KindLatch, 3, "", queue.Curator),
		// go-zookeeper's protected form (its lock_test.go samples).
		good("_c_38553bd6d1d57f710ae70ddcc3d24715-lock-0000000000", queue.KindMutex, 0, "38553bd6d1d57f710ae70ddcc3d24715", queue.GoZK),
		good("_c_38553bd6d1d57f710ae70ddcc3d24715-lock--2147483648", queue.KindMutex, math.MinInt32, "38553bd6d1d57f710ae70ddcc3d24715", queue.GoZK),
		// kazoo.
		good("514e5a831836450cb1a56c741e990fd8__lock__0000000032", queue.KindMutex, 32, "514e5a831836450cb1a56c741e990fd8", queue.Kazoo),
		good("da5719988c244fc793f49ec3aa29b566__rlock__0000000003", queue.KindRead, 3, "da5719988c244fc793f49ec3aa29b566", queue.Kazoo),
		good("__lock__0000000007", queue.KindMutex, 7, "", queue.Kazoo),
		good("__rlock__0000000008", queue.KindRead, 8, "", queue.Kazoo),
		// Sequences: the int32 range as "%010d" writes it.
		good("lock-2147483647", queue.KindMutex, math.MaxInt32, "", queue.Curator),
		good("lock--000000001", queue.KindMutex, -1, "", queue.Curator),
		good("lock--999999999", queue.KindMutex, -999999999, "", queue.Curator),
		good("lock--1000000000", queue.KindMutex, -1000000000, "", queue.Curator),
		good("lock--2147483648", queue.KindMutex, math.MinInt32, "", queue.Curator),
		good("_c_"+uuid1+"-__READ__-000000003", queue.KindRead, -3, uuid1, queue.Curator),

		bad(""),
		bad("lock-"),
		bad("lock-000000001"),   // 9 digits
		bad("lock-00000000012"), // 11 digits
		bad("lock-00000000x2"),
		bad("lock-+000000012"),
		bad("lock- 000000012"),
		bad("lock-2147483648"),   // above int32
		bad("lock--2147483649"),  // below int32
		bad("lock--0000000001"),  // -1 is written "-000000001"
		bad("lock--000000000"),   // minus zero
		bad("lock--00000001"),    // too short
		bad("lock-0000000012 "),  // trailing junk
		bad("lock-٠٠٠٠٠٠٠٠١٢"),   // Arabic-Indic digits
		bad("lock-０００００００００１"),   // full-width digits
		bad("LOCK-0000000012"),   // markers are case-sensitive
		bad("lock_0000000012"),   // not a marker
		bad("x-lock-0000000012"), // unknown prefix
		bad("0000000012"),
		bad("_c_"),
		bad("_c_-lock-0000000012"),
		bad("_c_" + uuid1),
		bad("_c_" + uuid1 + "-"),
		bad("_c_" + uuid1 + "-lock-"),
		bad("_c_" + uuid1[:35] + "-lock-0000000012"), // uuid one short
		bad("_c_" + "1b4e28ba2fa111d2883f0016d3cca42700ab" + "-lock-0000000012"), // no dashes
		bad("_c_" + strings.Replace(uuid1, "1b", "1g", 1) + "-lock-0000000012"),
		bad("_c_" + strings.Replace(uuid1, "-", "_", 1) + "-lock-0000000012"),
		bad("_c_" + uuid1 + "_lock-0000000012"),    // wrong separator
		bad("_c_" + uuid1 + "-__lock__0000000012"), // kazoo marker after a Curator prefix
		bad("_c_" + uuid1 + "-lock-0000000012-lock-0000000013"),
		bad("_c_" + hex1[:31] + "-lock-0000000012"),
		bad(hex1 + "lock-0000000012"),         // Curator marker after a kazoo id
		bad(hex1[:31] + "__lock__0000000012"), // kazoo id one short
		bad(hex1 + "__LOCK__0000000012"),
		bad(hex1 + "__lock__"),
		bad("_c_é" + uuid1[2:] + "-lock-0000000012"),
		bad("ロック-0000000012"),
		bad("\x00lock-0000000012"),
		bad("lock-0000000012\xff"),
		bad(strings.Repeat("a", 10000)),
		bad("leases"), // Curator semaphore V2's children of <path>
		bad("locks"),
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.name), func(t *testing.T) {
			got, ok := queue.Parse(tc.name)
			if ok != tc.ok || got != tc.want {
				t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestKindAndClientString(t *testing.T) {
	for v, want := range map[fmt.Stringer]string{
		queue.KindMutex: "mutex", queue.KindRead: "read", queue.KindWrite: "write", queue.KindLease: "lease", queue.KindLatch: "latch", queue.KindObserver: "observer", queue.Kind(0): "Kind(0)",
		queue.Curator: "curator", queue.Kazoo: "kazoo", queue.GoZK: "go-zookeeper", queue.Client(9): "Client(9)",
	} {
		if got := v.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
