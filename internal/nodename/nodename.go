// Package nodename makes the names of the nodes turnstile creates: a lock
// node's protected name ("_c_<uuid>-<marker>", to which ZooKeeper appends
// the sequence number), a borrowed sequence number written as ZooKeeper
// writes one, a pin's name, a fresh protected id.
//
// Package queue reads names (every family: Curator, kazoo, go-zookeeper);
// this package writes the one form turnstile uses, Curator's, which every
// other client can be told to recognise. It is internal because a name is
// the engine's business: users choose a queue.Kind, never a string.
package nodename

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/turnstile-go/turnstile/queue"
)

// The Curator markers turnstile writes, one per kind of node. Each must
// parse back (queue.Parse) as its kind: TestMarkersParseAsTheirKind holds
// them to it.
const (
	Mutex    = "lock-"     // Curator's InterProcessMutex, go-zookeeper's Lock
	Read     = "__READ__"  // the read side of Curator's InterProcessReadWriteLock
	Write    = "__WRIT__"  // its write side (as long as Read, as Curator requires)
	Lease    = "lease-"    // a lease of Curator's InterProcessSemaphoreV2
	Latch    = "latch-"    // a candidate of Curator's LeaderLatch
	Observer = "observer-" // a turnstile election observer, never a candidate
)

// protectedMark starts every protected name.
const protectedMark = "_c_"

// Marker is the marker turnstile writes for a node of kind k, or "" for a
// Kind that is none of queue's.
func Marker(k queue.Kind) string {
	switch k {
	case queue.KindMutex:
		return Mutex
	case queue.KindRead:
		return Read
	case queue.KindWrite:
		return Write
	case queue.KindLease:
		return Lease
	case queue.KindLatch:
		return Latch
	case queue.KindObserver:
		return Observer
	}
	return ""
}

// Protected returns the name a contender of kind k with protected id id
// passes to a sequential create: "_c_<id>-" followed by k's marker, e.g.
// "_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-". ZooKeeper appends the
// sequence number. An empty id gives the bare marker.
//
// Whatever ZooKeeper appends, the result parses back with this id and
// kind. To keep that promise Protected returns "" when it cannot: for an
// invalid Kind, or an id that is not a UUID as NewID makes one. A node
// created under such a name would be foreign to every predicate, its own
// creator included, which would then think its node missing forever.
func Protected(id string, k queue.Kind) string {
	marker := Marker(k)
	switch {
	case marker == "":
		return ""
	case id == "":
		return marker
	}
	name := protectedMark + id + "-" + marker
	if n, ok := queue.Parse(name + FormatSeq(0)); !ok || n.ID != id || n.Kind != k {
		return ""
	}
	return name
}

// FormatSeq returns seq the way ZooKeeper appends it to a sequential node's
// name ("%010d"). A contender needs it to name a node it creates without
// the sequential flag, such as the read node of a Curator 5.5 write-to-read
// downgrade, which reuses its writer's sequence number.
func FormatSeq(seq int64) string {
	return fmt.Sprintf("%010d", seq)
}

// NewID returns a fresh random (version 4) UUID in its 36-character
// lower-case text form, the protected id of a node about to be created. The
// id is what lets a contender find its own node after a create whose reply
// was lost, so it comes from crypto/rand: ids must not collide across
// processes.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // never fails: crypto/rand aborts the program instead
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// PinPrefix starts the name of a pin: an ephemeral child a turnstile
// engine keeps on a lock path it cycles on, so that the path, a container,
// cannot be removed and made again between two of its cycles (see the
// engine's listing-free cycle). A pin is no lock node: every recipe
// ignores it. '~' sorts after every digit and letter, so where Curator and
// kazoo sort a name they do not know by the name itself, a pin sorts after
// every lock node and never stands ahead of one; kazoo's recipes skip
// names they do not know. Package queue knows the same prefix, so that a
// listing counts a pin neither as a node nor as foreign:
// TestPinsAreNeitherNodesNorForeign holds the two to each other.
const PinPrefix = "~pin-"

// PinName is the pin named by id, an identifier its engine makes unique
// (NewID).
func PinName(id string) string { return PinPrefix + id }

// IsPin reports whether a child's name is a pin.
func IsPin(name string) bool { return strings.HasPrefix(name, PinPrefix) }

// RevokeData is what a revoker writes into a holder's node to ask it to
// let go: the same bytes Curator's Revoker writes, so Java and Go holders
// and revokers understand each other.
var RevokeData = []byte("__REVOKE__")
