package queue_test

import (
	"fmt"

	"github.com/turnstile-go/turnstile/queue"
)

// One listing of a lock path shared by a Curator client, a kazoo client and
// turnstile, with a stray node: turnstile's node is third in line and
// watches the kazoo node just before it.
func ExampleMutex() {
	self := queue.ProtectedPrefix("0d7e5bb4-52a4-4a3b-9d4e-5b0b3c7b0e1f", queue.KindMutex) + "0000000009"
	children := []string{
		self,
		"_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-0000000004",
		"514e5a831836450cb1a56c741e990fd8__lock__0000000007",
		"config",
	}
	nodes, foreign := queue.Nodes(children)
	d := queue.Mutex(nodes, self)
	fmt.Println("holds:", d.Holds)
	fmt.Println("watch:", d.Watch)
	fmt.Println("foreign:", foreign)
	// Output:
	// holds: false
	// watch: 514e5a831836450cb1a56c741e990fd8__lock__0000000007
	// foreign: [config]
}

// Readers share the lock; a reader queued behind a writer waits for that
// writer alone, and a writer queued behind the reader does not hold it up.
func ExampleRead() {
	children := []string{
		"__READ__0000000001",
		"__WRIT__0000000002",
		"__READ__0000000003",
		"__WRIT__0000000004",
	}
	nodes, _ := queue.Nodes(children)
	for _, self := range []string{"__READ__0000000001", "__READ__0000000003"} {
		fmt.Printf("%s: %+v\n", self, queue.Read(nodes, self))
	}
	// Output:
	// __READ__0000000001: {Holds:true Watch: Missing:false Next:false}
	// __READ__0000000003: {Holds:false Watch:__WRIT__0000000002 Missing:false Next:true}
}

// A create whose reply was lost: the contender finds its node by the
// protected id it chose before sending the create.
func ExampleFindByID() {
	id := "0d7e5bb4-52a4-4a3b-9d4e-5b0b3c7b0e1f"
	children := []string{
		"_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-0000000004",
		queue.ProtectedPrefix(id, queue.KindMutex) + "0000000005",
	}
	name, ok := queue.FindByID(children, id)
	fmt.Println(name, ok)
	// Output:
	// _c_0d7e5bb4-52a4-4a3b-9d4e-5b0b3c7b0e1f-lock-0000000005 true
}

func ExampleParse() {
	n, ok := queue.Parse("_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-__WRIT__0000000012")
	fmt.Println(ok, n.Kind, n.Seq, n.ID, n.Client)
	// Output:
	// true write 12 1b4e28ba-2fa1-11d2-883f-0016d3cca427 curator
}
