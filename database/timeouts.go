package database

import (
	"net/url"
	"strconv"
	"time"
)

// connectTimeout bounds a new connection to PostgreSQL unless the URL sets connect_timeout: a database
// whose address stopped answering (a stopped container, a dead host) must fail a request quickly
// (503) rather than hang it until the operating system gives up.
const connectTimeout = "5"

func withConnectTimeout(dsn string) string {
	return withDefaults(dsn, map[string]string{"connect_timeout": connectTimeout})
}

// serverTimeouts are the PostgreSQL settings that make the server itself give up on a statement, a
// lock wait, or a transaction left idle, after the pool's timeout: the client's deadline ends a call,
// these end the work it left on the server (a heavy search, a lock held by a client that went away).
var serverTimeouts = []string{"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"}

// withServerTimeouts sets each of serverTimeouts to d (in milliseconds) as a run-time parameter of the
// connection, unless the URL sets it.
func withServerTimeouts(dsn string, d time.Duration) string {
	ms := strconv.FormatInt(d.Milliseconds(), 10)
	set := map[string]string{}
	for _, name := range serverTimeouts {
		set[name] = ms
	}
	return withDefaults(dsn, set)
}

// withDefaults adds the query parameters of set that the URL does not already name.
func withDefaults(dsn string, set map[string]string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	q := u.Query()
	changed := false
	for name, value := range set {
		if !q.Has(name) {
			q.Set(name, value)
			changed = true
		}
	}
	if !changed {
		return dsn
	}
	u.RawQuery = q.Encode()
	return u.String()
}
