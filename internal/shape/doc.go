// Package shape has no code: its tests hold the project to the sizes it
// keeps so that a newcomer can read it (package engine's lines, the
// README's, BENCHMARKS.md's and DESIGN.md's), so that growth past them shows in CI when
// it happens.
package shape
