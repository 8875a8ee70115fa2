package zkmodel

import "strconv"

// OpKind names a request.
type OpKind uint8

const (
	// OpCreate is ZooKeeper's create (opcode 1): Path, Data, Mode. The reply
	// carries the created path, with the sequence suffix when Mode is
	// sequential.
	OpCreate OpKind = iota + 1
	// OpCreateContainer is createContainer (opcode 19): the node is a
	// container whatever Mode says, with a sequence suffix if Mode is
	// sequential. go-zookeeper refuses any mode but Container before sending.
	// The reply carries the new node's stat as well (create2's reply), which
	// go-zookeeper does not read. Inside a multi, see Model.multi.
	OpCreateContainer
	// OpDelete deletes Path if its version is Version (-1: any version).
	OpDelete
	// OpSetData replaces Path's data if its version is Version (-1: any).
	OpSetData
	// OpCheck succeeds if Path exists with version Version (-1: any). It
	// changes nothing; inside a multi it makes the multi conditional.
	OpCheck
	// OpExists replies with Path's stat or NoNode. With Watch it leaves a
	// data watch on Path, also when Path does not exist.
	OpExists
	// OpGetData replies with Path's data and stat. With Watch it leaves a
	// data watch, but only when Path exists.
	OpGetData
	// OpGetChildren is getChildren2: Path's children and Path's own stat
	// (pzxid, cversion, numChildren). With Watch it leaves a child watch,
	// only when Path exists.
	OpGetChildren
	// OpSync replies with Path once every earlier write is applied: at once,
	// in a single server.
	OpSync
	// OpMulti applies Ops (creates, deletes, setData, checks) atomically.
	OpMulti
	// OpClose is the reply kind of Model.Close.
	OpClose
)

var opNames = [...]string{
	OpCreate: "create", OpCreateContainer: "createContainer", OpDelete: "delete",
	OpSetData: "setData", OpCheck: "check", OpExists: "exists", OpGetData: "getData",
	OpGetChildren: "getChildren", OpSync: "sync", OpMulti: "multi", OpClose: "close",
}

func (k OpKind) String() string {
	if int(k) < len(opNames) && opNames[k] != "" {
		return opNames[k]
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// write reports whether the request is a transaction: the server gives it a
// zxid of its own when it is prepared, whether it then succeeds or fails.
func (k OpKind) write() bool {
	switch k {
	case OpCreate, OpCreateContainer, OpDelete, OpSetData, OpCheck, OpMulti:
		return true
	}
	return false
}

// Request is one client request.
type Request struct {
	// Xid is the caller's tag for the request, echoed in its reply, as the
	// server echoes a request's xid. The model does not look at it.
	Xid     int64
	Op      OpKind
	Path    string
	Data    []byte
	Mode    Mode      // OpCreate, OpCreateContainer
	Version int32     // OpDelete, OpSetData, OpCheck; -1 matches any version
	Watch   bool      // OpExists, OpGetData, OpGetChildren
	Ops     []Request // OpMulti; their Xid and Watch are ignored
}

// Stat is a znode's stat as a reply carries it. Ctime, mtime, aversion and
// the ACL are not modelled.
type Stat struct {
	Czxid int64 // the transaction that created the node
	Mzxid int64 // the last transaction that set its data (at first Czxid)
	// Pzxid is the last transaction that created a child, or deleted one
	// with a zxid above the current Pzxid (at first Czxid). A create that
	// could not raise Cversion (see Cversion) leaves Pzxid alone too.
	Pzxid int64
	// Version counts setData on the node.
	Version int32
	// Cversion counts the changes to the node's children as the server
	// reports them: 2×creates − NumChildren, where creates is the count it
	// stores, of children ever created (a delete does not lower it; it is
	// an int32 that the server only ever raises, so at math.MaxInt32 it
	// stays put). Sequential names are formatted from creates, not from
	// Cversion.
	Cversion int32
	// EphemeralOwner is the owning session of an ephemeral node; 0 for a
	// persistent node and for a container (the server stores a marker for
	// a container but reports 0).
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
}

// containerOwner is the owner the server stores for container nodes
// (EphemeralType.CONTAINER_EPHEMERAL_OWNER, Long.MIN_VALUE). The server never
// hands out this value as a session id.
const containerOwner int64 = -1 << 63

// Reply answers one Request.
type Reply struct {
	Xid int64
	Op  OpKind
	// Zxid is the zxid in the reply's header: the last transaction the
	// server had applied when it answered, so a write's own zxid. go-zookeeper
	// keeps the last one it read (lastZxid) and sends it with setWatches.
	Zxid int64
	// Err is the result code the client sees. For a multi it is the first
	// operation's code that is not OK, which is what go-zookeeper's Multi
	// returns; the header of a multi's reply itself carries OK.
	Err      Code
	Path     string   // OpCreate, OpCreateContainer: the created path; OpSync: Path
	Stat     Stat     // OpExists, OpGetData, OpGetChildren (the parent's), OpSetData, OpCreateContainer (the new node's)
	Data     []byte   // OpGetData
	Children []string // OpGetChildren, sorted (the server's order is its HashSet's)
	Results  []OpResult
}

// OpResult is one operation's result inside a multi's reply. When the multi
// failed, every result is an error result: OK for the operations before the
// failing one (they were rolled back), the failing operation's code, and
// RuntimeInconsistency for the operations after it (never tried). An error
// result carries no path and no stat.
type OpResult struct {
	// Op is the operation as the server took it: the requested one, but
	// that a create's kind follows its mode (see Model.multi).
	Op   OpKind
	Err  Code
	Path string // a successful create's path
	Stat Stat   // a successful setData's or createContainer's stat
}

// Event is a watch notification. The wire carries no zxid for it (ZooKeeper
// 3.8 sends -1 in its header).
type Event struct {
	Type EventType
	Path string
}

// MessageKind says what a Message holds.
type MessageKind uint8

const (
	// MsgReply is a reply to a request.
	MsgReply MessageKind = iota + 1
	// MsgEvent is a watch notification.
	MsgEvent
	// MsgPing is the reply to a ping; Reply.Zxid is the last applied zxid.
	MsgPing
	// MsgClosed is the server closing the connection after the session
	// expired or was closed. Nothing follows it.
	MsgClosed
)

func (k MessageKind) String() string {
	switch k {
	case MsgReply:
		return "reply"
	case MsgEvent:
		return "event"
	case MsgPing:
		return "ping"
	case MsgClosed:
		return "closed"
	}
	return "MessageKind(" + strconv.Itoa(int(k)) + ")"
}

// Message is one thing the server sends down a session's connection.
type Message struct {
	Kind  MessageKind
	Reply Reply // MsgReply, MsgPing
	Event Event // MsgEvent
}
