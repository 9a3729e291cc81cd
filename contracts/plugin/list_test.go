package plugin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
)

// readPage runs a command with ListFlags on args and returns the page it read for list.
func readPage(t *testing.T, list string, args ...string) (plugin.ListPage, error) {
	t.Helper()
	var page plugin.ListPage
	var readErr error
	cmd := &cli.Command{Name: "x", Flags: plugin.ListFlags(), Action: func(_ context.Context, cmd *cli.Command) error {
		page, readErr = plugin.ReadListPage(cmd, list)
		return nil
	}}
	if err := cmd.Run(context.Background(), append([]string{"x"}, args...)); err != nil {
		t.Fatal(err)
	}
	return page, readErr
}

// A cursor carries a row's position exactly (to the nanosecond) and only for its own list; a bad
// limit or cursor is validation_failed naming the flag.
func TestListPage(t *testing.T) {
	if p, err := readPage(t, "report"); err != nil || p.Limit != plugin.DefaultListLimit || p.After != nil {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	at := time.Date(2026, 11, 20, 10, 4, 0, 123456789, time.FixedZone("x", 3600))
	cursor := plugin.ListPosition{CreatedAt: at, ID: "0196f5c3"}.Cursor("report")
	p, err := readPage(t, "report", "--limit", "3", "--cursor", cursor)
	if err != nil || p.Limit != 3 || p.After == nil || !p.After.CreatedAt.Equal(at) || p.After.CreatedAt.Location() != time.UTC || p.After.ID != "0196f5c3" {
		t.Fatalf("page: %+v, %v", p, err)
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"limit 0":          {[]string{"--limit", "0"}, "--limit"},
		"limit too high":   {[]string{"--limit", "1001"}, "--limit"},
		"not base64":       {[]string{"--cursor", "!!"}, "--cursor"},
		"not a cursor":     {[]string{"--cursor", "e30"}, "--cursor"},
		"another list's":   {[]string{"--cursor", plugin.ListPosition{CreatedAt: at, ID: "x"}.Cursor("mail")}, "mail list"},
		"edited, bad time": {[]string{"--cursor", strings.TrimSuffix(cursor, cursor[len(cursor)-4:]) + "AAAA"}, "--cursor"},
	} {
		_, err := readPage(t, "report", c.args...)
		var p *problem.Problem
		if !errors.As(err, &p) || p.Code != problem.ValidationFailed || !strings.Contains(p.Detail, c.want) {
			t.Errorf("%s: %v, want validation_failed naming %q", name, err, c.want)
		}
	}
}
