package netfault

import (
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Cut closes the connections dialled so far and refuses dials; Heal lets
// them through again.
func TestCutAndHeal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	}()

	var p Partition
	c, err := p.Dial("tcp", ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read on a cut connection: %v, want an error", err)
	}
	if _, err := p.Dial("tcp", ln.Addr().String(), time.Second); !errors.Is(err, ErrPartitioned) {
		t.Fatalf("dial while cut: %v, want ErrPartitioned", err)
	}
	p.Heal()
	c, err = p.Dial("tcp", ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatalf("dial after Heal: %v", err)
	}
	c.Close()
}
