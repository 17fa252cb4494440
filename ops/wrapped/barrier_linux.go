//go:build linux && (amd64 || arm64)

package wrapped

// The barrier: a seccomp user-notification supervisor.
//
// The wrapped command is started through swampj itself (the trampoline:
// this executable with trampolineEnv set), which installs a seccomp filter
// on its own thread, hands the filter's listener to the wrapper over a
// socket and then execs the command. The filter stops every rename,
// unlink, rmdir, fsync and fdatasync the command (and every process it
// starts) makes, until the wrapper answers. The wrapper reads the paths
// from the stopped process, and when one lies under a covered root it
// appends it to the run's change log and syncs the file systems of the
// roots (syncfs) before letting the call go on. So:
//
//   - whatever the command wrote before a rename or delete under the
//     datastore is on disk before that rename or delete happens: a
//     version's bytes before the rename that publishes it, a version before
//     the `latest` that names it (swamp deletes `latest`, then creates it),
//     a catalog row's files before the catalog's own fsync;
//   - every path the command changed that way is in the change log before
//     the change happens, so a run that dies leaves the list of what it
//     could have left torn;
//   - directories created while it runs are covered, because the filter
//     stops calls, not directories; nothing is opened through the
//     command's paths, so no symlink is followed anywhere.
//
// The filter decides by syscall number alone (it cannot read paths), so
// calls outside the roots stop too, for the few microseconds a path read
// takes. A file written in place and never renamed, deleted or fsynced (a
// log held open for appending; `latest` after its re-creation) is made
// durable by the next barrier or the periodic sync (Options.SyncInterval).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// trampolineEnv marks the trampoline process; its value is the fd number
// of the socket the listener goes back on.
const trampolineEnv = "SWAMPJ_WRAPPED_TRAMPOLINE"

// seccomp's user-notification ABI (linux/seccomp.h).
const (
	seccompSetModeFilter   = 1
	seccompRetUserNotif    = 0x7fc00000
	seccompRetAllow        = 0x7fff0000
	notifFlagContinue      = 1
	ioctlNotifRecv         = 0xc0502100
	ioctlNotifSend         = 0xc0182101
	atFDCWD                = -100
	x32SyscallBit          = 0x40000000
	auditArchX8664         = 0xc000003e
	auditArchAArch64       = 0xc00000b7
	seccompDataNrOffset    = 0
	seccompDataArchOffset  = 4
	seccompFilterListenFlg = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
)

type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

type seccompNotif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// pathArg says where a stopped call's path is: the dirfd argument (-1:
// the working directory) and the path argument; fdArg >= 0 instead names
// an fd argument (fsync).
type pathArg struct{ dirfd, path, fd int }

// call is a stopped system call: where its paths are, and whether it is a
// barrier (sync before it goes on) or only a change to log (a file created
// or truncated in place: what the doctor must look at afterwards, durable
// with the next barrier like the file itself).
type call struct {
	args    []pathArg
	barrier bool
}

// openFlags: an open that creates or truncates is a change to log.
const openFlags = unix.O_CREAT | unix.O_TRUNC

// stoppedCalls are the calls the filter stops, by architecture. open and
// openat stop only with openFlags set (the filter reads their flags
// argument); arm64 has only the *at forms.
type callTable struct {
	arch         uint32
	calls        map[uint32]call
	openat, open uint32 // 0: none (arm64 has no open)
	openatFlags  uint32 // offset of openat's flags argument in seccomp_data
	openFlagsOff uint32
}

