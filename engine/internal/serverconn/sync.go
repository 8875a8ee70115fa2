package serverconn

import "time"

// The chain of syncs: what proves, through a follower (or an observer, or
// a server whose role is unknown), that the session was touched at the
// leader after a given time. DESIGN.md, "The trust deadline", gives the
// proof and the ZooKeeper code it rests on; in short:
//
//   - a follower touches the session in its own table when a request of
//     the session comes in, before it hands the request on
//     (ZooKeeperServer.submitRequestNow), and sends the table to the
//     leader only in its reply to the leader's PING (Learner.ping), which
//     the leader sends every learner every half tick (Leader.lead);
//   - a sync the follower forwards (FollowerRequestProcessor) goes to the
//     leader on the one stream its ping replies take, and the leader reads
//     that stream in order, applying a ping reply's touches before it
//     reads on (LearnerHandler.run); the leader answers the sync on the
//     one stream its PINGs take (Leader.processSync), and the follower
//     answers the client only when it reads that answer.
//
// So for syncs k, m, j on one connection, each sent after the one before
// was answered: if m was sent at least a tick after k was answered, the
// leader sent a PING between handling k and handling m, which the follower
// read after k's touch and before answering m, and answered with a touch
// of the session; j, sent after m's answer, reaches the leader behind that
// reply. The answer to j proves the leader touched the session after k
// was sent.

// syncChain is the keeper's syncs on one connection. The connection's
// mutex guards it.
type syncChain struct {
	out    bool          // a sync awaits its answer
	asked  time.Duration // when the keeper asked for the sync that awaits its answer
	last   time.Duration // when the latest answer came
	rounds []syncRound   // answered syncs, oldest first, from the latest one a proof named
}

// syncRound is one answered sync: when it was written and when its answer
// was read.
type syncRound struct{ sent, answered time.Duration }

// maxRounds bounds the syncs a chain remembers: with syncs sent every
// quarter gap, a proof names one of the last six or so.
const maxRounds = 32

// answered records the answer, read at now, to the sync sent at sent, and
// returns the send time of the sync the chain now proves the leader
// touched the session after: the latest sync k answered at least gap
// before the previous sync m was sent (m the one answered before this
// one). False when no such sync is known.
func (s *syncChain) answered(sent, now, gap time.Duration) (time.Duration, bool) {
	s.last = now
	s.rounds = append(s.rounds, syncRound{sent: sent, answered: now})
	if len(s.rounds) > maxRounds {
		s.rounds = s.rounds[:copy(s.rounds, s.rounds[len(s.rounds)-maxRounds:])]
	}
	n := len(s.rounds)
	if n < 3 {
		return 0, false
	}
	m := s.rounds[n-2]
	for k := n - 3; k >= 0; k-- {
		if s.rounds[k].answered+gap <= m.sent {
			anchor := s.rounds[k].sent
			s.rounds = s.rounds[:copy(s.rounds, s.rounds[k:])]
			return anchor, true
		}
	}
	return 0, false
}

// syncRequest is a sync of "/": length 13, xid −3, opcode 9, the path.
var syncRequest = []byte{0, 0, 0, 13, 0xff, 0xff, 0xff, 0xfd, 0, 0, 0, 9, 0, 0, 0, 1, '/'}

// syncGap is the least time between a sync's answer and the sending of the
// next sync but one that a chain counts: a tick, which holds the two PINGs
// the leader sends in it, once the servers' tickTime is known (CheckTick);
// before, a quarter of the lifetime, which is the default margin and must
// exceed a tick anyway (see CheckTick).
func (c *trackedConn) syncGap() time.Duration {
	if c.eng != nil {
		if tick := time.Duration(c.eng.tick.Load()); tick > 0 {
			return tick
		}
	}
	return c.watchdog.Lifetime() / 4
}

// syncEvery is how long after a sync's answer the keeper sends the next:
// a quarter of the gap, so that a proof names a sync about a gap and a
// quarter old.
func (c *trackedConn) syncEvery() time.Duration { return max(c.syncGap()/4, time.Millisecond) }
