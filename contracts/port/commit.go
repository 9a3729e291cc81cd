package port

import (
	"context"
	"sync"
)

// commitHooks are the functions waiting for the request's write to commit.
type commitHooks struct {
	mu  sync.Mutex
	fns []func()
}

type commitKey struct{}

// WithCommitHooks returns ctx carrying an empty list of commit hooks (OnCommit). The host gives every
// signed write one; a test that serves writes without the host gives its context one.
func WithCommitHooks(ctx context.Context) context.Context {
	return context.WithValue(ctx, commitKey{}, &commitHooks{})
}

// OnCommit runs fn once the write being served commits: Write (or database.Write, for a planned write)
// runs the hooks registered during its transaction after the commit, and drops them if the transaction rolls back. It is how something
// that happens inside a write's transaction (a charge) is counted only when the write committed. fn
// runs on the request's goroutine and must be quick (a counter's increment). Without hooks in ctx (no
// WithCommitHooks) there is no write to wait for, and fn runs at once.
func OnCommit(ctx context.Context, fn func()) {
	h, ok := ctx.Value(commitKey{}).(*commitHooks)
	if !ok {
		fn()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fns = append(h.fns, fn)
}

// EndWrite runs, once, the hooks registered so far (commit true) or drops them: a write helper (Write,
// database.Write) calls it when the write it ran has committed or rolled back.
func EndWrite(ctx context.Context, commit bool) {
	h, ok := ctx.Value(commitKey{}).(*commitHooks)
	if !ok {
		return
	}
	h.mu.Lock()
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	if commit {
		for _, fn := range fns {
			fn()
		}
	}
}
