package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The nemesis run's fenced register: a process of its own (this binary in
// child mode "nemesis-fence"), listening on a Unix socket in the run's
// directory. A socket bound to a path is reached through the file system,
// not through a network namespace, so every client process, each in its
// namespace, reaches it, and no fault of the nemesis cuts it: the fence is
// the resource, not a party to the faults. It keeps, per lock path, the
// highest token it accepted, refuses a write with a lower one, and logs
// every accepted write in the order it accepted them; the parent reads
// that log at the end and the checker judges it (nemesis_check.go). The
// process owns the state: a client killed in the middle of its request
// leaves a line without its newline, which is never applied.
//
// The protocol is one line per request, one answer per line:
//
//	w <path> <token> <who>   → ok <seq> | refused <highest> | err <text>
//	u <path> <token> <who>   → ok <seq>
//	log                      → r <path> <seq> <token> <w|u> <who> ... then end
//	h <path> <token> <who> <lease>  → ok
//	lives                    → l <path> <token> <who> <lease> <start> <end> ... then end
//
// "h" is a writer's hello (the command the CLI participant runs under
// turnstile lock, nemesis_cli.go): the fence notes its life from then
// until that connection ends, which the kernel does the moment the
// process dies (killed, or exited), whoever killed it. That end is the
// process's end as the fence observed it (Unix nanoseconds; 0 while the
// connection is open).
//
// "u" is the control run's write, which the fence does not judge (as a
// resource that is not given the token would not): it is accepted and
// logged with the writer's token all the same, so that the checker sees
// what a fence would have had to refuse.

// nemesisFenceMode is the fence process's child mode.
const nemesisFenceMode = "nemesis-fence"

// fenceRecord is one accepted write.
type fenceRecord struct {
	Path   int
	Seq    int64 // the path's accepted writes so far, this one included
	Token  int64
	Judged bool   // a "w" write (the fence compared its token), not a "u"
	Who    string // the writer: c<client>.<incarnation>
}

// fenceLife is one writer process's life, as the fence observed it: from
// its hello to the end of its connection.
type fenceLife struct {
	Path       int
	Token      int64
	Who        string // c<client>.<incarnation>
	Lease      int    // the lease's number within the incarnation
	Start, End int64  // Unix nanoseconds; End 0: still open
}

// fenceRegister is the fence's state.
type fenceRegister struct {
	mu    sync.Mutex
	high  map[int]int64 // per path, the highest token of a judged write accepted
	seq   map[int]int64
	log   []fenceRecord
	lives []fenceLife
	now   func() int64 // the clock, Unix nanoseconds
}

func newFenceRegister() *fenceRegister {
	return &fenceRegister{high: map[int]int64{}, seq: map[int]int64{}, now: func() int64 { return time.Now().UnixNano() }}
}

// hello notes a writer's life from now; the returned index ends it.
func (f *fenceRegister) hello(l fenceLife) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	l.Start, l.End = f.now(), 0
	f.lives = append(f.lives, l)
	return len(f.lives) - 1
}

// ended notes the end of life i, now.
func (f *fenceRegister) ended(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lives[i].End = f.now()
}

func (f *fenceRegister) livesNow() []fenceLife {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fenceLife(nil), f.lives...)
}

// write accepts or refuses one write; it returns the path's accepted count
// after it, or the highest token when refused.
func (f *fenceRegister) write(path int, token int64, judge bool, who string) (ok bool, seqOrHigh int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if high, seen := f.high[path]; judge && seen && token < high {
		return false, high
	}
	if high, seen := f.high[path]; judge && (!seen || token > high) {
		f.high[path] = token
	}
	f.seq[path]++
	f.log = append(f.log, fenceRecord{Path: path, Seq: f.seq[path], Token: token, Judged: judge, Who: who})
	return true, f.seq[path]
}

func (f *fenceRegister) records() []fenceRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fenceRecord(nil), f.log...)
}

