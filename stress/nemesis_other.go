//go:build !linux

package main

import (
	"context"
	"fmt"
	"io"
)

func nemesisMain(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "nemesis: needs Linux network namespaces")
	return exitUsage
}
