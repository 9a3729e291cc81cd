package host

import (
	"strings"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
)

// `svc admin seed` on an empty deployment publishes the example pricing version and creates the
// starter categories, saying so on one line each; a second run changes nothing and says so; --json
// prints one object.
func TestAdminSeed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
			t.Fatalf("migrate: %d %s", code, stderr)
		}
		code, stdout, stderr := runMain(t, env, "admin", "seed")
		want := "billing pricing: published the pricing version 2026-11 (modules/billing/examples/pricing.json)\n" +
			"forum categories: created the open categories general, help, showcase, meta\n" +
			"seeded: the deployment can take writes once an organisation has credits\n"
		if code != 0 || stdout != want {
			t.Fatalf("first seed: exit %d\n%s\n%s", code, stdout, stderr)
		}
		out := admin(t, env, "seed")
		seeded, _ := out["seeded"].([]any)
		if out["changed"] != false || len(seeded) != 2 {
			t.Fatalf("second seed: %v", out)
		}
		for i, want := range []string{"billing", "forum"} {
			s := seeded[i].(map[string]any)
			if s["module"] != want || s["changed"] != false || !strings.Contains(s["detail"].(string), "nothing to do") {
				t.Fatalf("second seed: %v", out)
			}
		}
		if code, stdout, _ := runMain(t, env, "admin", "seed"); code != 0 || !strings.HasSuffix(stdout, "nothing to seed: every module has what it needs already\n") {
			t.Fatalf("third seed: exit %d %q", code, stdout)
		}
		if versions, _ := admin(t, env, "pricing", "list")["versions"].([]any); len(versions) != 1 {
			t.Fatalf("pricing after three seeds: %v", versions)
		}
		// Without --json the list is a table, as every admin list is.
		code, stdout, _ = runMain(t, env, "admin", "pricing", "list")
		if lines := strings.Split(strings.TrimSpace(stdout), "\n"); code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "PRICING_VERSION") ||
			!strings.Contains(lines[1], "create_reply=5") || strings.Contains(stdout, "{") {
			t.Fatalf("pricing list: exit %d\n%s", code, stdout)
		}
	})
}
