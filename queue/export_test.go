package queue

// The predicates over a slice of nodes in any order, and the parsing and
// sorting beneath a Listing, for the tests: the public API decides on a
// Listing alone, but the fuzz and order tests feed nodes in orders no
// listing has.
var (
	Nodes = parseNodes
	Sort  = sortNodes
	Less  = less
)

func Mutex(nodes []Node, self string) Decision            { return listingOf(nodes).Mutex(self) }
func Write(nodes []Node, self string) Decision            { return listingOf(nodes).Write(self) }
func Read(nodes []Node, self string) Decision             { return listingOf(nodes).Read(self) }
func Latch(nodes []Node, self string) Decision            { return listingOf(nodes).Latch(self) }
func Semaphore(nodes []Node, self string, n int) Decision { return listingOf(nodes).Semaphore(self, n) }

// Children is the listing as given.
func (l *Listing) Children() []string { return l.children }
