package profile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ErrActive is a profile that a running connector (a setup, an arena runner) holds.
var ErrActive = errors.New("profile is active: another svc-connector (a setup or an arena runner) holds it")

// ErrSettingsBusy is a profile whose settings another connector is changing right now and did not let
// go of within SettingsWait.
var ErrSettingsBusy = errors.New("another svc-connector is changing this profile's settings (connector.json): try again")

// SettingsWait is how long a change of the settings waits for another change to finish: each one holds
// the settings lock only to read, change and write connector.json.
const SettingsWait = 5 * time.Second

// errBusy is a lock file another process holds.
var errBusy = errors.New("held by another process")

// Lock is a running connector's hold on a lock file of a profile: an exclusive lock (flock(2) on Unix,
// LockFileEx on Windows) released by Unlock or when the process ends, however it ends.
type Lock struct {
	f *os.File
}

// Lock takes the profile, waiting up to wait for a holder to let go; ErrActive when it does not. The
// profile directory must exist. The lock file holds the holder's pid, for people; the lock itself, not
// the file's presence, says the profile is active.
func (p *Profile) Lock(wait time.Duration) (*Lock, error) {
	l, err := lockFile(p.Path(LockFile), wait)
	if errors.Is(err, errBusy) {
		return nil, ErrActive
	}
	if err != nil {
		return nil, fmt.Errorf("lock the profile: %w", err)
	}
	if err := l.f.Truncate(0); err == nil {
		_, _ = l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return l, nil
}

// LockSettings takes the profile's settings lock (settings.lock), which every read-modify-write of
// connector.json holds: a small lock of its own, apart from the profile's lock that a setup or a runner
// holds for as long as it runs, so that `arena disable` changes the settings while a runner runs, and
// never at the same time as a setup or an `arena enable`. ErrSettingsBusy after SettingsWait.
func (p *Profile) LockSettings() (*Lock, error) {
	l, err := lockFile(p.Path(SettingsLockFile), SettingsWait)
	if errors.Is(err, errBusy) {
		return nil, ErrSettingsBusy
	}
	if err != nil {
		return nil, fmt.Errorf("lock the profile's settings: %w", err)
	}
	return l, nil
}

// lockFile opens (creating it, 0600) the lock file path, never through a symbolic link, and locks it
// exclusively, waiting up to wait; errBusy when another process still holds it.
func lockFile(path string, wait time.Duration) (*Lock, error) {
	f, err := OpenNoFollow(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := tryLock(f, true)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			return &Lock{f: f}, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, errBusy
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Unlock lets the lock go.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// Active reports whether a running connector holds the profile. It creates nothing: without a lock
// file, nobody holds it. It tests with a shared lock that it lets go at once.
func (p *Profile) Active() (bool, error) {
	f, err := OpenNoFollow(p.Path(LockFile), os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	ok, err := tryLock(f, false)
	if err != nil {
		return false, err
	}
	if ok {
		_ = unlock(f)
		return false, nil
	}
	return true, nil
}
