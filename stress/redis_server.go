package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile-go/turnstile/internal/interop"
)

// redisServer is a redis-server the harness started, as it starts
// ZooKeeper: Debian's binary (package redis-server), on a free loopback
// port, in a temp dir of its own, killed by its PID (and by the kernel
// should the harness die first) and its dir removed on Close.
type redisServer struct {
	addr    string
	version string
	dir     string
	proc    *interop.Peer
	stats   *redis.Client // the harness's own connection, for INFO and scans

	// own counts the commands the harness itself sent on stats, so that a
	// run's commands per cycle are its client's alone.
	own atomic.Int64
}

// InstallRedis is the command that installs redis-server on Debian.
const InstallRedis = "apt-get install -y redis-server"

// errNoRedis reports a missing redis-server.
var errNoRedis = errors.New("redis-server not found")

// redisBinary finds redis-server: $REDIS_SERVER, then on PATH, then
// Debian's /usr/bin/redis-server.
func redisBinary() (string, error) {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return exec.LookPath(b)
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", fmt.Errorf("%w (run: %s, or make deps)", errNoRedis, InstallRedis)
}

// startRedis starts a redis-server with its own defaults for everything but
// where it listens and writes: no append-only file, snapshots after 3600 s
// and 1 change, 300 s and 100, or 60 s and 10,000 (so a crash loses up to
// the last minute's keys), unless appendfsync names an append-only fsync
// policy ("always" fsyncs every write before answering, as ZooKeeper with
// forceSync=yes does; "everysec"). ctx bounds the start.
func startRedis(ctx context.Context, appendfsync string) (*redisServer, error) {
	bin, err := redisBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "turnstile-redis-*")
	if err != nil {
		return nil, err
	}
	var last error
	for range 3 { // the port may be taken between pick and bind
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		args := []string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--daemonize", "no", "--logfile", "", "--unixsocket", "",
		}
		if appendfsync != "" {
			args = append(args, "--appendonly", "yes", "--appendfsync", appendfsync)
		}
		// The peer's context is the harness's, not ctx: the server lives
		// until Close.
		proc, err := interop.StartProgram(context.Background(), "redis-server", bin, args, nil)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, proc: proc}
		if last = s.waitReady(ctx); last == nil {
			s.stats = redis.NewClient(&redis.Options{Addr: s.addr, DisableIdentity: true, PoolSize: 1})
			return s, nil
		}
		proc.Kill()
		if ctx.Err() != nil {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("start redis-server: %w", last)
}

// waitReady pings until the server answers, and reads its version.
func (s *redisServer) waitReady(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, DisableIdentity: true, MaxRetries: -1})
	defer rdb.Close()
	for {
		info, err := rdb.Info(ctx, "server").Result()
		if err == nil {
			s.version = parseKV(info, ":")["redis_version"]
			return nil
		}
		select {
		case <-s.proc.Done():
			return fmt.Errorf("redis-server exited: %s", strings.TrimSpace(s.proc.Output()))
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s not ready: %w (%v)", s.addr, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// commandsProcessed is the server's total_commands_processed so far, less
// the commands the harness sent on s.stats (this INFO included).
func (s *redisServer) commandsProcessed(ctx context.Context) (int64, bool) {
	s.own.Add(1)
	info, err := s.stats.Info(ctx, "stats").Result()
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(parseKV(info, ":")["total_commands_processed"], 10, 64)
	// INFO counts itself after it answers; the next INFO will see it.
	return n - (s.own.Load() - 1), err == nil
}

func (s *redisServer) pid() int { return s.proc.PID() }

// Close kills the server by its PID and removes its dir.
func (s *redisServer) Close() {
	if s.stats != nil {
		s.stats.Close()
	}
	s.proc.Kill()
	os.RemoveAll(s.dir)
}

// freePort is a free 127.0.0.1 port, at the moment of asking.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// redisScanner finds the lock keys of a run under a lock root: the keys
// root/... whose value (the holder's token) carries the run's marker. It
// uses the server's stats connection, whose commands the server's count
// already leaves out.
type redisScanner struct{ s *redisServer }

func (redisScanner) sent() int64 { return 0 }
func (redisScanner) Close()      {}

func (r redisScanner) ours(ctx context.Context, root string, marker []byte) ([]string, error) {
	var found []string
	var cursor uint64
	for {
		r.s.own.Add(1)
		keys, next, err := r.s.stats.Scan(ctx, cursor, root+"/*", 1000).Result()
		if err != nil {
			return found, err
		}
		for _, k := range keys {
			r.s.own.Add(1)
			v, err := r.s.stats.Get(ctx, k).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return found, err
			}
			if strings.Contains(v, string(marker)) {
				found = append(found, k)
			}
		}
		if cursor = next; cursor == 0 {
			return found, nil
		}
	}
}

// settle polls until no key of the run is left or wait has passed: keys of
// a client that died expire with their TTL.
func (r redisScanner) settle(ctx context.Context, root string, marker []byte, wait time.Duration) ([]string, error) {
	deadline := time.Now().Add(wait)
	for {
		left, err := r.ours(ctx, root, marker)
		if err == nil && len(left) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return left, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
