package queue

import "strings"

// PinPrefix starts the name of a pin: an ephemeral child a turnstile
// engine keeps on a lock path it cycles on, so that the path, a container,
// cannot be removed and made again between two of its cycles (see the
// engine's listing-free cycle). A pin is no lock node: every recipe
// ignores it. '~' sorts after every digit and letter, so where Curator and
// kazoo sort a name they do not know by the name itself, a pin sorts after
// every lock node and never stands ahead of one; kazoo's recipes skip
// names they do not know.
const PinPrefix = "~pin-"

// PinName is the pin named by id, an identifier its engine makes unique
// (a protected id, NewID).
func PinName(id string) string { return PinPrefix + id }

// IsPin reports whether a child's name is a pin.
func IsPin(name string) bool { return strings.HasPrefix(name, PinPrefix) }