var stopped = map[string]callTable{
	"amd64": {arch: auditArchX8664, calls: map[uint32]call{
		82:  {[]pathArg{{-1, 0, -1}, {-1, 1, -1}}, true}, // rename
		264: {[]pathArg{{0, 1, -1}, {2, 3, -1}}, true},   // renameat
		316: {[]pathArg{{0, 1, -1}, {2, 3, -1}}, true},   // renameat2
		87:  {[]pathArg{{-1, 0, -1}}, true},              // unlink
		263: {[]pathArg{{0, 1, -1}}, true},               // unlinkat
		84:  {[]pathArg{{-1, 0, -1}}, true},              // rmdir
		74:  {[]pathArg{{-1, -1, 0}}, true},              // fsync
		75:  {[]pathArg{{-1, -1, 0}}, true},              // fdatasync
		85:  {[]pathArg{{-1, 0, -1}}, false},             // creat
		437: {[]pathArg{{0, 1, -1}}, false},              // openat2 (its flags are behind a pointer)
		257: {[]pathArg{{0, 1, -1}}, false},              // openat, with openFlags
		2:   {[]pathArg{{-1, 0, -1}}, false},             // open, with openFlags
	}, openat: 257, open: 2, openatFlags: 16 + 8*2, openFlagsOff: 16 + 8*1},
	"arm64": {arch: auditArchAArch64, calls: map[uint32]call{
		38:  {[]pathArg{{0, 1, -1}, {2, 3, -1}}, true}, // renameat
		276: {[]pathArg{{0, 1, -1}, {2, 3, -1}}, true}, // renameat2
		35:  {[]pathArg{{0, 1, -1}}, true},             // unlinkat
		82:  {[]pathArg{{-1, -1, 0}}, true},            // fsync
		83:  {[]pathArg{{-1, -1, 0}}, true},            // fdatasync
		437: {[]pathArg{{0, 1, -1}}, false},            // openat2
		56:  {[]pathArg{{0, 1, -1}}, false},            // openat, with openFlags
	}, openat: 56, openatFlags: 16 + 8*2},
}

// filter is the BPF program: this architecture's stopped calls notify
// (open and openat only with openFlags); everything else (another
// architecture's calls, x32) is allowed.
//
//	0    ld arch;  jeq ARCH ? 2 : ALLOW
//	2    ld nr;    jge x32 ? ALLOW : 4
//	4..  jeq NR_i ? NOTIFY            (the calls stopped whatever their flags)
//	     jeq openat ? OPENAT;  jeq open ? OPEN;  ALLOW
//	     OPENAT: ld flags; jset openFlags ? NOTIFY : ALLOW
//	     OPEN:   ld flags; jset openFlags ? NOTIFY : next;  ALLOW
//	     NOTIFY
func filter() []unix.SockFilter {
	tab := stopped[runtime.GOARCH]
	var always []uint32
	for nr := range tab.calls {
		if nr != tab.openat && (tab.open == 0 || nr != tab.open) {
			always = append(always, nr)
		}
	}
	n := uint32(len(always))
	allow, openat, open, notify := 6+n, 7+n, 9+n, 12+n
	jump := func(from, to uint32) uint8 { return uint8(to - from - 1) }
	openNr := tab.open
	if openNr == 0 {
		openNr = 0xffffffff // no such call here
	}
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: seccompDataArchOffset},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: jump(1, allow), K: tab.arch},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: seccompDataNrOffset},
		{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, Jt: jump(3, allow), Jf: 0, K: x32SyscallBit},
	}
	for i, nr := range always {
		at := 4 + uint32(i)
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jump(at, notify), K: nr})
	}
	prog = append(prog,
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jump(4+n, openat), K: tab.openat},
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jump(5+n, open), K: openNr},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: seccompRetAllow},
		unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: tab.openatFlags},
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, Jt: jump(8+n, notify), Jf: jump(8+n, 11+n), K: openFlags}, // BPF jumps only forward: the ALLOW after OPEN
		unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: tab.openFlagsOff},
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, Jt: jump(10+n, notify), Jf: 0, K: openFlags},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: seccompRetAllow},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: seccompRetUserNotif},
	)
	return prog
}

// supported says why the barrier cannot run here (nil: it can).
func supported() error {
	if _, ok := stopped[runtime.GOARCH]; !ok {
		return fmt.Errorf("no seccomp table for %s", runtime.GOARCH)
	}
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		return fmt.Errorf("/proc is not mounted: %w", err)
	}
	return nil
}

// MaybeExec is the trampoline: in a process started by a wrapped run it
// installs the filter, sends the listener to the wrapper and execs the
// command, and never returns; anywhere else it returns at once. swampj's
// main calls it first thing, before any goroutine of its own starts.
func MaybeExec() {
	fdStr, ok := os.LookupEnv(trampolineEnv)
	if !ok {
		return
	}
	os.Unsetenv(trampolineEnv)
	code, err := trampoline(fdStr)
	fmt.Fprintf(os.Stderr, "the write barrier could not start the command: %v\n", err)
	os.Exit(code)
}

