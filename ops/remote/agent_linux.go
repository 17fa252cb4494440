package remote

import "syscall"

// agentSysProcAttr has the kernel kill the agent when swampj dies, even
// if something kept its stdin open. (Pdeathsig follows the thread that
// started it; the agent's exit at the end of its stdin covers the rest.)
func agentSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