// serveFence answers every connection of ln until ln is closed, then waits
// for the connections, which end with their clients.
func serveFence(ln net.Listener, f *fenceRegister) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			f.serveConn(c)
		}()
	}
}

func (f *fenceRegister) serveConn(c io.ReadWriter) {
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	life := -1
	defer func() {
		if life >= 0 {
			f.ended(life)
		}
	}()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			// A line cut short (its writer died, or closed early) is
			// dropped: only a whole request changes the state. The end
			// of a hello's connection is its writer's end.
			return
		}
		line = strings.TrimSuffix(line, "\n")
		if fs := strings.Fields(line); len(fs) == 5 && fs[0] == "h" && life < 0 {
			path, err1 := strconv.Atoi(fs[1])
			tok, err2 := strconv.ParseInt(fs[2], 10, 64)
			lease, err3 := strconv.Atoi(fs[4])
			if err := errors.Join(err1, err2, err3); err != nil {
				fmt.Fprintf(w, "err bad request %q\n", line)
			} else {
				life = f.hello(fenceLife{Path: path, Token: tok, Who: fs[3], Lease: lease})
				fmt.Fprintln(w, "ok")
			}
		} else {
			f.answer(line, w)
		}
		if w.Flush() != nil {
			return
		}
	}
}

func (f *fenceRegister) answer(line string, w io.Writer) {
	fs := strings.Fields(line)
	switch {
	case len(fs) == 1 && fs[0] == "lives":
		for _, l := range f.livesNow() {
			fmt.Fprintf(w, "l %d %d %s %d %d %d\n", l.Path, l.Token, l.Who, l.Lease, l.Start, l.End)
		}
		fmt.Fprintln(w, "end")
	case len(fs) == 1 && fs[0] == "log":
		for _, r := range f.records() {
			kind := "u"
			if r.Judged {
				kind = "w"
			}
			fmt.Fprintf(w, "r %d %d %d %s %s\n", r.Path, r.Seq, r.Token, kind, r.Who)
		}
		fmt.Fprintln(w, "end")
	case len(fs) == 4 && (fs[0] == "w" || fs[0] == "u"):
		path, err1 := strconv.Atoi(fs[1])
		tok, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 != nil || err2 != nil || path < 0 {
			fmt.Fprintf(w, "err bad request %q\n", line)
			return
		}
		if ok, n := f.write(path, tok, fs[0] == "w", fs[3]); ok {
			fmt.Fprintf(w, "ok %d\n", n)
		} else {
			fmt.Fprintf(w, "refused %d\n", n)
		}
	default:
		fmt.Fprintf(w, "err bad request %q\n", line)
	}
}

// errFenceRefused: the fence refused a write for its token.
var errFenceRefused = errors.New("fence: token below the highest accepted")

// fenceWrite is one client's write over the socket: the path's accepted
// count, errFenceRefused, or another error (the outcome then unknown).
func fenceWrite(socket string, path int, token int64, judge bool, who string) (int64, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return 0, fmt.Errorf("fence: %w", err)
	}
	defer c.Close()
	// Long enough for a client stopped (SIGSTOP) mid-request to read its
	// answer when continued: a deadline past while it was stopped would
	// make a known outcome unknown.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	kind := "u"
	if judge {
		kind = "w"
	}
	if _, err := fmt.Fprintf(c, "%s %d %d %s\n", kind, path, token, who); err != nil {
		return 0, fmt.Errorf("fence: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("fence: %w", err)
	}
	var n int64
	switch fs := strings.Fields(line); {
	case len(fs) == 2 && fs[0] == "ok":
		n, err = strconv.ParseInt(fs[1], 10, 64)
		return n, err
	case len(fs) == 2 && fs[0] == "refused":
		return 0, errFenceRefused
	}
	return 0, fmt.Errorf("fence: answer %q", strings.TrimSpace(line))
}

