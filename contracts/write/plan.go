package write

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Plan is a write decided before any of it runs: its statements in order, each with what it must
// find, so that the database can be sent all of them at once (database.Write: one pgx batch on
// PostgreSQL, which is one round trip and one commit; one transaction on SQLite). A statement that
// finds other than its step expects fails the whole plan server-side, nothing of it is kept, and the
// step's Explain, run after the rollback, says why: it is the refusal the client gets.
//
// A write builds its statements with Build (gorm in dry-run mode: nothing runs), reads what it needs
// before the write through Read (data that cannot change under it, or that a step re-checks), and
// uses Late for numbers only the write itself learns (a wallet's balance after its debit).
type Plan struct {
	// Read is the database, for the reads a write makes before its statements are sent.
	Read    *gorm.DB
	dry     *gorm.DB
	steps   []Step
	lates   []late
	commits []func()
	dialect string
}

// Step is one statement of a plan.
type Step struct {
	SQL  string
	Vars []any
	// Rows is how many rows the statement must affect, or return with RETURNING; AnyRows leaves it
	// unchecked. A counted statement is an INSERT, UPDATE or DELETE (on PostgreSQL it is counted
	// through its RETURNING); a condition on what a SELECT finds is a Check. Cond makes SQL a SELECT
	// of one boolean that must be true.
	Rows int64
	Cond bool
	// Scan receives the columns of the one row the statement returns (its RETURNING), if any.
	Scan []any
	// Checked marks SQL (PostgreSQL only) as checking itself: it divides by zero when it finds other
	// than the step expects, and returns Scan's columns followed by one more (the check's). It is for a
	// statement whose data-modifying CTEs cannot be nested in the check Rows and Cond are made into.
	Checked bool
	// Run is the step where a plan runs one statement at a time (SQLite), when it is more than one
	// statement there: it runs on the plan's transaction and reports whether it found what the step
	// expects. SQL, Checked, is then its PostgreSQL form.
	Run func(tx *gorm.DB) (bool, error)
	// Explain says why the step failed, read on the database after the plan rolled back: the
	// problem to answer, or nil when nothing is wrong any more (the plan is then built and run again).
	// A step that cannot fail (an insert after the rows it depends on are locked) may leave it nil;
	// if it fails anyway, the write fails with an error.
	Explain func(ctx context.Context, db *gorm.DB) error
}

// AnyRows is a Step's Rows when the statement may touch any number of rows.
const AnyRows = -1

// New returns an empty plan on db, whose dialect ("postgres" or "sqlite") decides how the
// statements are written.
func New(db *gorm.DB) *Plan {
	// The dry session has a context of its own: building a statement is not running it, so nothing
	// that traces statements under the request's span should see it.
	dry := db.Session(&gorm.Session{DryRun: true, NewDB: true, Context: context.Background()})
	return &Plan{Read: db, dry: dry, dialect: db.Dialector.Name()}
}

// Steps returns the plan's statements in order.
func (p *Plan) Steps() []Step { return p.steps }

// Dialect is the name of the plan's database dialect: "postgres" or "sqlite".
func (p *Plan) Dialect() string { return p.dialect }

// Build returns a gorm session that builds statements without running them (each chain starts a new
// statement): pass what its methods return to Add.
func (p *Plan) Build() *gorm.DB { return p.dry }

// Add appends the statement q built (on Build) as a step expecting rows rows, explained by explain
// when it finds otherwise.
func (p *Plan) Add(q *gorm.DB, rows int64, explain func(ctx context.Context, db *gorm.DB) error, scan ...any) {
	p.steps = append(p.steps, Step{SQL: q.Statement.SQL.String(), Vars: q.Statement.Vars, Rows: rows, Scan: scan, Explain: explain})
}

