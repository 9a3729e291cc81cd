package database

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
)

// errAdmissionRefused ends a WriteTx transaction whose first statement, the admission, did not admit.
var errAdmissionRefused = errors.New("the admission did not admit the write")

// WriteTx is port.Write for a write that needs a transaction of its own rather than a plan (a job
// inserted with it, a statement that depends on what the one before returned): an admission the guard
// left to the write (port.Admission) is the transaction's first statement, so that the signed request
// commits once. The admission holds the agent's rate-limit rows until the commit, so fn is kept short.
// Without an admission, WriteTx is port.Write.
//
// When the admission does not admit, it runs alone and answers, or, admitted after all, the write
// runs as port.Write runs it; when fn refuses (or fails) after the admission, the transaction rolls back
// and the admission runs alone first (the nonce is used, and its own refusals come first), then fn's
// refusal is answered. Like port.Write, only a 2xx is stored.
func WriteTx(ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) (status int, v any, err error)) (int, []byte, error) {
	adm, hasAdmission := port.AdmissionFrom(ctx)
	if !hasAdmission {
		return port.Write(ctx, db, fn)
	}
	p := port.NewPlan(db.WithContext(ctx))
	if !adm.AdmitIn(p) {
		return port.Write(ctx, db, fn) // it ran already, alone: port.Write finds it decided
	}
	claim, hasClaim := port.ClaimFrom(ctx)
	var (
		status     int
		body       []byte
		fnFailed   bool // fn refused or failed after the admission: the transaction rolled back
		committing bool // everything succeeded: an error now is the commit's
	)
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ok, err := runAdmission(tx, p.Steps()[0])
		if err != nil {
			return fmt.Errorf("admission: %w", err)
		}
		if !ok {
			return errAdmissionRefused
		}
		var v any
		status, v, err = fn(tx)
		if err == nil {
			body, err = port.Answer(status, v)
		}
		if err != nil {
			fnFailed = true
			return err
		}
		if hasClaim {
			if err := claim.Complete(tx, status, body); err != nil {
				return fmt.Errorf("store idempotent response: %w", err)
			}
		}
		committing = true
		return nil
	})
	if err == nil {
		if hasClaim {
			claim.Settled()
		}
		p.Committed()
		port.EndWrite(ctx, true)
		return status, body, nil
	}
	port.EndWrite(ctx, false)
	switch {
	case errors.Is(err, errAdmissionRefused):
		// Alone, the admission says why; admitted after all (what it found changed meanwhile), the
		// write runs as port.Write runs it.
		if err := adm.Admit(ctx); err != nil {
			return 0, nil, err
		}
		return port.Write(ctx, db, fn)
	case fnFailed:
		// Rolled back with the write, the admission is recorded now; its refusals come first.
		if err := adm.Admit(ctx); err != nil {
			return 0, nil, err
		}
		return 0, nil, err
	}
	// The admission's statement, the stored response or the commit failed; the guard settles the
	// admission (Guard.afterward), which finds its own nonce if the commit happened after all.
	if committing {
		err = fmt.Errorf("%w: %w", port.ErrMaybeCommitted, err)
	}
	return 0, nil, err
}

// runAdmission runs the admission's step, the first of its plan, on tx and reports whether it
// admitted: on PostgreSQL its statement checks itself (port.Step.Checked) and divides by zero when it
// does not; on SQLite its Go step runs the statements.
func runAdmission(tx *gorm.DB, s port.Step) (bool, error) {
	if s.Run != nil {
		return s.Run(tx)
	}
	if !s.Checked {
		return false, errors.New("an admission's step on PostgreSQL checks itself")
	}
	// The statement is written with positional parameters for pgx: it goes to the transaction's
	// connection as it is, past gorm's placeholders.
	var check int
	err := tx.Statement.ConnPool.QueryRowContext(tx.Statement.Context, s.SQL, s.Vars...).Scan(append(append([]any{}, s.Scan...), &check)...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == divisionByZero {
		return false, nil
	}
	return err == nil, err
}
