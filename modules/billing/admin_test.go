package billing_test

// Tests of `svc admin pricing publish` as operators meet it: the example file publishes as shipped,
// and a bad file is refused on one line that names each bad member and where it is in the file.

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
)

// exampleFile is the shipped example, read from its place in the repository.
func exampleFile(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(billing.ExampleFile)))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// publishCommand runs `pricing publish --file name` on w's pricing (the host's invoke, reduced to it).
func publishCommand(t *testing.T, w *world, name string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	invoke := func(ctx context.Context, _ *cli.Command, fn any) error {
		return fn.(func(context.Context, *billing.Pricing) error)(ctx, w.pricing)
	}
	root := &cli.Command{Name: "admin", Writer: &out, Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}}, Commands: billing.Admin(invoke)}
	err := root.Run(context.Background(), []string{"admin", "--json", "pricing", "publish", "--file", name})
	return out.String(), err
}

func TestPricingExampleFilePublishes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		out, err := publishCommand(t, w, filepath.Join("..", "..", filepath.FromSlash(billing.ExampleFile)))
		if err != nil || !strings.HasPrefix(out, `{"pricing_version":`) {
			t.Fatalf("publish the example: %q %v", out, err)
		}
		list, err := w.pricing.List(context.Background())
		if err != nil || len(list) != 1 || !list[0].Current {
			t.Fatalf("list %+v %v", list, err)
		}
		// It prices every operation the price lists know.
		if got := slices.Sorted(maps.Keys(list[0].Prices)); !slices.Equal(got, slices.Sorted(maps.Keys(wirePrices))) {
			t.Fatalf("the example prices %v", got)
		}
	})
}

func TestPricingFileErrorsPointAtTheMember(t *testing.T) {
	example := string(exampleFile(t))
	// Line 8 of the example is `    "vote": 1,` and line 5 is `  "prices": {`.
	if lines := strings.Split(example, "\n"); !strings.HasPrefix(lines[7], `    "vote": 1,`) || !strings.HasPrefix(lines[4], `  "prices": {`) {
		t.Fatalf("the example changed shape; update the positions of this test:\n%s", example)
	}
	cases := []struct {
		name string
		raw  string
		want []string // substrings of the one-line detail
	}{
		{"negative price", strings.Replace(example, `"vote": 1`, `"vote": -1`, 1),
			[]string{`/prices/vote at line 8, column 5: `, `(minimum)`}},
		{"missing operation", strings.Replace(example, `    "media_upload": 3`+"\n", `    "media_upload2": 3`+"\n", 1),
			[]string{`/prices/media_upload in /prices at line 5, column 3: the member is required (required)`,
				`/prices/media_upload2 at line 13, column 5: `, `(unknown_member)`}},
		{"missing top-level member", strings.Replace(example, `  "per_attachment": 1,`+"\n", "", 1),
			[]string{`/per_attachment in the file at line 1, column 1: the member is required`}},
		{"wrong type", strings.Replace(example, `"grace_period_days": 30`, `"grace_period_days": "30"`, 1),
			[]string{`/grace_period_days at line 3, column 3: `}},
		{"not JSON", strings.Replace(example, `"vote": 1,`, `"vote": 1,,`, 1),
			[]string{`/prices at line 8, column 15: the body is not valid JSON (invalid_json)`}},
		{"cut short", example[:strings.Index(example, `"tombstone"`)],
			[]string{`/prices at line 10, column 5: the body is not valid JSON (invalid_json)`}},
		{"duplicate member", strings.Replace(example, `"vote": 1,`, `"vote": 1, "vote": 2,`, 1),
			[]string{`/prices/vote at line 8, column 16: the member name appears more than once (duplicate_member)`}},
		{"trailing data", example + "\n{}\n",
			[]string{`(file) at line 17, column 1: `, `(trailing_data)`}},
		{"not an object", "[\n]", []string{`(file) at line 1, column 1: `}},
		{"non-ASCII before the fault", strings.Replace(example, `"2026-11"`, `"café", "x": 1`, 1),
			[]string{`/pricing_version at line 2, column 3: `, `/x at line 2, column 30: `}},
	}
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		dir := t.TempDir()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := w.pricing.Publish(context.Background(), []byte(c.raw))
				p := asProblem(t, err, problem.ValidationFailed, 422)
				for _, want := range c.want {
					if !strings.Contains(p.Detail, want) {
						t.Errorf("detail %q lacks %q", p.Detail, want)
					}
				}
				// The command fails with that detail on one line.
				name := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
				if err := os.WriteFile(name, []byte(c.raw), 0o600); err != nil {
					t.Fatal(err)
				}
				out, err := publishCommand(t, w, name)
				if err == nil || out != "" || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), c.want[0]) {
					t.Fatalf("the command: %q, %v", out, err)
				}
			})
		}
		if list, err := w.pricing.List(context.Background()); err != nil || len(list) != 0 {
			t.Fatalf("after the refusals: %+v %v", list, err)
		}
	})
}
