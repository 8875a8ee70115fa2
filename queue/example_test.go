package queue_test

import (
	"fmt"

	"github.com/turnstile-go/turnstile/queue"
)

// One listing of a lock path shared by a Curator client, a kazoo client and
// turnstile, with a stray node: turnstile's node is third in line and
// watches the kazoo node just before it.
func ExampleListing_Mutex() {
	self := "_c_0d7e5bb4-52a4-4a3b-9d4e-5b0b3c7b0e1f-lock-0000000009"
	children := []string{
		self,
		"_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-0000000004",
		"514e5a831836450cb1a56c741e990fd8__lock__0000000007",
		"config",
	}
	l := queue.NewListing(children)
	d := l.Mutex(self)
	fmt.Println("holds:", d.Holds)
	fmt.Println("watch:", d.Watch)
	fmt.Println("foreign:", l.Foreign())
	// Output:
	// holds: false
	// watch: 514e5a831836450cb1a56c741e990fd8__lock__0000000007
	// foreign: [config]
}

// Readers share the lock; a reader queued behind a writer waits for that
// writer alone, and a writer queued behind the reader does not hold it up.
func ExampleListing_Read() {
	children := []string{
		"__READ__0000000001",
		"__WRIT__0000000002",
		"__READ__0000000003",
		"__WRIT__0000000004",
	}
	l := queue.NewListing(children)
	for _, self := range []string{"__READ__0000000001", "__READ__0000000003"} {
		d := l.Read(self)
		fmt.Printf("%s: holds %v, watch %q\n", self, d.Holds, d.Watch)
	}
	// Output:
	// __READ__0000000001: holds true, watch ""
	// __READ__0000000003: holds false, watch "__WRIT__0000000002"
}

func ExampleParse() {
	n, ok := queue.Parse("_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-__WRIT__0000000012")
	fmt.Println(ok, n.Kind, n.Seq, n.ID, n.Client)
	// Output:
	// true write 12 1b4e28ba-2fa1-11d2-883f-0016d3cca427 curator
}
