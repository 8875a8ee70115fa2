package zkmodel

import "strconv"

// Code is a ZooKeeper result code, with the numbers of
// org.apache.zookeeper.KeeperException.Code, so that a reply of the model and
// a reply of a real server can be compared value for value. Only the codes
// the model can produce are named.
type Code int32

const (
	OK Code = 0
	// RuntimeInconsistency is what a multi reports for the operations after
	// the one that failed: the server never tried them.
	RuntimeInconsistency Code = -2
	// MarshallingError answers a multi that holds an operation a multi cannot
	// carry (a read, a sync, a nested multi): the server fails to decode it.
	MarshallingError Code = -5
	// Unimplemented answers a create with a TTL mode: the server refuses TTL
	// nodes unless extended types are enabled, which they are not by default.
	Unimplemented           Code = -6
	BadArguments            Code = -8
	NoNode                  Code = -101
	BadVersion              Code = -103
	NoChildrenForEphemerals Code = -108
	NodeExists              Code = -110
	NotEmpty                Code = -111
	SessionExpired          Code = -112
)

var codeNames = map[Code]string{
	OK:                      "OK",
	RuntimeInconsistency:    "RuntimeInconsistency",
	MarshallingError:        "MarshallingError",
	Unimplemented:           "Unimplemented",
	BadArguments:            "BadArguments",
	NoNode:                  "NoNode",
	BadVersion:              "BadVersion",
	NoChildrenForEphemerals: "NoChildrenForEphemerals",
	NodeExists:              "NodeExists",
	NotEmpty:                "NotEmpty",
	SessionExpired:          "SessionExpired",
}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// Mode is a create mode, with the numbers of ZooKeeper's CreateMode flags
// (and go-zookeeper's Flag constants).
type Mode int32

const (
	Persistent           Mode = 0
	Ephemeral            Mode = 1
	PersistentSequential Mode = 2
	EphemeralSequential  Mode = 3
	// Container makes a container node when sent with OpCreateContainer, or
	// inside a multi. Sent alone with OpCreate (as go-zookeeper's Create
	// does) the server applies a plain create transaction, whose node is
	// persistent: DataTree takes the owner from CreateTxn.ephemeral, which a
	// container mode leaves false.
	Container Mode = 4

	modeTTL           Mode = 5
	modeSequentialTTL Mode = 6
)

func (m Mode) ephemeral() bool { return m == Ephemeral || m == EphemeralSequential }
func (m Mode) sequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == modeSequentialTTL
}

// check is the server's CreateMode.fromFlag and validateCreateRequest: an
// unknown flag is bad arguments, a TTL mode unimplemented.
func (m Mode) check() Code {
	switch {
	case m >= Persistent && m <= Container:
		return OK
	case m == modeTTL || m == modeSequentialTTL:
		return Unimplemented
	}
	return BadArguments
}

// EventType is a watch event's type, with the numbers of ZooKeeper's
// Watcher.Event.EventType (and go-zookeeper's EventNode* constants).
type EventType int32

const (
	EventNodeCreated         EventType = 1
	EventNodeDeleted         EventType = 2
	EventNodeDataChanged     EventType = 3
	EventNodeChildrenChanged EventType = 4
)

func (t EventType) String() string {
	switch t {
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}
