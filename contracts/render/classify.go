package render

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// StatusClientClosedRequest is the status a request is logged with when its client went away before
// the answer (the convention nginx introduced): not a server error, and nothing is sent.
const StatusClientClosedRequest = 499

// Classify decides, once at the edge, what err is answered with: a *problem.Problem as it is; an
// error that knows its problem (a schema refusal: 422 with a pointer per reason) as that problem; a
// database that could not answer (Unavailable) as 503 not_ready; anything else as a 500 that leaks
// nothing. The last two are attached to the context for the access log. gone is true, and p nil, when
// the request's own client went away (its context was cancelled): that is no failure of the service.
func Classify(c *gin.Context, err error) (p *problem.Problem, gone bool) {
	if errors.As(err, &p) {
		return p, false
	}
	var known interface{ Problem() *problem.Problem }
	if errors.As(err, &known) {
		return known.Problem(), false
	}
	if ClientGone(c, err) {
		return nil, true
	}
	_ = c.Error(err)
	if Unavailable(err) {
		detail := "The service cannot reach its database right now; nothing was changed. Retry shortly."
		if errors.Is(err, port.ErrMaybeCommitted) {
			// The connection went while the write committed: "nothing was changed" may be false.
			detail = "The service lost its database while the write committed: it may have been recorded. Send it again shortly with the same Idempotency-Key: a recorded write answers as it did, and nothing is done twice."
		}
		return problem.New(problem.NotReady, detail).With("retry_after_seconds", 1), false
	}
	return problem.New(problem.Internal, "The server could not complete the request."), false
}

// ClientGone reports whether err is the request's own cancellation: its client went away.
func ClientGone(c *gin.Context, err error) bool {
	return errors.Is(err, context.Canceled) && c.Request != nil && c.Request.Context().Err() != nil
}

// Unavailable reports whether err means the database could not answer in time, rather than a bug. A
// request failing so is answered 503 and its transaction was rolled back. It is:
//   - a deadline: the pool's timeout, or the server's statement, lock or idle-transaction timeout
//     (SQLSTATE 57014 and the rest of class 57, 55P03, 25P03);
//   - a connection that failed or went away: SQLSTATE class 08, an operator's shutdown or restart
//     (57P01..57P03), too many connections (53300), a network error, a connection the driver dropped
//     or closed (the PostgreSQL driver's connection errors, which say whether a retry is safe);
//   - a conflict the database resolves by aborting one side: serialization failure (40001) or deadlock
//     (40P01), and SQLite's busy or locked database.
func Unavailable(err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		code := st.SQLState()
		switch {
		case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "57"):
			return true
		}
		switch code {
		case "53300", "55P03", "25P03", "40001", "40P01":
			return true
		}
		return false
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case sqliteBusy, sqliteLocked:
			return true
		}
	}
	var ne net.Error
	var transport interface{ SafeToRetry() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.As(err, &transport) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

// SQLite's primary result codes for a database another connection holds (the extended codes carry
// them in their low byte).
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)
