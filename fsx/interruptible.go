package fsx

import (
	"context"
	"io"
)

// InterruptibleReader reads r so that a read blocked on a silent source (a
// FIFO whose writer says nothing, a terminal, a pipe from a stalled
// process) returns as soon as ctx ends: Ctrl-C must stop a write that waits
// for input, and roll it back. Each read runs in a goroutine of its own
// into a private buffer; once ctx has ended, every read returns ctx's
// error and a read still blocked is abandoned (it ends with the process,
// or when the source delivers or closes).
//
// Regular files never block, so callers pass them as they are (they stay
// seekable and hashable in advance).
func InterruptibleReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r
	}
	return &interruptible{ctx: ctx, r: r}
}

type readResult struct {
	n   int
	err error
}

type interruptible struct {
	ctx     context.Context
	r       io.Reader
	buf     []byte
	pending chan readResult // a read in flight into buf
	left    []byte          // bytes read and not yet handed out
	err     error           // the source's error, after left is drained
}

func (c *interruptible) Read(b []byte) (int, error) {
	if len(c.left) > 0 {
		n := copy(b, c.left)
		c.left = c.left[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	if c.pending == nil {
		if len(c.buf) < len(b) {
			c.buf = make([]byte, len(b))
		}
		buf, ch := c.buf[:len(b)], make(chan readResult, 1)
		go func() {
			n, err := c.r.Read(buf)
			ch <- readResult{n, err}
		}()
		c.pending = ch
	}
	select {
	case res := <-c.pending:
		c.pending = nil
		n := copy(b, c.buf[:res.n])
		c.left = c.buf[n:res.n]
		if res.err != nil {
			if len(c.left) == 0 {
				return n, res.err
			}
			c.err = res.err
		}
		return n, nil
	case <-c.ctx.Done():
		// The goroutine may still write into c.buf: never reuse it.
		c.buf, c.err = nil, context.Cause(c.ctx)
		return 0, c.err
	}
}
