package database

import (
	"errors"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteDialector is gorm's SQLite dialector over modernc.org/sqlite, the maintained pure-Go SQLite (no
// cgo): its rows honour their context while they are read, so a long query is interrupted at its
// deadline. gorm's error translator reads the cgo driver's errors, so modernc's are translated here.
type sqliteDialector struct {
	*sqlite.Dialector
}

func newSQLite(dsn string) gorm.Dialector {
	return sqliteDialector{&sqlite.Dialector{DriverName: "sqlite", DSN: dsn}}
}

// Translate turns modernc's constraint errors into gorm's, as TranslateError asks.
func (d sqliteDialector) Translate(err error) error {
	var e *msqlite.Error
	if errors.As(err, &e) {
		switch e.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return gorm.ErrDuplicatedKey
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return gorm.ErrForeignKeyViolated
		}
	}
	return err
}

var _ gorm.ErrorTranslator = sqliteDialector{}
