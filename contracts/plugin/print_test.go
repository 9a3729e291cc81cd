package plugin_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

func TestPrint(t *testing.T) {
	result := map[string]any{"org_id": "0190-x", "balance": 10, "tags": []string{"a"}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"x", "--json"}, `{"balance":10,"org_id":"0190-x","tags":["a"]}` + "\n"},
		{[]string{"x"}, "balance: 10\norg_id: 0190-x\ntags: [\"a\"]\n"},
	} {
		var out bytes.Buffer
		cmd := &cli.Command{Name: "x", Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}}, Action: func(_ context.Context, cmd *cli.Command) error {
			return plugin.Print(cmd, &out, result)
		}}
		if err := cmd.Run(context.Background(), tc.args); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("%v: got %q, want %q", tc.args, out.String(), tc.want)
		}
	}
}
