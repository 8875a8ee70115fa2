package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/internal/tlsdial"
)

// runRevoke asks the holders of the lock at PATH, or its contender NODE, to
// let go: it writes Curator's revocation request into their nodes. A
// revocable holder (turnstile's WithRevocation, Curator's makeRevocable,
// kazoo following Curator's convention) watches its own node's data, sees
// the request and releases. Others are not told, and the request would
// only overwrite what their node says of them, so a node is written only
// when its session is seen watching it, or with -force. NODE is a node's
// name, or its path.
func runRevoke(ctx context.Context, s *session, o options, args []string, out io.Writer) error {
	lockPath := args[0]
	v, found, _, err := newReader(s, false).read(ctx, s.full(lockPath))
	if err != nil {
		return err
	}
	if !found {
		return noneError("no lock at %s", lockPath)
	}
	targets := v.Holders
	if len(args) == 2 {
		n, ok := findNode(v, args[1])
		if !ok {
			return noneError("no node %s at %s", args[1], lockPath)
		}
		targets = []nodeView{n}
	}
	if len(targets) == 0 {
		return noneError("nothing held at %s", lockPath)
	}
	var watches map[string]map[string]bool
	var watchErr error
	if !o.force {
		watches, watchErr = watchesByPath(ctx, o)
	}
	asked, gone := 0, 0
	var refused []string
	for _, n := range targets {
		if !o.force {
			if why := notRevocable(n, s.full(n.Node), watches, watchErr); why != "" {
				refused = append(refused, fmt.Sprintf("%s: %s; -force writes the request anyway, overwriting the node's data (%s)", n.Node, why, who(n)))
				continue
			}
		}
		_, err := call(ctx, s, func() (*zk.Stat, error) {
			return s.conn.Set(s.full(n.Node), nodename.RevokeData, -1)
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			gone++
			continue // released meanwhile
		case err != nil:
			return fmt.Errorf("revoke %s: %w", n.Node, err)
		}
		asked++
		if o.force {
			fmt.Fprintf(out, "revocation requested: %s (forced: its data, %s, is now %s)\n", n.Node, who(n), nodename.RevokeData)
		} else {
			fmt.Fprintf(out, "revocation requested: %s\n", n.Node)
		}
	}
	switch {
	case len(refused) > 0:
		return exitStatus{code: exitError, msg: "not revoked: " + strings.Join(refused, "\nturnstile: not revoked: ")}
	case asked == 0 && gone > 0:
		return noneError("nothing held at %s: released meanwhile", lockPath)
	}
	return nil
}

// notRevocable says why n cannot be seen to have opted in to revocation,
// or "" when it has: its session watches its own node (full), which is how
// every revocable holder waits for the request.
func notRevocable(n nodeView, full string, watches map[string]map[string]bool, watchErr error) string {
	if watchErr != nil {
		return fmt.Sprintf("cannot tell whether its holder opted in to revocation (%v)", watchErr)
	}
	// As the server writes a session id: its 64 bits in hex.
	if watches[full][fmt.Sprintf("0x%x", uint64(n.owner))] {
		return ""
	}
	return "its holder did not opt in to revocation (its session watches its node on none of the servers of -servers)"
}

// watchesByPath asks every server (four-letter word wchp) which sessions
// watch which paths: path → session ids ("0x…") → true. A session's
// watches are on the server it is connected to, so every server is asked;
// one that cannot answer makes the answer incomplete, which is an error.
func watchesByPath(ctx context.Context, o options) (map[string]map[string]bool, error) {
	all := make(map[string]map[string]bool)
	for _, addr := range strings.Split(o.servers, ",") {
		text, err := fourLetterWord(ctx, o, strings.TrimSpace(addr), "wchp")
		if err != nil {
			return nil, fmt.Errorf("wchp at %s: %w", addr, err)
		}
		if strings.Contains(text, "not in the whitelist") || strings.Contains(text, "not executed") {
			return nil, fmt.Errorf("%s does not answer wchp: add it to the server's 4lw.commands.whitelist", addr)
		}
		var at string
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "/"):
				at = line
			case strings.HasPrefix(line, "\t0x") && at != "":
				if all[at] == nil {
					all[at] = make(map[string]bool)
				}
				all[at][strings.TrimSpace(line)] = true
			}
		}
	}
	return all, nil
}

// fourLetterWord sends cmd to the server at addr, over TLS when the tool
// connects with TLS, and returns its answer.
func fourLetterWord(ctx context.Context, o options, addr, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var dial tlsdial.DialFunc = net.DialTimeout
	if o.tls != nil {
		dial = tlsdial.Wrap(dial, o.tls)
	}
	deadline, _ := ctx.Deadline()
	conn, err := dial("tcp", addr, time.Until(deadline))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// findNode finds a contender of v by its name or its path.
func findNode(v lockView, node string) (nodeView, bool) {
	for _, list := range [][]nodeView{v.Holders, v.Waiters} {
		for _, n := range list {
			if n.Name == node || n.Node == node || n.Node == path.Join(v.Path, node) {
				return n, true
			}
		}
	}
	return nodeView{}, false
}
