//go:build !unix

package journal

// processAlive cannot probe here; assume alive so nothing is removed.
func processAlive(int) bool { return true }
