package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/urfave/cli/v3"
)

// Print writes an admin command's result (WIRE.md section 8): one JSON object on w with --json, else one
// "key: value" line per member, sorted by key, for people.
func Print(cmd *cli.Command, w io.Writer, result any) error {
	raw, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if cmd.Bool("json") {
		_, err = fmt.Fprintf(w, "%s\n", raw)
		return err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return fmt.Errorf("result is not an object: %w", err)
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := string(members[k])
		var s string
		if json.Unmarshal(members[k], &s) == nil {
			v = Printable(s)
		}
		if _, err := fmt.Fprintf(w, "%s: %s\n", k, v); err != nil {
			return err
		}
	}
	return nil
}

// Printable is s as an operator's console may show it. Agent-written text reaches consoles: a string
// holding anything that is not plainly printable (an escape sequence, a line break, a bidirectional
// override) is shown quoted, so it can neither redraw the screen nor fake another line.
func Printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}
