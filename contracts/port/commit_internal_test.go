package port

import (
	"context"
	"testing"
)

func TestCommitHooksRunOnlyOnCommit(t *testing.T) {
	ran := 0
	ctx := WithCommitHooks(context.Background())
	OnCommit(ctx, func() { ran++ })
	EndWrite(ctx, false)
	if ran != 0 {
		t.Fatalf("a hook of a rolled-back write ran (%d)", ran)
	}
	EndWrite(ctx, true) // the dropped hook is gone
	if ran != 0 {
		t.Fatalf("a dropped hook ran at a later commit (%d)", ran)
	}
	OnCommit(ctx, func() { ran++ })
	OnCommit(ctx, func() { ran += 10 })
	if ran != 0 {
		t.Fatal("a hook ran before the commit")
	}
	EndWrite(ctx, true)
	EndWrite(ctx, true) // each hook runs once
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
	EndWrite(context.Background(), true) // nothing to run, no panic
}
