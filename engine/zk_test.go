package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

func frame(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func replyFrame(xid int32, zxid int64, payload int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	b = binary.BigEndian.AppendUint32(b, 0)
	return frame(append(b, make([]byte, payload)...))
}

// The scanner must find the same greatest zxid however the stream is cut
// into reads, skip the handshake, and ignore notifications' -1.
func TestFrameScannerTracksGreatestZxid(t *testing.T) {
	var stream []byte
	handshake := frame(make([]byte, 36))                       // protocol version, timeout, session id, password
	binary.BigEndian.PutUint64(handshake[12:], 0x7fffffffffff) // a session id that must not be taken for a zxid
	stream = append(stream, handshake...)
	stream = append(stream, replyFrame(1, 0x100000005, 40)...)
	stream = append(stream, replyFrame(-1, -1, 30)...) // a watch notification
	stream = append(stream, replyFrame(-2, 0x100000009, 0)...)
	stream = append(stream, replyFrame(2, 0x100000007, 1000)...)
	const want = 0x100000009

	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 200 {
		var zxid atomic.Int64
		f := frameScanner{zxid: &zxid, connecting: true}
		rest := stream
		for len(rest) > 0 {
			n := 1 + rng.IntN(min(len(rest), 1+trial%64))
			f.scan(rest[:n])
			rest = rest[n:]
		}
		if got := zxid.Load(); got != want {
			t.Fatalf("trial %d: zxid %#x, want %#x", trial, got, want)
		}
		if f.have != 0 || f.skip != 0 {
			t.Fatalf("trial %d: scanner mid-frame at the end of the stream (have %d, skip %d)", trial, f.have, f.skip)
		}
	}
}
