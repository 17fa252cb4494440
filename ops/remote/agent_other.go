//go:build !linux

package remote

import "syscall"

// agentSysProcAttr: no Pdeathsig outside Linux; the agent exits at the end
// of its stdin.
func agentSysProcAttr() *syscall.SysProcAttr { return nil }
