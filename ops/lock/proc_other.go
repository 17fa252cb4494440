//go:build !unix

package lock

// processExists cannot probe another process portably here, so it says
// "alive": locks are then judged stale by their TTL alone, which is the
// conservative answer.
func processExists(pid int) bool { return true }
