package testkit

import (
	"testing"

	"gorm.io/gorm"
)

// CountRows counts the rows of table that match where and its arguments ("" for every row).
func CountRows(t testing.TB, db *gorm.DB, table, where string, args ...any) int64 {
	t.Helper()
	q := db.Table(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}
