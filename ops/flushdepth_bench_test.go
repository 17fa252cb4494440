package ops_test

import (
	"io/fs"
	"sort"
	"sync"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops"
)

// flushLog records when each flush of a run started and ended: fsyncs of
// files and directories issued through fsx (timingFS), and the journal
// and catalog commits and background directory flushes the executor
// reports (ops.SetFlushObserver), with how many flushes each is (a bbolt
// commit is 2 fdatasyncs one after the other).
type flushLog struct {
	mu  sync.Mutex
	all []flushSpan
}

type flushSpan struct {
	n          int
	group      bool // reported by the executor: one level, whatever it holds
	start, end time.Time
}

func (l *flushLog) add(n int, group bool, start, end time.Time) {
	l.mu.Lock()
	l.all = append(l.all, flushSpan{n, group, start, end})
	l.mu.Unlock()
}

// take returns the spans recorded so far and forgets them.
func (l *flushLog) take() []flushSpan {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.all
	l.all = nil
	return s
}

// serialDepth is the longest chain of flushes each of which started only
// after the one before it had ended: the flushes a run waited for one
// after another (concurrent ones count once).
//
// The fsyncs of a group the executor issued together (the staged content,
// a directory flush) are one level: they have no order among themselves,
// even when the disk happens to serve them one after another.
func serialDepth(all []flushSpan) int {
	var spans []flushSpan
	for _, s := range all {
		inGroup := false
		for _, g := range all {
			if g.group && !s.group && !s.start.Before(g.start) && !s.end.After(g.end) {
				inGroup = true
				break
			}
		}
		if !inGroup {
			spans = append(spans, s)
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].start.Before(spans[b].start) })
	best := make([]int, len(spans))
	depth := 0
	for i, s := range spans {
		best[i] = s.n
		for j := 0; j < i; j++ {
			if !spans[j].end.After(s.start) && best[j]+s.n > best[i] {
				best[i] = best[j] + s.n
			}
		}
		depth = max(depth, best[i])
	}
	return depth
}

// observeFlushes installs the executor's observer for the benchmark.
func (l *flushLog) observeFlushes() func() {
	return ops.SetFlushObserver(func(_ string, n int, start, end time.Time) { l.add(n, true, start, end) })
}

// timingFS is the real disk (concurrent, as fsx.Real) timing every fsync.
type timingFS struct {
	fsx.OS
	log *flushLog
}

func (t timingFS) Create(name string, perm fs.FileMode) (fsx.File, error) {
	f, err := t.OS.Create(name, perm)
	if err != nil {
		return nil, err
	}
	return timedFile{f, t.log}, nil
}

func (t timingFS) OpenAppend(name string) (fsx.File, error) {
	f, err := t.OS.OpenAppend(name)
	if err != nil {
		return nil, err
	}
	return timedFile{f, t.log}, nil
}

func (t timingFS) SyncDir(name string) error {
	start := time.Now()
	err := t.OS.SyncDir(name)
	t.log.add(1, false, start, time.Now())
	return err
}

type timedFile struct {
	fsx.File
	log *flushLog
}

func (f timedFile) Sync() error {
	start := time.Now()
	err := f.File.Sync()
	f.log.add(1, false, start, time.Now())
	return err
}

// median of a sorted copy.
func median(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int(nil), xs...)
	sort.Ints(s)
	return float64(s[len(s)/2])
}