// Exec appends a raw statement (placeholders "?") expecting rows rows.
func (p *Plan) Exec(rows int64, explain func(ctx context.Context, db *gorm.DB) error, sql string, vars ...any) {
	p.Add(p.Build().Exec(sql, vars...), rows, explain)
}

// Returning appends a raw statement that returns at most one row into scan, expecting rows rows.
func (p *Plan) Returning(rows int64, explain func(ctx context.Context, db *gorm.DB) error, scan []any, sql string, vars ...any) {
	p.Add(p.Build().Exec(sql, vars...), rows, explain, scan...)
}

// Append puts s after every step so far: for a step built by another module's port (a job's
// insertion, port.Jobs.InsertIn) that needs a Run of its own on SQLite.
func (p *Plan) Append(s Step) { p.steps = append(p.steps, s) }

// Prepend puts s before every step of the plan: for a step that must come first whatever the write
// planned (the guard's admission, port.Admission).
func (p *Plan) Prepend(s Step) { p.steps = append([]Step{s}, p.steps...) }

// Check appends a condition: sql is a SELECT of one boolean, which must be true.
func (p *Plan) Check(explain func(ctx context.Context, db *gorm.DB) error, sql string, vars ...any) {
	q := p.Build().Exec(sql, vars...)
	p.steps = append(p.steps, Step{SQL: q.Statement.SQL.String(), Vars: q.Statement.Vars, Cond: true, Explain: explain})
}

// Refuse appends a step that always fails with err: a refusal decided while planning still comes
// after the refusals of the steps before it, as it would in a write that runs one statement at a time.
func (p *Plan) Refuse(err error) {
	p.Check(func(context.Context, *gorm.DB) error { return err }, "SELECT 1 = 0")
}

// OnCommit has fn run once the plan has committed (never when it fails).
func (p *Plan) OnCommit(fn func()) { p.commits = append(p.commits, fn) }

// Committed runs the OnCommit functions: the runner calls it once the plan has committed.
func (p *Plan) Committed() {
	for _, fn := range p.commits {
		fn()
	}
}

// late is a number the write learns when it runs.
type late struct {
	token string
	expr  string
	vars  []any
	value *int64
}

// Late declares a number that only the write learns: value receives it in Go (a step's Scan), and
// expr (placeholders "?") computes the same number in the statements after that step. It returns a
// placeholder to use where the number goes in the response: Resolve replaces it in the response's
// bytes, and Bytes in the stored copy, so both hold the same text.
func (p *Plan) Late(value *int64, expr string, vars ...any) int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	// A negative 19-digit number: it cannot be a balance or a count, and it is never a prefix of another.
	n := -(int64(binary.BigEndian.Uint64(b[:])%8_000_000_000_000_000_000) + 1_000_000_000_000_000_000)
	p.lates = append(p.lates, late{token: strconv.FormatInt(n, 10), expr: expr, vars: vars, value: value})
	return n
}

// Resolve returns body with every Late placeholder replaced by its value, once the plan has run.
func (p *Plan) Resolve(body []byte) []byte {
	for _, l := range p.lates {
		body = bytes.ReplaceAll(body, []byte(l.token), []byte(strconv.FormatInt(*l.value, 10)))
	}
	return body
}

// Bytes is an expression, for a statement of the plan, of body as Resolve will return it: each Late
// placeholder replaced, in SQL, by its expression. Without a Late it is body itself.
func (p *Plan) Bytes(body []byte) any {
	if len(p.lates) == 0 {
		return body
	}
	s, vars := "CAST(? AS TEXT)", []any{string(body)}
	for _, l := range p.lates {
		s = "replace(" + s + ", ?, CAST((" + l.expr + ") AS TEXT))"
		vars = append(append(vars, l.token), l.vars...)
	}
	if p.dialect == "postgres" {
		s = "convert_to(" + s + ", 'UTF8')"
	} else {
		s = "CAST(" + s + " AS BLOB)"
	}
	return clause.Expr{SQL: s, Vars: vars}
}
