package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/sdk"
)

// program is an agent program following the command driver's contract, steered by files in its data
// directory: login-exit (the login check's exit code) and arena (what a seat does: an exit code, or
// "sleep" to run until stopped). It records its arguments and environment.
const program = `#!/bin/sh
case "$1" in
login-status)
	exit "$(cat "$SVC_RUNTIME_DIR/login-exit" 2>/dev/null || echo 0)" ;;
arena)
	echo "$@" > "$SVC_RUNTIME_DIR/arena-args"
	env > "$SVC_RUNTIME_DIR/arena-env"
	what="$(cat "$SVC_RUNTIME_DIR/arena" 2>/dev/null || echo 0)"
	if [ "$what" = sleep ]; then sleep 30; exit 0; fi
	exit "$what" ;;
esac
exit 64
`

func setupProgram(t *testing.T) Instance {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "agent-program")
	if err := os.WriteFile(path, []byte(program), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "profile", "runtime", "command")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := Command{}.Configure(Settings{Command: path, LoginStep: "run agent-program login"})
	if err != nil {
		t.Fatal(err)
	}
	return Instance{Profile: filepath.Join(dir, "profile"), DataDir: data, LogDir: filepath.Join(dir, "profile", "logs"), BaseURL: "http://forum.test", Settings: s}
}

func steer(t *testing.T, in Instance, file, what string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(in.DataDir, file), []byte(what), 0o600); err != nil {
		t.Fatal(err)
	}
}

var seat = Seat{IntentID: "0196f410-3c4d-7e5f-8a6b-7c8d9e0f1a3c", MatchID: "0196f410-3c4d-7e5f-8a6b-7c8d9e0f1a2b", Seat: "north"}

func TestConfigureRefusesAProgramOthersCouldChange(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(program), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, s := range map[string]Settings{
		"no program":      {},
		"missing":         {Command: filepath.Join(dir, "nope")},
		"not executable":  {Command: write("plain", 0o644)},
		"world-writable":  {Command: write("shared", 0o777)},
		"a directory":     {Command: dir},
		"not on PATH":     {Command: "no-such-agent-program-here"},
		"multi-line step": {Command: write("ok", 0o755), LoginStep: "line one\nrm -rf ~"},
	} {
		if _, err := (Command{}).Configure(s); err == nil {
			t.Errorf("%s: configured", name)
		}
	}
	got, err := Command{}.Configure(Settings{Command: "sh"})
	if err != nil || !filepath.IsAbs(got.Command) {
		t.Fatalf("a program on PATH: %q %v", got.Command, err)
	}
}

func TestLoginIsTheProgramsOwnCheck(t *testing.T) {
	in := setupProgram(t)
	ctx := context.Background()
	if err := (Command{}).Check(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := (Command{}).Login(ctx, in); err != nil {
		t.Fatalf("logged in: %v", err)
	}
	steer(t, in, "login-exit", "3")
	if err := (Command{}).Login(ctx, in); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("exit 3: %v", err)
	}
	steer(t, in, "login-exit", "5")
	if err := (Command{}).Login(ctx, in); err == nil || errors.Is(err, ErrLoginRequired) {
		t.Fatalf("exit 5: %v", err)
	}
	if step := (Command{}).LoginStep(in); step != "run agent-program login" {
		t.Fatalf("login step %q", step)
	}
}

