// Package zkmodel is an in-memory model of one ZooKeeper server, for
// deterministic simulation: exactly the semantics turnstile relies on, as
// ZooKeeper 3.8 implements them, and nothing else. It is a tool for
// exploring schedules, never a replacement for the real server; every
// integration test keeps running on real ZooKeeper, and a differential test
// (diff_test.go) runs the same operations on the model and on a real server
// and compares what clients see.
//
// # Driving it
//
// A Model is single-threaded and passive: no goroutine, no clock, no
// randomness. The simulator owns time and every choice. Each call that can
// depend on time takes the simulated now (the model's clock only moves
// forward), and every call first expires the sessions whose deadline has
// come (Tick does only that).
//
//   - Connect creates a session; Submit is the server receiving one request
//     of a session and applying it at once; Ping is a heartbeat; Close ends
//     the session. Requests of a session are applied in the order Submit is
//     called, which is the order the client sent them.
//   - What the server sends a session (replies, watch events, ping replies,
//     the connection's close) is queued on that session's connection in the
//     order it was sent. The simulator takes it with Next when it decides
//     the client receives it, never out of order. A watch event triggered by
//     a write is queued before the write's reply and before any later reply,
//     on every session it goes to: the ordering ZooKeeper guarantees (a
//     client sees the event before it sees the change).
//   - Disconnect loses a session's connection: what was queued on it and its
//     server-side watches are gone. A request in flight at that moment was
//     either applied (the simulator called Submit before Disconnect; its
//     reply is lost) or not (it never called Submit). Reconnect resumes the
//     session with the watches the client still holds (see ClientWatches and
//     SetWatches), or fails with ErrSessionExpired.
//   - A session the server has not heard from within its negotiated timeout
//     (rounded up to the server's tick, see session.deadline) expires: its
//     ephemerals are deleted, watches fire, and a connection it still has is
//     closed (MsgClosed).
//   - The container manager runs only when the simulator says so
//     (ReapContainers, ReapContainer).
//
// # What it models
//
//   - The znode tree: persistent, ephemeral, sequential (the parent's
//     stored count of creates as a %010d suffix) and container nodes;
//     czxid, mzxid, pzxid, version, cversion, ephemeralOwner, numChildren
//     and data, stored as DataTree stores them and reported as
//     DataNode.copyStat reports them, quirks included: the stored cversion
//     counts creates only and stops at math.MaxInt32, clients see
//     2×creates − numChildren; a container reports ephemeralOwner 0; a
//     container mode sent with a plain create makes a persistent node.
//   - One global zxid: every write request takes one, whether it succeeds
//     or not, as do session creation and session close or expiry; a multi
//     takes one for all its operations; reads, sync and pings take none.
//     Every reply carries the last applied zxid.
//   - Requests with ZooKeeper's checks in the server's order and its result
//     Codes: create, createContainer, delete, setData, check, exists,
//     getData, getChildren (with the parent's stat), sync, multi (atomic,
//     with the server's per-operation results).
//   - One-shot data, exists and child watches, triggered as DataTree and
//     WatchManager trigger them, and re-armed on reconnect as DataTree's
//     setWatches does.
//   - Sessions with a negotiated timeout, expiry buckets, close.
//   - For checkers, not clients: the history of every node's life (Lives),
//     the zxids of its create and delete and who deleted it, so that an
//     answer a client was given can be held to the states the server was
//     in while it was asked.
//
// # Where it simplifies, deliberately
//
//   - One tree, one leader: by default one standalone server; with
//     Config.Followers, an ensemble whose followers serve the leader's
//     tree and whose link to the leader can be cut (ensemble.go, and its
//     differential test against a real ensemble under real partitions,
//     internal/partition's TestModelMatchesEnsembleUnderCut). No leader
//     change, no lag of a linked follower, so sync is a no-op and a client
//     never reads older state than it wrote but from a cut follower.
//   - Requests are applied one at a time as they arrive; the server's
//     pipeline of outstanding changes between preparing and applying a
//     request is not modelled (it is visible only past a cversion overflow;
//     see txn.prepCversion).
//   - No ACLs, auth, quotas, TTL nodes (refused as Unimplemented),
//     persistent or recursive watches, removeWatches, multiRead, reconfig,
//     getEphemerals, session passwords, read-only mode, or ctime, mtime and
//     aversion in stats.
//   - Session ids are 1, 2, 3, ... in creation order. Where the server
//     walks a hash set the model takes a fixed order: ephemerals deleted at
//     a session's end by path, sessions of one expiry bucket by id, children
//     listed sorted.
//   - Reads do not validate paths beyond the server's own NUL check; the
//     model has no node at "" (the server's internal key of the root).
package zkmodel
