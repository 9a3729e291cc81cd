package database

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/svcforum/svc/contracts/write"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
)

// attempts bounds how often Write plans a write again when a failed step's explanation finds nothing
// wrong any more (what it checked changed between the plan's run and the explanation).
const attempts = 3

// ErrPlanUnsettled is returned when a planned write failed a step every time it ran while the step's
// explanation found nothing wrong each time.
var ErrPlanUnsettled = errors.New("the write's conditions kept changing while it ran")

// Write runs a planned write: build plans it (write.Plan) and returns the 2xx status and the response
// value; Write marshals the value (port.Marshal), adds the completion of the request's idempotency
// claim (when it holds one), and runs the plan (RunPlan). Every signed write runs through it: its
// statements are known before any runs, so on PostgreSQL the whole write is one round trip and one
// commit. The answer's bytes, with every Late resolved, are those the claim stored. An admission the
// guard left to the write (port.Admission) is the plan's first step, so that the whole signed request
// commits once.
func Write(ctx context.Context, db *gorm.DB, build func(p *write.Plan) (status int, v any, err error)) (int, []byte, error) {
	claim, hasClaim := port.ClaimFrom(ctx)
	adm, hasAdmission := port.AdmissionFrom(ctx)
	tries := attempts
	for try := 0; try < tries; try++ {
		var (
			status    int
			body      []byte
			admitting bool
		)
		p, failed, err := runPlanned(ctx, db, func(p *write.Plan) error {
			s, v, err := build(p)
			if err != nil {
				return err
			}
			if body, err = port.Answer(s, v); err != nil {
				return err
			}
			status = s
			if hasClaim {
				claim.CompleteIn(p, status, body)
			}
			admitting = hasAdmission && adm.AdmitIn(p)
			return nil
		})
		if err != nil {
			return 0, nil, err
		}
		if failed < 0 {
			if hasClaim {
				claim.Settled()
			}
			p.Committed()
			return status, p.Resolve(body), nil
		}
		if admitting && failed == 0 {
			tries++ // the admission, explained by running it alone, is not the write's own try
		}
		if admitting && failed > 0 {
			// The admission held in this run but was rolled back with it: it is recorded now, and
			// its refusals (a concurrent replay) come before the step's.
			if err := adm.Admit(ctx); err != nil {
				return 0, nil, err
			}
		}
		explain := p.Steps()[failed].Explain
		if explain == nil {
			return 0, nil, fmt.Errorf("write step %d found other than it expected, and has no explanation", failed)
		}
		if err := explain(ctx, db.WithContext(ctx)); err != nil {
			return 0, nil, err
		}
	}
	return 0, nil, ErrPlanUnsettled
}

// runPlanned plans a write with prepare and runs the plan (RunPlan), returning it with the index of
// the step that failed (-1: committed); prepare's error is returned as it is, with nothing written. On
// SQLite the plan is made inside the transaction, in the writer's turn: the ids and times it makes
// then sort in commit order, as they do for every other write there (catch-up pages by them).
func runPlanned(ctx context.Context, db *gorm.DB, prepare func(p *write.Plan) error) (*write.Plan, int, error) {
	if Dialect(db) == Postgres {
		p := write.New(db.WithContext(ctx))
		if err := prepare(p); err != nil {
			return p, 0, err
		}
		failed, err := runBatch(ctx, db, p.Steps())
		return p, failed, err
	}
	var p *write.Plan
	failed, err := runInTransaction(ctx, db, func(tx *gorm.DB) ([]write.Step, error) {
		p = write.New(tx)
		if err := prepare(p); err != nil {
			return nil, err
		}
		return p.Steps(), nil
	})
	return p, failed, err
}

// RunPlan runs p's steps in order as one transaction and returns the index of the first step that
// found other than it expected (everything is rolled back then), or -1 when all committed. On
// PostgreSQL the steps go as one pgx batch: the server runs them in one implicit transaction, and a
// step's expectation is checked by the statement itself, so a failed one aborts the rest there,
// without a round trip per statement.
func RunPlan(ctx context.Context, db *gorm.DB, p *write.Plan) (failed int, err error) {
	if Dialect(db) == Postgres {
		return runBatch(ctx, db, p.Steps())
	}
	return runInTransaction(ctx, db, func(*gorm.DB) ([]write.Step, error) { return p.Steps(), nil })
}

// failedStep is how a transaction ends at a step that found other than it expected.
type failedStep int

func (f failedStep) Error() string { return "plan step " + strconv.Itoa(int(f)) + " failed" }

// runInTransaction runs, in one transaction, the steps that steps returns on it; an error of steps
// ends the transaction and is returned as it is.
// On SQLite, embedded, a commit that fails has not happened: no error here is port.ErrMaybeCommitted
// (unless a step's own error says so).
func runInTransaction(ctx context.Context, db *gorm.DB, steps func(tx *gorm.DB) ([]write.Step, error)) (int, error) {
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		planned, err := steps(tx)
		if err != nil {
			return err // rolled back, and returned as it is (gorm's Transaction)
		}
		for i, s := range planned {
			ok, err := runStep(tx, s)
			if err != nil {
				return fmt.Errorf("write step %d: %w", i, err)
			}
			if !ok {
				return failedStep(i)
			}
		}
		return nil
	})
	var f failedStep
	if errors.As(err, &f) {
		return int(f), nil
	}
	if err != nil {
		return 0, err
	}
	return -1, nil
}

