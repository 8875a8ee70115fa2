package input

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStringsNameEveryValue(t *testing.T) {
	for s := Disconnected; s <= Closed; s++ {
		if s.String() == "unknown" {
			t.Errorf("session state %d has no name", s)
		}
	}
	for w := NodeCreated; w <= NotWatching; w++ {
		if w.String() == "unknown" {
			t.Errorf("watch type %d has no name", w)
		}
	}
	for k := range OpKind(NumOpKinds) {
		if k.String() == "unknown" {
			t.Errorf("op kind %d has no name", k)
		}
	}
}
