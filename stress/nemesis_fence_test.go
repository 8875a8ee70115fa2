package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestNemesisFenceProcess runs the fence as the nemesis run does, a process
// of its own (this test binary in child mode), and writes to it over its
// socket: a token below the highest it accepted is refused, an equal or
// higher one accepted, paths are judged apart, the control's unjudged
// writes are accepted and logged with their tokens, a request cut short
// (its client died mid-write) changes nothing, and the log holds the
// accepted writes in order.
func TestNemesisFenceProcess(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "fence.sock")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-socket", sock)
	cmd.Env = append(os.Environ(), childEnv+"="+nemesisFenceMode)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the fence process: %v", err)
		}
	}()
	if sc := bufio.NewScanner(stdout); !sc.Scan() || sc.Text() != "ready" {
		_ = cmd.Process.Kill()
		t.Fatalf("the fence process did not say ready: %q", sc.Text())
	}

	type step struct {
		path    int
		token   int64
		judge   bool
		who     string
		wantSeq int64 // 0: refused
	}
	steps := []step{
		{0, 5, true, "c0.1", 1},
		{0, 7, true, "c1.1", 2},
		{0, 6, true, "c0.1", 0}, // the stale holder
		{0, 7, true, "c1.1", 3}, // the same holder's next round
		{1, 2, true, "c2.1", 1}, // another path has its own highest token
		{0, 3, false, "c3.1", 4},
		{0, 6, true, "c0.1", 0}, // an unjudged write does not lower the highest
	}
	for i, s := range steps {
		seq, err := fenceWrite(sock, s.path, s.token, s.judge, s.who)
		switch {
		case s.wantSeq == 0 && !errors.Is(err, errFenceRefused):
			t.Fatalf("step %d: token %d on path %d: seq %d, err %v; want refused", i, s.token, s.path, seq, err)
		case s.wantSeq != 0 && (err != nil || seq != s.wantSeq):
			t.Fatalf("step %d: token %d on path %d: seq %d, err %v; want accepted as %d", i, s.token, s.path, seq, err, s.wantSeq)
		}
	}

	// A client killed in the middle of its request: the line never ends.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("w 0 100 c9.1")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if seq, err := fenceWrite(sock, 0, 8, true, "c1.2"); err != nil || seq != 5 {
		t.Fatalf("after a cut request, token 8: seq %d, err %v; want accepted as 5 (token 100 never applied)", seq, err)
	}

	log, err := fenceLog(sock)
	if err != nil {
		t.Fatal(err)
	}
	want := []fenceRecord{
		{0, 1, 5, true, "c0.1"},
		{0, 2, 7, true, "c1.1"},
		{0, 3, 7, true, "c1.1"},
		{1, 1, 2, true, "c2.1"},
		{0, 4, 3, false, "c3.1"},
		{0, 5, 8, true, "c1.2"},
	}
	if !slices.Equal(log, want) {
		t.Fatalf("the fence's log:\n%v\nwant\n%v", log, want)
	}
	// A writer's life: from its hello until its connection ends; one
	// still open has no end yet.
	h1, err := fenceHello(sock, 0, 9, "c4.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := fenceHello(sock, 0, 11, "c4.1", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	h1.Close()
	var lives []fenceLife
	for {
		if lives, err = fenceLives(sock); err != nil {
			t.Fatal(err)
		}
		if len(lives) == 2 && lives[0].End != 0 {
			break // the fence saw the first end
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l := lives[0]; l.Token != 9 || l.Who != "c4.1" || l.Lease != 1 || l.Start == 0 || l.End < l.Start {
		t.Fatalf("the closed life: %+v", l)
	}
	if l := lives[1]; l.Token != 11 || l.Lease != 2 || l.Start == 0 || l.End != 0 {
		t.Fatalf("the open life: %+v", l)
	}

	// The checker reads that log: the unjudged token 3 after 7 is what a
	// fence would have refused.
	r := &nemCheck{}
	r.checkFence(log)
	if r.FenceOrder != 1 {
		t.Fatalf("fence order %d on the log, want 1: %v", r.FenceOrder, r.Examples)
	}
}