// runStep runs one step on tx and reports whether it found what it expected.
func runStep(tx *gorm.DB, s write.Step) (bool, error) {
	if s.Run != nil {
		return s.Run(tx)
	}
	if s.Checked {
		return false, errors.New("a self-checked step runs only on PostgreSQL")
	}
	if s.Cond {
		var ok bool
		if err := tx.Raw(s.SQL, s.Vars...).Row().Scan(&ok); err != nil {
			return false, err
		}
		return ok, nil
	}
	if s.Scan == nil {
		res := tx.Exec(s.SQL, s.Vars...)
		if res.Error != nil {
			return false, res.Error
		}
		return s.Rows == write.AnyRows || res.RowsAffected == s.Rows, nil
	}
	rows, err := tx.Raw(s.SQL, s.Vars...).Rows()
	if err != nil {
		return false, err
	}
	defer rows.Close()
	n := int64(0)
	for rows.Next() {
		if n == 0 {
			if err := rows.Scan(s.Scan...); err != nil {
				return false, err
			}
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	return s.Rows == write.AnyRows || n == s.Rows, nil
}

// tracerName names the database package's spans.
const tracerName = "github.com/svcforum/svc/database"

// divisionByZero is the SQLSTATE of a step whose expectation failed: checkedSQL makes the statement
// divide by zero then, which PostgreSQL cannot fold away (it depends on what the statement found).
const divisionByZero = "22012"

// checkedSQL is a step's statement made to fail when it finds other than the step expects, and what
// it returns then: the step's columns (if it scans) and the check's.
func checkedSQL(s write.Step) string {
	fail := func(cond string) string { return "1/(CASE WHEN " + cond + " THEN 1 ELSE 0 END)" }
	switch {
	case s.Checked:
		return s.SQL
	case s.Cond:
		return "SELECT " + fail("("+s.SQL+")")
	case s.Rows == write.AnyRows:
		return s.SQL
	case s.Scan == nil:
		sql := s.SQL
		if !strings.Contains(strings.ToUpper(sql), " RETURNING ") {
			sql += " RETURNING 1"
		}
		return "WITH s AS (" + sql + ") SELECT " + fail("count(*) = "+strconv.FormatInt(s.Rows, 10)) + " FROM s"
	default:
		return "WITH s AS (" + s.SQL + ") SELECT s.*, " + fail("(SELECT count(*) FROM s) = "+strconv.FormatInt(s.Rows, 10)) +
			" FROM (SELECT 1) AS one LEFT JOIN s ON true"
	}
}

func runBatch(ctx context.Context, db *gorm.DB, steps []write.Step) (failed int, err error) {
	// The batch bypasses gorm, whose plugin traces statements: it gets a span of its own, under the
	// request's (when tracing is on; otherwise the provider is a no-op).
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerName).Start(ctx, "database.write",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system.name", "postgresql"), attribute.Int("svc.write.steps", len(steps))))
	defer func() {
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		case failed >= 0:
			span.SetAttributes(attribute.Int("svc.write.failed_step", failed))
		}
		span.End()
	}()
	ctx = bounded(ctx)
	if _, ok := ctx.Deadline(); !ok && db.Config.DefaultTransactionTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, db.Config.DefaultTransactionTimeout)
		defer cancel()
	}
	sqlDB, err := db.DB()
	if err != nil {
		return 0, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("run write: %w", err)
	}
	defer conn.Close()
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("run write: %w", err) // the client left before anything was sent
	}
	// From here the batch runs to its end whether or not the client is still there (its deadline
	// still holds): cut short, the connection would be closed under a transaction the server still
	// runs, which holds the nonce's, the key's and the windows' rows until it notices, and the write's
	// outcome would be unknown, its key held until its lease ended.
	sent, cancel := detached(ctx)
	defer cancel()
	failed = -1
	err = conn.Raw(func(driverConn any) (err error) {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("run write: the PostgreSQL driver connection is a %T", driverConn)
		}
		defer func() {
			// A connection whose transaction state is not known to be idle never goes back to the
			// pool: database/sql closes it, and the server rolls back what it left.
			if pc := c.Conn().PgConn(); pc.IsClosed() || pc.TxStatus() != 'I' {
				err = errors.Join(err, driver.ErrBadConn)
			}
		}()
		b := &pgx.Batch{}
		for _, s := range steps {
			b.Queue(checkedSQL(s), s.Vars...)
		}
		br := c.Conn().SendBatch(sent, b)
		for i, s := range steps {
			if err := readStep(br, s); err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) && pe.Code == divisionByZero {
					failed = i
					_ = br.Close()
					return nil
				}
				_ = br.Close()
				return fmt.Errorf("write step %d: %w", i, uncertain(err))
			}
		}
		// Every statement ran: this is the implicit transaction's commit.
		if err := br.Close(); err != nil {
			return fmt.Errorf("commit the write: %w", uncertain(err))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return failed, nil
}

// uncertain marks err, from a batch already sent, as port.ErrMaybeCommitted unless the server answered
// it (a *pgconn.PgError: the implicit transaction rolled back) or nothing was sent (SafeToRetry): a
// connection lost, or a context ended, while the server ran the batch leaves its commit unknown.
func uncertain(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) || pgconn.SafeToRetry(err) {
		return err
	}
	return fmt.Errorf("%w: %w", port.ErrMaybeCommitted, err)
}

// readStep reads a step's result from the batch.
func readStep(br pgx.BatchResults, s write.Step) error {
	switch {
	case s.Checked:
		var check int
		return br.QueryRow().Scan(append(append([]any{}, s.Scan...), &check)...)
	case s.Cond || (s.Rows != write.AnyRows && s.Scan == nil):
		var one int
		return br.QueryRow().Scan(&one)
	case s.Scan == nil:
		_, err := br.Exec()
		return err
	case s.Rows == write.AnyRows:
		err := br.QueryRow().Scan(s.Scan...)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	default:
		var check int
		return br.QueryRow().Scan(append(append([]any{}, s.Scan...), &check)...)
	}
}
