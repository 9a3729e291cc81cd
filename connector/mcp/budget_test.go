package mcp

import (
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/sdk"
)

func i64(v int64) *int64 { return &v }

var version = &sdk.PricingVersion{PricingVersion: "2026-11", Current: true, PerAttachment: 1,
	Prices: sdk.Prices{CreateThread: 10, CreateReply: 5, Vote: 1, Tombstone: 1, ManageThreadAttachments: 2, ManageReplyAttachments: 2, MediaUpload: 3}}

func TestBudgetMath(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	charges := []profile.MCPSpend{
		{At: now.Add(-25 * time.Hour), Credits: 100, UsageEventID: "old"},
		{At: now.Add(-23 * time.Hour), Credits: 10, UsageEventID: "a"},
		{At: now.Add(-time.Hour), Credits: 5, UsageEventID: "b"},
		{At: now.Add(-time.Minute), Credits: 5, UsageEventID: "b"}, // the same charge answered twice (a replay)
	}
	if got := Spent(charges, now); got != 15 {
		t.Fatalf("spent %d, want 15", got)
	}
	if got := len(Prune(append([]profile.MCPSpend(nil), charges...), now)); got != 3 {
		t.Fatalf("pruned to %d", got)
	}

	// Defaults: the dearest price per write, no daily budget.
	def := LimitsOf(nil, version)
	if def.PerWrite != 10 || def.PerDay != nil || def.Left(1000) != nil || def.Cap(1000, nil) != 10 {
		t.Fatalf("defaults %+v", def)
	}
	if p, _ := Price(version, sdk.OpCreateReply, 2); p != 7 {
		t.Fatalf("a reply with two images costs %d", p)
	}
	if _, ok := Price(version, sdk.Operation("unknown"), 0); ok {
		t.Fatal("an unknown operation has a price")
	}

	l := LimitsOf(&profile.BudgetConfig{PerWrite: i64(8), PerDay: i64(20)}, version)
	cases := []struct {
		name         string
		price, spent int64
		model        *int64
		cap          int64
		refused      string
	}{
		{"covered", 5, 0, nil, 8, ""},
		{"the model's lower cap", 5, 0, i64(6), 6, ""},
		{"a higher model cap is not taken", 5, 0, i64(50), 8, ""},
		{"over the per-write cap", 10, 0, nil, 8, "per-write cap of 8"},
		{"the day's budget nearly spent", 5, 17, nil, 3, "3 of the daily budget of 20 credits is left"},
		{"the day's budget spent over", 1, 25, nil, 0, "0 of the daily budget"},
		{"under the model's cap", 5, 0, i64(4), 4, "max_credit_cost of 4"},
	}
	for _, c := range cases {
		if got := l.Cap(c.spent, c.model); got != c.cap {
			t.Errorf("%s: cap %d, want %d", c.name, got, c.cap)
		}
		why := l.Refusal(c.price, c.spent, c.model)
		if (c.refused == "") != (why == "") || !strings.Contains(why, c.refused) {
			t.Errorf("%s: refusal %q, want one saying %q", c.name, why, c.refused)
		}
		if why != "" && !strings.Contains(why, "nothing was sent") {
			t.Errorf("%s: %q does not say nothing was sent", c.name, why)
		}
	}
}

// An identical write within the window gets the first call's key; after it, another key; another
// write or another profile's secret, another key.
func TestIdempotencyWindow(t *testing.T) {
	first := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	a, _ := canonical(map[string]any{"thread_id": "t", "body_markdown": "hi", "references": []any{map[string]any{"b": 1, "a": 2}}})
	b, _ := canonical(map[string]any{"references": []any{map[string]any{"a": 2, "b": 1}}, "body_markdown": "hi", "thread_id": "t"})
	if string(a) != string(b) {
		t.Fatalf("canonical forms differ: %s %s", a, b)
	}
	h := writeHash("secret", "create_reply", a)
	if h != writeHash("secret", "create_reply", b) || h == writeHash("secret", "create_thread", a) || h == writeHash("other", "create_reply", a) {
		t.Fatal("the write hash does not name the tool, arguments and profile")
	}
	key := deriveKey("secret", h, first)
	if !strings.HasPrefix(key, "mcp-") || len(key) != 44 || key != deriveKey("secret", h, first) || key == deriveKey("secret", h, first.Add(time.Second)) {
		t.Fatalf("key %q", key)
	}
	writes := []profile.MCPWrite{{Hash: h, Key: key, At: first}}
	for _, c := range []struct {
		after time.Duration
		found bool
	}{{0, true}, {9*time.Minute + 59*time.Second, true}, {IdempotencyWindow, false}, {time.Hour, false}} {
		w, ok := findWrite(writes, h, first.Add(c.after))
		if ok != c.found || (ok && w.Key != key) {
			t.Errorf("%s after the first call: found %v (%q)", c.after, ok, w.Key)
		}
	}
	if _, ok := findWrite(writes, writeHash("secret", "create_reply", []byte(`{}`)), first); ok {
		t.Fatal("another write found the first one's key")
	}
	if got := pruneWrites(append([]profile.MCPWrite(nil), writes...), first.Add(IdempotencyWindow)); len(got) != 0 {
		t.Fatalf("a closed window kept: %v", got)
	}
}

// What pending writes may still cost is held against the day's budget while their window lasts;
// settled writes hold nothing.
func TestHeldCountsPendingWritesOfTheWindow(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	writes := []profile.MCPWrite{
		{Key: "a", At: now.Add(-time.Minute), MaxCreditCost: 10, Pending: true},
		{Key: "b", At: now.Add(-2 * time.Minute), MaxCreditCost: 5},
		{Key: "c", At: now.Add(-IdempotencyWindow - time.Second), MaxCreditCost: 7, Pending: true},
		{Key: "d", At: now.Add(-9 * time.Minute), MaxCreditCost: 3, Pending: true},
	}
	if got := Held(writes, now); got != 13 {
		t.Fatalf("held %d, want 13 (a and d: b is settled, c's window is over)", got)
	}
}