func trampoline(fdStr string) (int, error) {
	sockFD, err := strconv.Atoi(fdStr)
	if err != nil {
		return 126, fmt.Errorf("bad %s=%q", trampolineEnv, fdStr)
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return 126, errors.New("trampoline started without a command")
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return lookPathCode(err), err
	}
	// The filter is per thread; the exec below runs on this same thread,
	// and the new program inherits this thread's filter.
	runtime.LockOSThread()
	listener, err := installFilter()
	if err != nil {
		return 126, fmt.Errorf("installing the seccomp filter: %w", err)
	}
	if err := unix.Sendmsg(sockFD, []byte{0}, unix.UnixRights(listener), nil, 0); err != nil {
		return 126, fmt.Errorf("handing the seccomp listener to the wrapper: %w", err)
	}
	_ = unix.Close(listener)
	_ = unix.Close(sockFD)
	err = unix.Exec(path, args, os.Environ())
	return 126, fmt.Errorf("exec %s: %w", path, err)
}

// installFilter installs the filter on the calling thread and returns its
// listener. Without CAP_SYS_ADMIN the kernel requires no_new_privs first
// (a setuid program the command runs then gains no privileges).
func installFilter() (int, error) {
	prog := filter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	install := func() (int, error) {
		fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, seccompSetModeFilter, seccompFilterListenFlg, uintptr(unsafe.Pointer(&fprog)))
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
	fd, err := install()
	if errors.Is(err, unix.EACCES) {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return -1, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
		}
		fd, err = install()
	}
	return fd, err
}

// lookPathCode is the shell's status for a command that cannot be found
// (127) or cannot be run (126).
func lookPathCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return 127
	}
	return 126
}

// supervisor answers the filter's stops for one wrapped command.
type supervisor struct {
	sock     *os.File // the wrapper's end of the socket
	listener int
	roots    []string
	onPaths  func(paths []string, barrier bool) error // log what will change, then (a barrier) sync
	periodic func()                                   // the periodic sync
	interval time.Duration
	stop     chan struct{}
	done     chan error
	once     sync.Once
}

// prepare makes cmd start through the trampoline. The returned supervisor
// runs once start is called after cmd.Start.
func prepare(cmd *exec.Cmd, roots []string, interval time.Duration, onPaths func([]string, bool) error, periodic func()) (*supervisor, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "wrapped-supervisor"), os.NewFile(uintptr(pair[1]), "wrapped-trampoline")
	self, err := os.Executable()
	if err != nil {
		mine.Close()
		theirs.Close()
		return nil, err
	}
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, theirs)
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, fmt.Sprintf("%s=%d", trampolineEnv, fd))
	cmd.Args = append([]string{self, "--"}, cmd.Args...)
	cmd.Path = self
	return &supervisor{sock: mine, listener: -1, roots: roots, onPaths: onPaths, periodic: periodic,
		interval: interval, stop: make(chan struct{}), done: make(chan error, 1)}, nil
}

