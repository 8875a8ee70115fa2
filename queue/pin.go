package queue

import "strings"

// pinPrefix starts the name of a pin, an engine's ephemeral child that
// keeps a lock path from being reaped (internal/nodename makes pins and
// says why). A pin is no lock node, nor a foreign name: a listing skips it.
const pinPrefix = "~pin-"

func isPin(name string) bool { return strings.HasPrefix(name, pinPrefix) }
