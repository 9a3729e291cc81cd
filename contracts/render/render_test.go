package render_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
)

func TestNegotiate(t *testing.T) {
	cases := []struct {
		accept, want string
		ok           bool
	}{
		{"", render.JSONType, true},
		{"*/*", render.JSONType, true},
		{"application/json", render.JSONType, true},
		{"application/svc+json; version=1", contracts.MediaType, true},
		{"application/svc+json;version=1", contracts.MediaType, true},
		{"application/svc+json", contracts.MediaType, true},
		{"application/json, application/svc+json; version=1", contracts.MediaType, true},
		{"application/svc+json; version=2", "", false},
		{"application/svc+json; version=2, application/svc+json; version=3", "", false},
		{"application/svc+json; version=2, application/json", render.JSONType, true},
		{"application/svc+json; version=1; q=0, application/json", render.JSONType, true},
		{"text/html", render.JSONType, true},
		{"garbage;;", render.JSONType, true},
	}
	for _, tc := range cases {
		got, ok := render.Negotiate(tc.accept)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Negotiate(%q) = %q, %v; want %q, %v", tc.accept, got, ok, tc.want, tc.ok)
		}
	}
}

// Writing a problem never changes the value it was given, so modules may share problem values.
func TestProblemDoesNotMutate(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	shared := problem.New(problem.NotFound, "gone")
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	render.SetRequestID(c, "r-1")
	render.Problem(c, shared)
	if shared.RequestID != "" {
		t.Fatalf("shared problem mutated: %+v", shared)
	}
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"request_id":"r-1"`) || w.Header().Get("Content-Type") != problem.ContentType {
		t.Fatalf("%d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}

// Error writes a problem for a *problem.Problem, for an error that knows its problem (a schema
// refusal: 422 with its pointers) even when wrapped, and a 500 that leaks nothing for anything else.
func TestErrorClassifies(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	var refusal error
	if err := schema.Published().Decode("conformance-request", []byte(`{"echo":1}`), &struct {
		Echo string `json:"echo"`
	}{}); err != nil {
		refusal = fmt.Errorf("decode: %w", err)
	}
	cases := []struct {
		err    error
		status int
		want   string
	}{
		{problem.New(problem.NotFound, "gone"), 404, `"code":"not_found"`},
		{refusal, 422, `"pointer":"/echo"`},
		{errors.New("secret database detail"), 500, `"code":"internal_error"`},
		{fmt.Errorf("record charge: %w", sqlStateError("57P01")), 503, `"code":"not_ready"`},
		{fmt.Errorf("read: %w", sqlStateError("08006")), 503, `"code":"not_ready"`},
		{fmt.Errorf("insert: %w", sqlStateError("23505")), 500, `"code":"internal_error"`},
		{fmt.Errorf("query: %w", driver.ErrBadConn), 503, `"code":"not_ready"`},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), 503, `"code":"not_ready"`},
		{fmt.Errorf("parse: %w", io.ErrUnexpectedEOF), 500, `"code":"internal_error"`}, // a bug, unless the driver says the connection broke
		{fmt.Errorf("commit: %w", sql.ErrConnDone), 503, `"code":"not_ready"`},
		{fmt.Errorf("query: %w", transportError{}), 503, `"code":"not_ready"`},
		{fmt.Errorf("debit: %w", sqlStateError("57014")), 503, `"code":"not_ready"`},
		{fmt.Errorf("lock: %w", sqlStateError("55P03")), 503, `"code":"not_ready"`},
		{fmt.Errorf("write: %w", sqlStateError("40P01")), 503, `"code":"not_ready"`},
		{fmt.Errorf("write: %w", sqlStateError("40001")), 503, `"code":"not_ready"`},
		{fmt.Errorf("write: %w", sqliteError(5)), 503, `"code":"not_ready"`},
		{fmt.Errorf("write: %w", sqliteError(517)), 503, `"code":"not_ready"`},      // SQLITE_BUSY_SNAPSHOT
		{fmt.Errorf("write: %w", sqliteError(19)), 500, `"code":"internal_error"`},  // SQLITE_CONSTRAINT
		{fmt.Errorf("query: %w", context.Canceled), 500, `"code":"internal_error"`}, // not the request's own
		// A write whose commit is unknown is not told that nothing was changed.
		{fmt.Errorf("write step 3: %w", fmt.Errorf("%w: %w", port.ErrMaybeCommitted, context.DeadlineExceeded)), 503, `it may have been recorded`},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), 503, `nothing was changed`},
	}
	for _, tc := range cases {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest("GET", "/", nil)
		render.Error(c, tc.err)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) || strings.Contains(w.Body.String(), "secret") {
			t.Errorf("%v: %d %s", tc.err, w.Code, w.Body)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%v: no nosniff", tc.err)
		}
		if got, want := render.ProblemCode(c), strings.TrimSuffix(strings.TrimPrefix(tc.want, `"code":"`), `"`); strings.HasPrefix(tc.want, `"code"`) && got != want {
			t.Errorf("%v: ProblemCode %q, want %q", tc.err, got, want)
		}
	}
}

// A request whose own client went away is answered 499 with no body, and is no error of the service.
func TestErrorClientGone(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	ctx, cancel := context.WithCancel(context.Background())
	c.Request = httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	cancel()
	render.Error(c, fmt.Errorf("query: %w", context.Canceled))
	if w.Code != render.StatusClientClosedRequest || w.Body.Len() != 0 || len(c.Errors) != 0 {
		t.Fatalf("%d %q, errors %v", w.Code, w.Body, c.Errors)
	}
}

// Raw writes bytes as they are, in the negotiated media type.
func TestRaw(t *testing.T) {
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	render.SetMediaType(c, contracts.MediaType)
	render.Raw(c, 201, []byte("{\"a\":\"<b>\"}\n"))
	if w.Code != 201 || w.Body.String() != "{\"a\":\"<b>\"}\n" || w.Header().Get("Content-Type") != contracts.MediaType {
		t.Fatalf("%d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}

// sqlStateError is an error with a SQLSTATE, as the PostgreSQL driver's errors have.
type sqlStateError string

func (e sqlStateError) Error() string    { return "database error " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

// sqliteError is an error with a SQLite result code, as the SQLite driver's errors have.
type sqliteError int

func (e sqliteError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e sqliteError) Code() int     { return int(e) }

// transportError is a connection-level error of the PostgreSQL driver, which says whether a retry is
// safe.
type transportError struct{}

func (transportError) Error() string     { return "failed to receive message: connection reset" }
func (transportError) SafeToRetry() bool { return false }
