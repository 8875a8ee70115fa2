package queue

import (
	"strconv"
	"strings"
)

// The markers a node name carries between its protected id and its sequence
// number. Each names the recipe that created the node; a contender passes
// one of the Curator markers when it creates its node (internal/nodename
// makes the names; these are what parsing recognises).
const (
	// mutexPrefix marks Curator's InterProcessMutex (and the deprecated
	// InterProcessSemaphore) contenders; go-zookeeper's Lock uses it too.
	mutexPrefix = "lock-"
	// readPrefix marks the read side of Curator's InterProcessReadWriteLock.
	readPrefix = "__READ__"
	// writePrefix marks the write side of Curator's InterProcessReadWriteLock.
	// Curator requires it to be as long as readPrefix.
	writePrefix = "__WRIT__"
	// leasePrefix marks a lease of Curator's InterProcessSemaphoreV2, which
	// keeps its leases under "<path>/leases".
	leasePrefix = "lease-"
	// latchPrefix marks a candidate of Curator's LeaderLatch, which keeps
	// its candidates directly under the election path.
	latchPrefix = "latch-"
	// observerPrefix marks a turnstile election observer: a node that only
	// gives an engine a place under an election path from which to watch
	// it. It is never a candidate, and no client but turnstile writes it.
	observerPrefix = "observer-"
	// kazooLockPrefix marks kazoo's Lock and WriteLock contenders: kazoo
	// gives its exclusive lock and the write side of its read-write lock the
	// same name, so a node with this marker is exclusive either way.
	kazooLockPrefix = "__lock__"
	// kazooReadPrefix marks kazoo's ReadLock contenders.
	kazooReadPrefix = "__rlock__"
)

const (
	protectedMark = "_c_" // starts every Curator and go-zookeeper protected name
	uuidLen       = 36    // "8-4-4-4-12" hex digits and dashes
	hexIDLen      = 32    // go-zookeeper's and kazoo's bare hex ids
)

// Kind is what a lock node asks for, as told by its marker. It decides which
// other nodes the node blocks and is blocked by.
type Kind int

// The kinds of lock node. The zero Kind is none of them.
const (
	// KindMutex is an exclusive contender: Curator "lock-", kazoo "__lock__".
	KindMutex Kind = iota + 1
	// KindRead is a shared contender: Curator "__READ__", kazoo "__rlock__".
	KindRead
	// KindWrite is an exclusive contender of a read-write lock: Curator "__WRIT__".
	KindWrite
	// KindLease is a Curator InterProcessSemaphoreV2 lease: "lease-".
	KindLease
	// KindLatch is a candidate of a Curator LeaderLatch: "latch-".
	KindLatch
	// KindObserver is a turnstile election observer: "observer-".
	KindObserver
)

// String returns the kind's lower-case name, for logs.
func (k Kind) String() string {
	switch k {
	case KindMutex:
		return "mutex"
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	case KindLease:
		return "lease"
	case KindLatch:
		return "latch"
	case KindObserver:
		return "observer"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Client is the naming family a node belongs to, which tells whose library
// (probably) created it. It matters for logs and for reading the protected
// id, never for order or for the predicates.
type Client int

// The naming families. The zero Client is none of them.
const (
	// Curator names: "_c_<uuid>-<marker><seq>" or plain "<marker><seq>".
	// turnstile writes this form.
	Curator Client = iota + 1
	// Kazoo names: "<32 hex><marker><seq>", marker "__lock__" or "__rlock__".
	Kazoo
	// GoZK names, go-zookeeper's protected form: "_c_<32 hex>-<marker><seq>".
	GoZK
)

// String returns the family's name, for logs.
func (c Client) String() string {
	switch c {
	case Curator:
		return "curator"
	case Kazoo:
		return "kazoo"
	case GoZK:
		return "go-zookeeper"
	}
	return "Client(" + strconv.Itoa(int(c)) + ")"
}

// Node is one parsed child of a lock path.
type Node struct {
	Name   string // the child's name exactly as listed
	Kind   Kind   // what the node asks for
	Seq    int64  // the sequence number ZooKeeper appended (an int32)
	ID     string // the protected id as written (uuid or 32 hex digits); "" if unprotected
	Client Client // the naming family
}

// marker is one recognised marker and what it means.
type marker struct {
	prefix string
	kind   Kind
	client Client
}

// curatorMarkers may follow a "_c_<id>-" protected prefix.
var curatorMarkers = []marker{
	{mutexPrefix, KindMutex, Curator},
	{readPrefix, KindRead, Curator},
	{writePrefix, KindWrite, Curator},
	{leasePrefix, KindLease, Curator},
	{latchPrefix, KindLatch, Curator},
	{observerPrefix, KindObserver, Curator},
}

// kazooMarkers may follow a kazoo hex id.
var kazooMarkers = []marker{
	{kazooLockPrefix, KindMutex, Kazoo},
	{kazooReadPrefix, KindRead, Kazoo},
}

// Parse reads a child name. It reports false for anything that is not a
// well-formed lock node of a known family: such names are foreign and every
// predicate ignores them. The sequence must be exactly what ZooKeeper writes
// ("%010d" of an int32), so names a server could not have produced are
// rejected rather than guessed at. Parse never panics.
func Parse(name string) (Node, bool) {
	var (
		id     string
		client Client
		rest   = name
		table  = curatorMarkers
	)
	switch {
	case strings.HasPrefix(name, protectedMark):
		body := name[len(protectedMark):]
		switch {
		case len(body) > uuidLen && body[uuidLen] == '-' && isUUID(body[:uuidLen]):
			id, client, rest = body[:uuidLen], Curator, body[uuidLen+1:]
		case len(body) > hexIDLen && body[hexIDLen] == '-' && isHex(body[:hexIDLen]):
			id, client, rest = body[:hexIDLen], GoZK, body[hexIDLen+1:]
		default:
			return Node{}, false
		}
	case len(name) > hexIDLen && isHex(name[:hexIDLen]):
		id, client, rest, table = name[:hexIDLen], Kazoo, name[hexIDLen:], kazooMarkers
	default:
		// Unprotected: either family's marker may start the name.
		for _, m := range kazooMarkers {
			if strings.HasPrefix(name, m.prefix) {
				table = kazooMarkers
			}
		}
	}
	for _, m := range table {
		digits, ok := strings.CutPrefix(rest, m.prefix)
		if !ok {
			continue
		}
		seq, ok := parseSeq(digits)
		if !ok {
			return Node{}, false
		}
		if client == 0 {
			client = m.client
		}
		return Node{Name: name, Kind: m.kind, Seq: seq, ID: id, Client: client}, true
	}
	return Node{}, false
}

// parseSeq accepts exactly the strings Java's and Go's "%010d" produce for an
// int32: ten digits when non-negative; a minus sign and nine digits down to
// -999999999; a minus sign and ten digits (no leading zero) below that.
func parseSeq(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	neg := len(digits) != len(s)
	if len(digits) < 9 || len(digits) > 10 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	switch {
	case !neg:
		return v, len(digits) == 10
	case v == 0: // "-000000000" is not how anyone writes zero
		return 0, false
	case v > -1_000_000_000:
		return v, len(digits) == 9
	default:
		return v, digits[0] != '0'
	}
}

// isUUID reports whether s is the 36-character text form of a UUID, as
// Java's UUID.fromString accepts it for a Curator protected name. Version
// and variant bits are not checked: Curator does not check them either.
func isUUID(s string) bool {
	if len(s) != uuidLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHexDigit(s[i]) {
				return false
			}
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
