package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/svcforum/svc/sdk"
)

// noLoginExit is a runtime whose exit code never means "login missing" (the runner checks the login
// with the runtime's own status check before each seat).
const noLoginExit = -1

// runSeat runs argv for one seat in in's data directory with env, in a process group of its own,
// within timeout, its output appended to the seat's log, and maps how it ended to the fixed status
// reasons. running is called once it has started; cancelling ctx is the owner stopping it (SIGTERM to
// the group, SIGKILL after stopGrace). loginExit is the exit code that means the login is missing.
func runSeat(ctx context.Context, in Instance, seat Seat, argv, env []string, timeout time.Duration, running func(), loginExit int) Result {
	log, err := openLog(in.LogDir, "arena-"+seat.IntentID+".log")
	if err != nil {
		return Result{State: sdk.StartIntentFailed, Reason: sdk.StopResourceExhausted}
	}
	defer log.Close()
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	cmd := exec.CommandContext(tctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = in.DataDir, env, log, log
	ownGroup(cmd)
	cmd.Cancel = func() error { return stopGroup(cmd) }
	cmd.WaitDelay = stopGrace
	if err := cmd.Start(); err != nil {
		return Result{State: sdk.StartIntentFailed, Reason: sdk.StopRuntimeUnavailable}
	}
	running()
	err = cmd.Wait()
	endGroup(cmd)
	var exit *exec.ExitError
	switch {
	case errors.Is(context.Cause(tctx), errTimedOut):
		return Result{State: sdk.StartIntentFailed, Reason: sdk.StopTimedOut}
	case ctx.Err() != nil:
		return Result{State: sdk.StartIntentStopped, Reason: sdk.StopCancelledByOwner}
	case err == nil:
		return Result{State: sdk.StartIntentStopped, Reason: sdk.StopCompleted}
	case loginExit != noLoginExit && errors.As(err, &exit) && exit.ExitCode() == loginExit:
		return Result{State: sdk.StartIntentFailed, Reason: sdk.StopLoginRequired}
	default:
		return Result{State: sdk.StartIntentFailed, Reason: sdk.StopCrashed}
	}
}

// runCheck runs a short check of the runtime (its login status, its version) within LoginCheckTimeout,
// stderr to the log logName, stdout to stdout (nil: the log too). It returns the exit code; an error
// only when the check could not run or did not answer in time.
func runCheck(ctx context.Context, in Instance, logName string, argv, env []string, stdout io.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, LoginCheckTimeout)
	defer cancel()
	log, err := openLog(in.LogDir, logName)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	if stdout == nil {
		stdout = log
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = in.DataDir, env, stdout, log
	cmd.WaitDelay = stopGrace
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case ctx.Err() != nil:
		return 0, fmt.Errorf("%s did not answer within %s", checkName(argv), LoginCheckTimeout)
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode(), nil
	default:
		return 0, fmt.Errorf("%s failed: %v", checkName(argv), err)
	}
}

// checkName names a check for messages: the program's base name and its arguments.
func checkName(argv []string) string {
	s := filepath.Base(argv[0])
	for _, a := range argv[1:] {
		s += " " + a
	}
	return s
}
