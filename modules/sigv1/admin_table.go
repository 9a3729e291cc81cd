package sigv1

import (
	"fmt"
	"strconv"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// How list and show commands print for people: a list is a table with a header row, newest first,
// and a closing line when more rows match than --limit shows; a show is one "name: value" line per
// member, then a table of the rows it holds (an organisation's agents, an agent's keys). With --json
// both print one JSON object (plugin.Print).

// printable is a table cell: plugin.Printable (an organisation's name comes from an application, so it
// must neither redraw the screen nor break the table), and "-" for nothing.
func printable(s string) string {
	if s == "" {
		return "-"
	}
	return plugin.Printable(s)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func stampOrNone(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

// printList prints a list: the JSON object {name: rows, "more": more} with --json, else the table.
func printList(cmd *cli.Command, name string, rows any, more bool, t plugin.Table) error {
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		return plugin.Print(cmd, w, map[string]any{name: rows, "more": more})
	}
	if err := t.Write(w); err != nil {
		return err
	}
	if more {
		_, err := fmt.Fprintf(w, "(more %s match: raise --limit or narrow the filters)\n", name)
		return err
	}
	return nil
}

// field is one "name: value" line of a show.
type field struct{ name, value string }

// printShow prints a show: v as one JSON object with --json, else the fields and, when it has rows,
// the titled table.
func printShow(cmd *cli.Command, v any, fields []field, title string, t plugin.Table) error {
	w := cmd.Root().Writer
	if cmd.Bool("json") {
		return plugin.Print(cmd, w, v)
	}
	for _, f := range fields {
		if _, err := fmt.Fprintf(w, "%s: %s\n", f.name, printable(f.value)); err != nil {
			return err
		}
	}
	if title == "" {
		return nil
	}
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(t.Rows))
	return t.Write(w)
}

func orgTable(orgs []OrgView) plugin.Table {
	t := plugin.Table{Header: []string{"ORG_ID", "NAME", "STATE", "AGENTS", "CREATED"}}
	for _, o := range orgs {
		t.Add(o.ID, o.Name, o.State, strconv.FormatInt(o.Agents, 10), stamp(o.CreatedAt))
	}
	return t
}

func agentTable(agents []AgentView, withOrg bool) plugin.Table {
	t := plugin.Table{Header: []string{"AGENT_ID", "HANDLE", "STATE", "WRITES", "KEYS", "CREATED"}}
	if withOrg {
		t.Header = append(t.Header, "ORG")
	}
	for _, a := range agents {
		writes := "open"
		if a.WritesFrozen {
			writes = "frozen"
		}
		cells := []string{a.ID, a.Handle, a.State, writes, strconv.FormatInt(a.ActiveKeys, 10), stamp(a.CreatedAt)}
		if withOrg {
			cells = append(cells, a.OrgName)
		}
		t.Add(cells...)
	}
	return t
}

func keyTable(keys []KeyView, withHandle bool) plugin.Table {
	t := plugin.Table{Header: []string{"KEY_ID", "STATE", "FINGERPRINT", "CREATED", "REVOKED"}}
	if withHandle {
		t.Header = append(t.Header, "AGENT")
	}
	for _, k := range keys {
		cells := []string{k.ID, k.State, k.Fingerprint, stamp(k.CreatedAt), stampOrNone(k.RevokedAt)}
		if withHandle {
			cells = append(cells, k.Handle)
		}
		t.Add(cells...)
	}
	return t
}
