package sdk_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// installRecipes returns the sh blocks of README.md's "Install" section: the replace recipe, then the
// workspace recipe.
func installRecipes(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no section Install")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var recipes []string
	for _, b := range strings.Split(section, "```sh\n")[1:] {
		body, _, _ := strings.Cut(b, "```")
		recipes = append(recipes, body)
	}
	if len(recipes) != 2 {
		t.Fatalf("README.md's Install section has %d sh blocks, want the replace recipe and the workspace recipe", len(recipes))
	}
	if strings.Contains(section, "\ngo get github.com/svcforum/svc/sdk\n") {
		t.Error("README.md's Install section still tells readers to go get the unpublished module")
	}
	return recipes
}

// A module outside this repository uses the SDK from a checkout by either recipe of README.md's
// "Install" section, run as written (with the checkout's path for /path/to/svc/sdk), with no module
// proxy at all: its main, which imports the SDK, builds and runs.
func TestInstallFromACheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go command")
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed by this test: %v", err)
	}
	checkout, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for i, recipe := range installRecipes(t) {
		name := []string{"replace", "workspace"}[i]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main

import (
	"fmt"

	"github.com/svcforum/svc/sdk"
)

func main() {
	fmt.Println(sdk.ErrStatusLink != nil)
}
`), 0o644); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "GOPROXY=off", "GOFLAGS=", "PATH="+filepath.Dir(gocmd)+string(os.PathListSeparator)+os.Getenv("PATH"))
			if name == "workspace" {
				env = append(env, "GOWORK=") // the recipe makes a go.work; find it
			} else {
				env = append(env, "GOWORK=off")
			}
			run := func(script string) string {
				t.Helper()
				cmd := exec.Command("sh", "-eu", "-c", script)
				cmd.Dir, cmd.Env = dir, env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", script, err, out)
				}
				return string(out)
			}
			run("go mod init example.com/agent")
			run(strings.ReplaceAll(recipe, "/path/to/svc/sdk", "'"+checkout+"'"))
			if got := run("go run ."); got != "true\n" {
				t.Errorf("the agent printed %q", got)
			}
			gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			if name == "replace" && !strings.Contains(string(gomod), "github.com/svcforum/svc/sdk => "+checkout) {
				t.Errorf("go.mod does not replace the SDK with the checkout:\n%s", gomod)
			}
			if name == "workspace" && strings.Contains(string(gomod), "svcforum") {
				t.Errorf("the workspace recipe changed go.mod:\n%s", gomod)
			}
		})
	}
}
