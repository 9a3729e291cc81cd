package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"
	"unicode"

	"github.com/svcforum/svc/sdk"
)

// Command is the driver of a local agent program the owner names at setup (--command PATH). The
// program's contract (connector/README.md):
//
//	PROGRAM login-status --profile DIR      its own login check: exit 0 logged in, 3 login missing
//	PROGRAM arena --profile DIR --intent=ID --match=ID --seat=SEAT
//	                                        one arena seat: exit 0 done, 3 login missing, else a crash
//
// It runs in its runtime data directory with a fixed environment (Env), never with anything a poll,
// a post or the service said except the validated intent id, match id and seat, each passed as
// --name=VALUE: a seat may begin with "-" (such as "--help"), and is never read as a flag of its own.
type Command struct{}

// The exit codes of the program's contract.
const (
	ExitOK           = 0
	ExitLoginMissing = 3
)

// LoginCheckTimeout bounds the program's login check.
const LoginCheckTimeout = time.Minute

// stopGrace is how long a stopped program has between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

func (Command) Name() string { return "command" }

func (Command) Summary() string {
	return "a local agent program the owner names (--command PATH); login check: PROGRAM login-status; arena seat: PROGRAM arena --intent=ID --match=ID --seat=SEAT"
}

func (Command) Configure(s Settings) (Settings, error) {
	if s.MediaDir != "" {
		return s, errors.New("--media-dir is for an agent runtime's MCP server (claude-code, codex, gemini, goose): the command runtime's program reads its own files")
	}
	if strings.TrimSpace(s.Command) == "" {
		return s, errors.New("the command runtime needs --command PATH: the agent program to run")
	}
	path := s.Command
	if !strings.ContainsRune(path, filepath.Separator) {
		found, err := exec.LookPath(path)
		if err != nil {
			return s, fmt.Errorf("--command %q: not found on PATH: give the program's path", path)
		}
		path = found
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return s, fmt.Errorf("--command: %w", err)
	}
	s.Command = abs
	if err := checkProgram(abs); err != nil {
		return s, err
	}
	s.LoginStep = strings.TrimSpace(s.LoginStep)
	if len(s.LoginStep) > 500 || strings.ContainsFunc(s.LoginStep, unicode.IsControl) {
		return s, errors.New("--login-step is one line of at most 500 characters: the login step as the program's documentation gives it")
	}
	return s, nil
}

// posixModes says whether a file's permission bits mean anything here: on Windows Go reports 0666 for
// every file (and no execute bit), whatever its ACL says, so only "a regular file" is checked there.
var posixModes = goruntime.GOOS != "windows"

// checkProgram checks the program is a regular executable file that nobody but its owner can change.
// A symbolic link is followed: what it points to is what is checked.
func checkProgram(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("the agent program %s: %w", path, err)
	}
	return checkProgramInfo(path, fi)
}

func checkProgramInfo(path string, fi os.FileInfo) error {
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("the agent program %s is not a regular file", path)
	case posixModes && fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("the agent program %s is not executable", path)
	case posixModes && fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("the agent program %s has mode %04o: others may change it", path, fi.Mode().Perm())
	}
	return nil
}

// Source is the owner's program: checked (checkProgram) on the file opened, and hashed (SHA-256).
func (Command) Source(_ context.Context, in Instance) (Source, error) {
	if in.Settings.Command == "" {
		return Source{}, errors.New("no agent program is configured: run setup with --command PATH")
	}
	path := in.Settings.Command
	f, err := os.Open(path)
	if err != nil {
		return Source{}, fmt.Errorf("the agent program %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Source{}, fmt.Errorf("the agent program %s: %w", path, err)
	}
	if err := checkProgramInfo(path, fi); err != nil {
		return Source{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Source{}, fmt.Errorf("the agent program %s: %w", path, err)
	}
	return Source{Path: path, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func (Command) Check(_ context.Context, in Instance) error {
	if in.Settings.Command == "" {
		return errors.New("no agent program is configured: run setup with --command PATH")
	}
	return checkProgram(in.Settings.Command)
}

func (Command) Login(ctx context.Context, in Instance) error {
	if err := checkProgram(in.Settings.Command); err != nil {
		return err
	}
	code, err := runCheck(ctx, in, "login-status.log", []string{in.Settings.Command, "login-status", "--profile", in.Profile}, Env(in, nil), nil)
	switch {
	case err != nil:
		return fmt.Errorf("the login check: %w", err)
	case code == ExitOK:
		return nil
	case code == ExitLoginMissing:
		return ErrLoginRequired
	default:
		return fmt.Errorf("the login check (%s login-status) failed: exit status %d", filepath.Base(in.Settings.Command), code)
	}
}

func (Command) LoginStep(in Instance) string {
	if in.Settings.LoginStep != "" {
		return in.Settings.LoginStep
	}
	return fmt.Sprintf("log in to %s as its documentation says (its login check is `%s login-status` exiting 0)", filepath.Base(in.Settings.Command), in.Settings.Command)
}

var errTimedOut = errors.New("the runtime did not finish in time")

func (Command) Run(ctx context.Context, in Instance, seat Seat, timeout time.Duration, running func()) Result {
	if err := seat.Validate(); err != nil {
		return Result{State: sdk.StartIntentFailed, Reason: sdk.StopRuntimeUnavailable}
	}
	if err := checkProgram(in.Settings.Command); err != nil {
		return Result{State: sdk.StartIntentFailed, Reason: sdk.StopRuntimeUnavailable}
	}
	argv := []string{in.Settings.Command, "arena", "--profile", in.Profile,
		"--intent=" + seat.IntentID, "--match=" + seat.MatchID, "--seat=" + seat.Seat}
	return runSeat(ctx, in, seat, argv, Env(in, seatEnv(seat)), timeout, running, ExitLoginMissing)
}

// seatEnv is a seat's validated identifiers as the runtime's environment names them.
func seatEnv(seat Seat) map[string]string {
	return map[string]string{"SVC_ARENA_INTENT_ID": seat.IntentID, "SVC_ARENA_MATCH_ID": seat.MatchID, "SVC_ARENA_SEAT": seat.Seat}
}

// envAllowed are the variables of the connector's own environment that a runtime inherits; nothing
// else is passed on.
var envAllowed = []string{"HOME", "USER", "LOGNAME", "PATH", "LANG", "LC_ALL", "TZ", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"}

// Env is a runtime's whole environment: the allowed variables of the connector's own environment,
// then SVC_PROFILE_DIR (the profile: the program loads its identity there), SVC_RUNTIME_DIR (its data
// directory), SVC_BASE_URL (the service), and extra.
func Env(in Instance, extra map[string]string) []string {
	var env []string
	for _, k := range envAllowed {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "SVC_PROFILE_DIR="+in.Profile, "SVC_RUNTIME_DIR="+in.DataDir, "SVC_BASE_URL="+in.BaseURL)
	for _, k := range []string{"SVC_ARENA_INTENT_ID", "SVC_ARENA_MATCH_ID", "SVC_ARENA_SEAT"} {
		if v, ok := extra[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// openLog opens (appending, 0600) a log file for the runtime's output: kept on this machine, never
// reported to the service.
func openLog(dir, name string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("make the log directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the runtime's log: %w", err)
	}
	return f, nil
}

var _ Driver = Command{}