// fenceLog reads the fence's log of accepted writes.
func fenceLog(socket string) ([]fenceRecord, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("fence log: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "log\n"); err != nil {
		return nil, fmt.Errorf("fence log: %w", err)
	}
	var out []fenceRecord
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 1 && fs[0] == "end" {
			return out, nil
		}
		if len(fs) != 6 || fs[0] != "r" {
			return nil, fmt.Errorf("fence log: line %q", sc.Text())
		}
		r := fenceRecord{Judged: fs[4] == "w", Who: fs[5]}
		var e1, e2, e3 error
		r.Path, e1 = strconv.Atoi(fs[1])
		r.Seq, e2 = strconv.ParseInt(fs[2], 10, 64)
		r.Token, e3 = strconv.ParseInt(fs[3], 10, 64)
		if err := errors.Join(e1, e2, e3); err != nil {
			return nil, fmt.Errorf("fence log: line %q: %w", sc.Text(), err)
		}
		out = append(out, r)
	}
	return nil, fmt.Errorf("fence log: cut short: %w", errors.Join(sc.Err(), io.ErrUnexpectedEOF))
}

// fenceHello opens a writer's life at the fence: the connection returned
// is to be kept open, unused, until the process ends.
func fenceHello(socket string, path int, token int64, who string, lease int) (net.Conn, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("fence hello: %w", err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "h %d %d %s %d\n", path, token, who, lease); err != nil {
		c.Close()
		return nil, fmt.Errorf("fence hello: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ok" {
		c.Close()
		return nil, fmt.Errorf("fence hello: answer %q: %v", strings.TrimSpace(line), err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// fenceLives reads the writers' lives the fence observed.
func fenceLives(socket string) ([]fenceLife, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("fence lives: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "lives\n"); err != nil {
		return nil, fmt.Errorf("fence lives: %w", err)
	}
	var out []fenceLife
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 1 && fs[0] == "end" {
			return out, nil
		}
		if len(fs) != 7 || fs[0] != "l" {
			return nil, fmt.Errorf("fence lives: line %q", sc.Text())
		}
		l := fenceLife{Who: fs[3]}
		var e [5]error
		l.Path, e[0] = strconv.Atoi(fs[1])
		l.Token, e[1] = strconv.ParseInt(fs[2], 10, 64)
		l.Lease, e[2] = strconv.Atoi(fs[4])
		l.Start, e[3] = strconv.ParseInt(fs[5], 10, 64)
		l.End, e[4] = strconv.ParseInt(fs[6], 10, 64)
		if err := errors.Join(e[:]...); err != nil {
			return nil, fmt.Errorf("fence lives: line %q: %w", sc.Text(), err)
		}
		out = append(out, l)
	}
	return nil, fmt.Errorf("fence lives: cut short: %w", errors.Join(sc.Err(), io.ErrUnexpectedEOF))
}

// nemesisFenceMain is the fence process: it listens on -socket, prints
// "ready" once it does, and ends when its stdin closes or on SIGTERM.
func nemesisFenceMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet(nemesisFenceMode, flag.ContinueOnError)
	fl.SetOutput(stderr)
	socket := fl.String("socket", "", "the Unix socket to listen on")
	if err := fl.Parse(args); err != nil || *socket == "" {
		fmt.Fprintln(stderr, "nemesis fence: -socket is needed")
		return exitUsage
	}
	ln, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintf(stderr, "nemesis fence: %v\n", err)
		return exitFailed
	}
	f := newFenceRegister()
	served := make(chan struct{})
	go func() {
		serveFence(ln, f)
		close(served)
	}()
	fmt.Fprintln(stdout, "ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(eof)
	}()
	select {
	case <-sig:
	case <-eof:
	}
	ln.Close()
	// A connection whose client is stopped would hold the wait up: the
	// state is in memory and the parent has read the log, so a bound.
	select {
	case <-served:
	case <-time.After(2 * time.Second):
	}
	return 0
}