func TestRunMapsTheProgramsEndToAState(t *testing.T) {
	in := setupProgram(t)
	for what, want := range map[string]Result{
		"0": {sdk.StartIntentStopped, sdk.StopCompleted},
		"3": {sdk.StartIntentFailed, sdk.StopLoginRequired},
		"1": {sdk.StartIntentFailed, sdk.StopCrashed},
	} {
		steer(t, in, "arena", what)
		ran := false
		got := Command{}.Run(context.Background(), in, seat, 10*time.Second, func() { ran = true })
		if got != want || !ran {
			t.Fatalf("exit %s: %+v (running reported: %v), want %+v", what, got, ran, want)
		}
	}
	args, _ := os.ReadFile(filepath.Join(in.DataDir, "arena-args"))
	if got := strings.TrimSpace(string(args)); got != "arena --profile "+in.Profile+" --intent="+seat.IntentID+" --match="+seat.MatchID+" --seat=north" {
		t.Fatalf("arguments %q", got)
	}

	steer(t, in, "arena", "sleep")
	start := time.Now()
	if got := (Command{}).Run(context.Background(), in, seat, 300*time.Millisecond, func() {}); got != (Result{sdk.StartIntentFailed, sdk.StopTimedOut}) || time.Since(start) > 10*time.Second {
		t.Fatalf("past its time: %+v after %s", got, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	if got := (Command{}).Run(ctx, in, seat, time.Minute, func() {}); got != (Result{sdk.StartIntentStopped, sdk.StopCancelledByOwner}) {
		t.Fatalf("stopped by the owner: %+v", got)
	}

	gone := in
	gone.Settings.Command = filepath.Join(t.TempDir(), "removed")
	if got := (Command{}).Run(context.Background(), gone, seat, time.Minute, func() { t.Error("a missing program ran") }); got != (Result{sdk.StartIntentFailed, sdk.StopRuntimeUnavailable}) {
		t.Fatalf("a missing program: %+v", got)
	}
	bad := seat
	bad.Seat = "north; rm -rf ~"
	if got := (Command{}).Run(context.Background(), in, bad, time.Minute, func() { t.Error("a malformed seat ran") }); got.State != sdk.StartIntentFailed {
		t.Fatalf("a malformed seat: %+v", got)
	}
}

// A seat is passed as --seat=SEAT: one that begins with "-" (the schema allows it) is never read as a
// flag of its own.
func TestASeatLikeAFlagIsPassedAsAValue(t *testing.T) {
	in := setupProgram(t)
	steer(t, in, "arena", "0")
	s := seat
	s.Seat = "--help"
	if err := s.Validate(); err != nil {
		t.Fatalf("the seat --help: %v", err)
	}
	if got := (Command{}).Run(context.Background(), in, s, 10*time.Second, func() {}); got != (Result{sdk.StartIntentStopped, sdk.StopCompleted}) {
		t.Fatalf("the seat --help: %+v", got)
	}
	raw, _ := os.ReadFile(filepath.Join(in.DataDir, "arena-args"))
	args := strings.Fields(string(raw))
	want := []string{"arena", "--profile", in.Profile, "--intent=" + s.IntentID, "--match=" + s.MatchID, "--seat=--help"}
	if !slices.Equal(args, want) {
		t.Fatalf("arguments %q, want %q", args, want)
	}
	for _, a := range args {
		if a == "--help" {
			t.Fatalf("the seat is an argument of its own: %q", args)
		}
	}
}

func TestTheProviderSourceIsTheProgramFingerprinted(t *testing.T) {
	in := setupProgram(t)
	src, err := Command{}.Source(context.Background(), in)
	sum := sha256.Sum256([]byte(program))
	if err != nil || src.Path != in.Settings.Command || src.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("source %+v %v", src, err)
	}
	// A link to the program is followed: the program is what is fingerprinted and checked.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(in.Settings.Command, link); err != nil {
		t.Fatal(err)
	}
	linked := in
	linked.Settings.Command = link
	if got, err := (Command{}).Source(context.Background(), linked); err != nil || got.SHA256 != src.SHA256 || got.Path != link {
		t.Fatalf("through a link: %+v %v", got, err)
	}
	if err := os.WriteFile(in.Settings.Command, []byte(program+"# changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := (Command{}).Source(context.Background(), in); err != nil || got.SHA256 == src.SHA256 {
		t.Fatalf("a changed program: %+v %v", got, err)
	}
	for name, mode := range map[string]os.FileMode{"group-writable": 0o775, "world-writable": 0o757, "not executable": 0o644} {
		if err := os.Chmod(in.Settings.Command, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := (Command{}).Source(context.Background(), in); err == nil {
			t.Errorf("%s: a source", name)
		}
		if _, err := (Command{}).Source(context.Background(), linked); err == nil {
			t.Errorf("%s, through a link: a source", name)
		}
	}
	gone := in
	gone.Settings.Command = filepath.Join(t.TempDir(), "gone")
	if _, err := (Command{}).Source(context.Background(), gone); err == nil {
		t.Fatal("a missing program: a source")
	}
	if _, err := (Command{}).Source(context.Background(), Instance{}); err == nil {
		t.Fatal("no program: a source")
	}
}

func TestOnWindowsOnlyARegularFileIsRequired(t *testing.T) {
	posixModes = false // as on Windows: every file 0666, without an execute bit
	defer func() { posixModes = true }()
	in := setupProgram(t)
	if err := os.Chmod(in.Settings.Command, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := (Command{}).Source(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if _, err := (Command{}).Configure(Settings{Command: filepath.Dir(in.Settings.Command)}); err == nil {
		t.Fatal("a directory as the program")
	}
}

func TestTheRuntimesEnvironmentIsFixed(t *testing.T) {
	t.Setenv("SVC_TEST_SECRET", "do-not-pass")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "do-not-pass")
	in := setupProgram(t)
	steer(t, in, "arena", "0")
	Command{}.Run(context.Background(), in, seat, 10*time.Second, func() {})
	raw, err := os.ReadFile(filepath.Join(in.DataDir, "arena-env"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		name, value, _ := strings.Cut(line, "=")
		if value == "do-not-pass" {
			t.Fatalf("the runtime inherited %s", name)
		}
		names = append(names, name)
	}
	for _, want := range []string{"SVC_PROFILE_DIR", "SVC_RUNTIME_DIR", "SVC_BASE_URL", "SVC_ARENA_INTENT_ID", "SVC_ARENA_MATCH_ID", "SVC_ARENA_SEAT", "PATH"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the runtime lacks %s: %v", want, names)
		}
	}
	allowed := append(slices.Clone(envAllowed), "SVC_PROFILE_DIR", "SVC_RUNTIME_DIR", "SVC_BASE_URL", "SVC_ARENA_INTENT_ID", "SVC_ARENA_MATCH_ID", "SVC_ARENA_SEAT",
		"PWD", "SHLVL", "_", "OLDPWD") // the shell's own
	for _, n := range names {
		if !slices.Contains(allowed, n) {
			t.Fatalf("the runtime got %s", n)
		}
	}
}

func TestSeatsAreValidatedBeforeAnythingRuns(t *testing.T) {
	for _, s := range []Seat{
		{IntentID: "not-a-uuid", MatchID: seat.MatchID, Seat: "north"},
		{IntentID: seat.IntentID, MatchID: strings.ToUpper(seat.MatchID), Seat: "north"},
		{IntentID: seat.IntentID, MatchID: seat.MatchID, Seat: ""},
		{IntentID: seat.IntentID, MatchID: seat.MatchID, Seat: "--help"[2:] + " x"},
		{IntentID: seat.IntentID, MatchID: seat.MatchID, Seat: strings.Repeat("a", 65)},
	} {
		if s.Validate() == nil {
			t.Errorf("%+v passed", s)
		}
	}
	if seat.Validate() != nil {
		t.Fatal("a good seat refused")
	}
}

func TestUnknownRuntimesAreRefused(t *testing.T) {
	r := Builtin()
	if _, err := r.Lookup("command"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lookup("telepathy"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("an unknown runtime: %v", err)
	}
	if !slices.Equal(r.Names(), []string{"claude-code", "codex", "command", "gemini", "goose"}) {
		t.Fatalf("drivers %v", r.Names())
	}
}
