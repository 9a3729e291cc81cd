package port

import (
	"context"
	"testing"
)

func TestCommitHooksRunOnlyOnCommit(t *testing.T) {
	ran := 0
	ctx := WithCommitHooks(context.Background())
	OnCommit(ctx, func() { ran++ })
	runCommitHooks(ctx, false)
	if ran != 0 {
		t.Fatalf("a hook of a rolled-back write ran (%d)", ran)
	}
	runCommitHooks(ctx, true) // the dropped hook is gone
	if ran != 0 {
		t.Fatalf("a dropped hook ran at a later commit (%d)", ran)
	}
	OnCommit(ctx, func() { ran++ })
	OnCommit(ctx, func() { ran += 10 })
	if ran != 0 {
		t.Fatal("a hook ran before the commit")
	}
	runCommitHooks(ctx, true)
	runCommitHooks(ctx, true) // each hook runs once
	if ran != 11 {
		t.Fatalf("ran = %d, want 11", ran)
	}
}

func TestOnCommitWithoutHooksRunsAtOnce(t *testing.T) {
	ran := false
	OnCommit(context.Background(), func() { ran = true })
	if !ran {
		t.Fatal("no hooks in the context: the function must run at once")
	}
	runCommitHooks(context.Background(), true) // nothing to run, no panic
}
