// Package shape has no code: its tests hold the project to the sizes it
// keeps so that a newcomer can read it (package engine's lines, the cohort
// shell's, the README's and BENCHMARKS.md's), so that growth past them shows
// in CI rather than in a review a year later.
package shape
