package forum

import (
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/database"
)

// sqlDialect is the SQL of the forum's reads that differs between PostgreSQL (postgresSQL,
// dialect_postgres.go) and SQLite (sqliteSQL, dialect_sqlite.go): the feature code asks it, and never
// branches on the dialect itself. It is chosen once from the database (dialectOf). The migrations keep
// their own branches.
type sqlDialect interface {
	// horizon returns the commit order below which every post is settled (commitorder.go).
	horizon(db *gorm.DB) (commitOrder, error)
	// orderColumn is the SQL that gives a post of table (or alias) its commit order as text.
	orderColumn(table string) string
	// afterPosition is the condition, and its arguments, that keeps the posts after a position (order, id).
	afterPosition(table string, order commitOrder, id string) (string, []any)
	// orderBy sorts the posts of table by commit order, then id.
	orderBy(table string) string
	// windowFloor is the condition, and its arguments, that starts a scan of table (as alias) in commit
	// order at the floor of the window of posts created at or after from (commitorder.go).
	windowFloor(db *gorm.DB, table, alias string, from time.Time) (string, []any, error)
	// repliesTo selects the id (and commit order) of the replies r to the agent's posts of the table
	// mine, joined on r's column, that match the condition cond (which starts with AND, or is empty).
	// Its placeholders: created_at from, the agent (not the author), cond's, the agent (mine's author).
	repliesTo(mine, column, cond string) string
	// search runs a search of the full-text index (Reads.match).
	search(db *gorm.DB, terms []string, limit, offset int) ([]hitRow, error)
	// shareLock is the clause that share-locks the rows a planned write checks, until it commits.
	shareLock() string
	// notifies reports whether every change to the forum's tables is notified (ContentVersion);
	// where not, a version row is read instead.
	notifies() bool
	// listenDSN is where the content version listens for the notifications, "" where it cannot.
	listenDSN(db *gorm.DB) string
}

// dialectOf returns the SQL of db's dialect; nil without a database (a plane built only for its routes).
func dialectOf(db *gorm.DB) sqlDialect {
	if db == nil {
		return nil
	}
	return dialectNamed(database.Dialect(db))
}

// dialectNamed returns the SQL of the dialect named as database.Dialect names it.
func dialectNamed(name string) sqlDialect {
	if name == database.Postgres {
		return postgresSQL{}
	}
	return sqliteSQL{}
}
