package zkserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
)

// Member places one ensemble member on a host of its own, such as a
// network namespace (see internal/netns), where it can use the standard
// ports: each host has its own network stack.
type Member struct {
	// IP is the host's address: the server listens on it, and the other
	// members reach it there.
	IP string
	// Command makes the command that runs the server's JVM on the host
	// (for a namespace: ip netns exec NS name args...).
	Command func(name string, args ...string) *exec.Cmd
	// Dial reaches the member's client port from wherever the caller can
	// (a host of the same network), for the four-letter words that check
	// readiness and mode.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// The ports of a member on a host of its own.
const (
	hostClientPort   = 2181
	hostQuorumPort   = 2888
	hostElectionPort = 3888
)

// StartEnsembleOn starts one member on each of members, with myid i+1 for
// members[i], and waits until every member is ready and one is leader, as
// StartEnsemble does. TLS is not supported there.
func StartEnsembleOn(ctx context.Context, members []Member, opts Options) (*Ensemble, error) {
	if len(members) < 1 {
		return nil, errors.New("zkserver: ensemble of no members")
	}
	if opts.TLS != nil {
		return nil, errors.New("zkserver: StartEnsembleOn does not serve TLS")
	}
	opts = opts.withDefaults()
	inst, err := findInstall()
	if err != nil {
		return nil, err
	}
	peers := make([]peer, len(members))
	for i, m := range members {
		peers[i] = peer{id: i + 1, host: m.IP, clientPort: hostClientPort, quorumPort: hostQuorumPort, electionPrt: hostElectionPort}
	}
	e := &Ensemble{}
	for i, m := range members {
		s, err := newServer(opts, inst, i+1, peers)
		if err != nil {
			_ = e.Close()
			return nil, err
		}
		if m.Command != nil {
			s.command = m.Command
		}
		if m.Dial != nil {
			s.dial = m.Dial
		}
		e.Servers = append(e.Servers, s)
	}
	if err := e.startAll(ctx); err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("zkserver: ensemble of %d on hosts: %w", len(members), err)
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := e.WaitReady(wctx); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}
