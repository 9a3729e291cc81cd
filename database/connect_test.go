package database

import "testing"

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