// start receives the listener from the trampoline (closing the socket's
// other end, which cmd.Start has passed on) and runs the loop.
func (s *supervisor) start(cmd *exec.Cmd) error {
	for _, f := range cmd.ExtraFiles {
		if f != nil && f.Name() == "wrapped-trampoline" {
			f.Close()
		}
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(s.sock.Fd()), buf, oob, 0)
	s.sock.Close()
	if err != nil {
		return fmt.Errorf("receiving the seccomp listener: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) == 0 {
		return errors.New("the command ended before its seccomp filter was installed")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return errors.New("no seccomp listener received")
	}
	s.listener = fds[0]
	go func() { s.done <- s.loop() }()
	return nil
}

// close stops the loop and closes the listener: a process of the command
// still running after it (none, for swamp) would get ENOSYS from the calls
// the filter stops.
func (s *supervisor) close() error {
	if s.listener < 0 {
		s.sock.Close()
		return nil
	}
	s.once.Do(func() { close(s.stop) })
	err := <-s.done
	unix.Close(s.listener)
	s.listener = -1
	return err
}

func (s *supervisor) loop() error {
	tick := s.interval
	if tick <= 0 || tick > 200*time.Millisecond {
		tick = 200 * time.Millisecond
	}
	lastSync := time.Now()
	for {
		select {
		case <-s.stop:
			return nil
		default:
		}
		if s.interval > 0 && time.Since(lastSync) >= s.interval {
			s.periodic()
			lastSync = time.Now()
		}
		pfd := []unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, int(tick/time.Millisecond))
		if errors.Is(err, unix.EINTR) || n == 0 {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll on the seccomp listener: %w", err)
		}
		if pfd[0].Revents&unix.POLLHUP != 0 && pfd[0].Revents&unix.POLLIN == 0 {
			// Every process of the command has exited.
			<-s.stop
			return nil
		}
		var req seccompNotif
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), ioctlNotifRecv, uintptr(unsafe.Pointer(&req))); errno != 0 {
			if errno == unix.EINTR || errno == unix.ENOENT {
				continue // the stopped process died before we read it
			}
			return fmt.Errorf("receiving a stopped call: %w", errno)
		}
		var herr error
		if paths, barrier := s.covered(&req); len(paths) > 0 {
			herr = s.onPaths(paths, barrier)
			if barrier {
				lastSync = time.Now()
			}
		}
		resp := seccompNotifResp{ID: req.ID, Flags: notifFlagContinue}
		if herr != nil {
			// The barrier failed (the disk is gone, the log cannot be
			// written): refuse the change rather than let it run ahead of
			// bytes that may not be durable. swamp sees an I/O error.
			resp = seccompNotifResp{ID: req.ID, Error: -int32(unix.EIO)}
		}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), ioctlNotifSend, uintptr(unsafe.Pointer(&resp))); errno != 0 && errno != unix.ENOENT {
			return fmt.Errorf("answering a stopped call: %w", errno)
		}
	}
}

// covered returns the paths of a stopped call that lie under a root, and
// whether the call is a barrier.
func (s *supervisor) covered(req *seccompNotif) ([]string, bool) {
	c := stopped[runtime.GOARCH].calls[uint32(req.Data.Nr)]
	var out []string
	for _, a := range c.args {
		p := s.resolve(int(req.PID), req.Data.Args, a)
		if p != "" && underAny(p, s.roots) {
			out = append(out, p)
		}
	}
	return out, c.barrier
}

func (s *supervisor) resolve(pid int, args [6]uint64, a pathArg) string {
	proc := "/proc/" + strconv.Itoa(pid)
	if a.fd >= 0 {
		p, err := os.Readlink(proc + "/fd/" + strconv.Itoa(int(int32(args[a.fd]))))
		if err != nil || !filepath.IsAbs(p) {
			return ""
		}
		return p
	}
	name, err := readString(proc+"/mem", uintptr(args[a.path]))
	if err != nil || name == "" {
		return ""
	}
	if filepath.IsAbs(name) {
		return filepath.Clean(name)
	}
	base := proc + "/cwd"
	if a.dirfd >= 0 && int32(args[a.dirfd]) != atFDCWD {
		base = proc + "/fd/" + strconv.Itoa(int(int32(args[a.dirfd])))
	}
	dir, err := os.Readlink(base)
	if err != nil {
		return ""
	}
	return filepath.Join(dir, name)
}

// readString reads a NUL-terminated string at addr of a stopped process,
// a page at a time (a read across into an unmapped page fails).
func readString(mem string, addr uintptr) (string, error) {
	f, err := os.Open(mem)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var sb strings.Builder
	page := uintptr(os.Getpagesize())
	for sb.Len() < unix.PathMax {
		n := page - addr%page
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, int64(addr))
		if got == 0 && err != nil {
			return "", err
		}
		if i := indexNUL(buf[:got]); i >= 0 {
			sb.Write(buf[:i])
			return sb.String(), nil
		}
		sb.Write(buf[:got])
		addr += uintptr(got)
	}
	return "", syscall.ENAMETOOLONG
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// syncFSes syncs the file systems of fds (one per file system).
func syncFSes(fds []*os.File) error {
	var first error
	for _, f := range fds {
		if err := unix.Syncfs(int(f.Fd())); err != nil && first == nil {
			first = fmt.Errorf("syncfs %s: %w", f.Name(), err)
		}
	}
	return first
}

// fsKey identifies the file system holding f.
func fsKey(f *os.File) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return st.Dev, nil
}
