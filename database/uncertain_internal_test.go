package database

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svcforum/svc/contracts/port"
)

// A batch's error leaves its commit unknown unless the server answered it or nothing was sent.
func TestUncertain(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"the server's refusal":           {&pgconn.PgError{Code: "23503"}, false},
		"the server's refusal, wrapped":  {errors.Join(errors.New("step"), &pgconn.PgError{Code: "40001"}), false},
		"the connection lost":            {io.ErrUnexpectedEOF, true},
		"the context ended while it ran": {context.DeadlineExceeded, true},
		"nothing sent":                   {notSent{}, false},
	} {
		if got := errors.Is(uncertain(tc.err), port.ErrMaybeCommitted); got != tc.want {
			t.Errorf("%s: maybe committed %v, want %v", name, got, tc.want)
		}
	}
}

// notSent is an error of the driver's that says nothing was sent, as pgconn's own do.
type notSent struct{}

func (notSent) Error() string     { return "the batch was not sent" }
func (notSent) SafeToRetry() bool { return true }
