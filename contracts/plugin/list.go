package plugin

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/problem"
)

// How an operator's list command pages (WIRE.md section 8): newest first, at most --limit rows, and
// "more" when rows are left; the page's next_cursor, given back as --cursor, continues right after its
// last row. Rows are ordered by their creation time, then their id, both descending, so rows created
// at the same instant keep one order and a page never skips or repeats one. A cursor is the last row's
// position, unsealed: the operator may read the whole database anyway, and any position is a valid
// place to start from, but it names its list so that one list's cursor is not mistaken for another's.

// Bounds of --limit.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// ListFlags are --limit and --cursor.
func ListFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "limit", Value: DefaultListLimit, Usage: fmt.Sprintf("print at most this many, newest first (1 to %d)", MaxListLimit)},
		&cli.StringFlag{Name: "cursor", Usage: "continue after the last row of an earlier page: the next_cursor it printed"},
	}
}

// ListPosition is a row's place in a list: its creation time and its id.
type ListPosition struct {
	CreatedAt time.Time
	ID        string
}

// listCursor is what a cursor encodes.
type listCursor struct {
	List      string `json:"l"`
	CreatedAt string `json:"t"` // RFC 3339 with nanoseconds, UTC
	ID        string `json:"i"`
}

// ListPage is the page a list command asks for: list names the list (its cursors name it too).
type ListPage struct {
	List  string
	Limit int
	After *ListPosition // nil: from the newest row
}

// ReadListPage reads --limit and --cursor (ListFlags) of cmd for list: a bad one is validation_failed.
func ReadListPage(cmd *cli.Command, list string) (ListPage, error) {
	p := ListPage{List: list, Limit: cmd.Int("limit")}
	if p.Limit < 1 || p.Limit > MaxListLimit {
		return ListPage{}, problem.Newf(problem.ValidationFailed, "--limit must be 1 to %d, got %d", MaxListLimit, p.Limit)
	}
	if s := cmd.String("cursor"); s != "" {
		after, err := openListCursor(s, list)
		if err != nil {
			return ListPage{}, err
		}
		p.After = &after
	}
	return p, nil
}

func openListCursor(s, list string) (ListPosition, error) {
	bad := problem.Newf(problem.ValidationFailed, "--cursor must be a next_cursor that %s list printed", list)
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return ListPosition{}, bad
	}
	var c listCursor
	if err := json.Unmarshal(raw, &c); err != nil || c.ID == "" {
		return ListPosition{}, bad
	}
	if c.List != list {
		return ListPosition{}, problem.Newf(problem.ValidationFailed, "--cursor is a cursor of %s list, not of %s list", Printable(c.List), list)
	}
	at, err := time.Parse(time.RFC3339Nano, c.CreatedAt)
	if err != nil {
		return ListPosition{}, bad
	}
	return ListPosition{CreatedAt: at.UTC(), ID: c.ID}, nil
}

// Cursor is the cursor of list that continues after pos.
func (pos ListPosition) Cursor(list string) string {
	raw, _ := json.Marshal(listCursor{List: list, CreatedAt: pos.CreatedAt.UTC().Format(time.RFC3339Nano), ID: pos.ID}) // strings only: never fails
	return base64.RawURLEncoding.EncodeToString(raw)
}

// Query orders q newest first by its columns createdAt and id, starts it after the page's cursor,
// and reads one row more than the limit, which tells Cut whether more remain.
func (p ListPage) Query(q *gorm.DB, createdAt, id string) *gorm.DB {
	if p.After != nil {
		// The time is bound as it was read (UTC), so it compares equal to the stored value on both
		// databases: SQLite keeps the driver's text of a UTC time, PostgreSQL microseconds.
		q = q.Where("("+createdAt+" < ? OR ("+createdAt+" = ? AND "+id+" < ?))", p.After.CreatedAt, p.After.CreatedAt, p.After.ID)
	}
	return q.Order(createdAt + " DESC, " + id + " DESC").Limit(p.Limit + 1)
}

// Cut keeps the page's rows of those Query read, and returns the cursor after the last one kept when
// more remain (nil at the end of the list). pos is a row's position.
func Cut[T any](p ListPage, rows []T, pos func(T) ListPosition) ([]T, *string) {
	if len(rows) <= p.Limit {
		return rows, nil
	}
	rows = rows[:p.Limit]
	next := pos(rows[len(rows)-1]).Cursor(p.List)
	return rows, &next
}

// Table is rows of cells under a header, for people.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table, columns padded to line up, each cell Printable and "-" for nothing; an empty
// table prints its header only.
func (t Table) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.Header, "\t"))
	for _, r := range t.Rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = "-"
			if c != "" {
				cells[i] = Printable(c)
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// PrintList prints a page of a list: with --json the object {name: rows, "more": bool, "next_cursor":
// string or null}, else the table and, when more rows remain, a closing line with the cursor that
// continues.
func PrintList(cmd *cli.Command, name string, rows any, next *string, t Table) error {
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		return Print(cmd, w, map[string]any{name: rows, "more": next != nil, "next_cursor": next})
	}
	if err := t.Write(w); err != nil {
		return err
	}
	if next != nil {
		_, err := fmt.Fprintf(w, "(more %s: continue with --cursor %s)\n", name, *next)
		return err
	}
	return nil
}

// Stamp is a time as a table shows it.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
