package database

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A PostgreSQL URL without connect_timeout gets one, so a database that stopped answering fails a
// request instead of hanging it; one the operator set is kept.
func TestConnectTimeout(t *testing.T) {
	cases := map[string]string{
		"postgres://u:p@db:5432/svc?sslmode=disable":                    "postgres://u:p@db:5432/svc?connect_timeout=5&sslmode=disable",
		"postgres://u:p@db:5432/svc":                                    "postgres://u:p@db:5432/svc?connect_timeout=5",
		"postgres://u:p@db:5432/svc?connect_timeout=30&sslmode=require": "postgres://u:p@db:5432/svc?connect_timeout=30&sslmode=require",
	}
	for in, want := range cases {
		if got := withConnectTimeout(in); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

// A PostgreSQL URL gets the server timeouts unless it names them.
func TestWithServerTimeouts(t *testing.T) {
	got := withServerTimeouts("postgres://u:p@db:5432/svc?lock_timeout=100&sslmode=disable", 2*time.Second)
	want := "postgres://u:p@db:5432/svc?idle_in_transaction_session_timeout=2000&lock_timeout=100&sslmode=disable&statement_timeout=2000"
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// A statement faster than the threshold costs no rendering: gorm's render function is not called.
func TestSlowLogRendersOnlySlowStatements(t *testing.T) {
	var out strings.Builder
	l := newSlowLog(slog.New(slog.NewJSONHandler(&out, nil)), time.Hour)
	rendered := false
	l.Trace(context.Background(), time.Now(), func() (string, int64) { rendered = true; return "SELECT 1", 1 }, nil)
	if rendered || out.Len() != 0 {
		t.Fatalf("a fast statement was rendered (%v) or logged (%q)", rendered, out.String())
	}
	l.Trace(context.Background(), time.Now().Add(-2*time.Hour), func() (string, int64) { return "SELECT 'secret'", 1 }, nil)
	if !strings.Contains(out.String(), "slow statement") || strings.Contains(out.String(), "secret") {
		t.Fatalf("slow statement log: %q", out.String())
	}
}

// The pool keeps as many idle connections as it may open, unless told otherwise.
func TestIdleConnectionsDefaultToOpenLimit(t *testing.T) {
	if o := (Options{MaxOpenConns: 12}).withDefaults(); o.MaxIdleConns != 12 {
		t.Fatalf("idle %d, want 12", o.MaxIdleConns)
	}
	if o := (Options{}).withDefaults(); o.MaxIdleConns != o.MaxOpenConns {
		t.Fatalf("idle %d, open %d", o.MaxIdleConns, o.MaxOpenConns)
	}
	if o := (Options{MaxOpenConns: 12, MaxIdleConns: 3}).withDefaults(); o.MaxIdleConns != 3 {
		t.Fatalf("idle %d, want the 3 set", o.MaxIdleConns)
	}
}
