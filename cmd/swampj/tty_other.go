//go:build !linux

package main

import "io"

// isTerminal: without a portable probe, assume not (no progress output).
func isTerminal(io.Writer) bool { return false }
