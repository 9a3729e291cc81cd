package profile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Disposition is what a setup would do with a target profile.
type Disposition string

const (
	// Create: the profile is absent; setup creates only it, with fresh runtime data.
	Create Disposition = "create"
	// Adopt: the profile exists, is safe, inactive, and holds no identity or this same identity; its
	// runtime-owned data is kept.
	Adopt Disposition = "adopt"
	// Resume: the profile holds an interrupted setup of this same handle and service, and is inactive.
	Resume Disposition = "resume"
	// Refused: setup must not touch the profile; Reasons say why.
	Refused Disposition = "refused"
)

// Reasons of the dispositions. The first four explain create, adopt and resume; every other reason
// refuses. Resume's reason is "checkpoint_" followed by the checkpoint's state.
const (
	ReasonProfileAbsent  = "profile_absent"
	ReasonProfileUnbound = "profile_unbound"
	ReasonSameIdentity   = "same_identity"
	ReasonCheckpoint     = "checkpoint_" // + state

	ReasonInvalidProfileName     = "invalid_profile_name"
	ReasonIdentityConflict       = "identity_conflict"
	ReasonCheckpointConflict     = "checkpoint_conflict"
	ReasonProfileActive          = "profile_active"
	ReasonUnsafePermissions      = "unsafe_permissions"
	ReasonInspectionInconclusive = "inspection_inconclusive"
)

// Target is the identity and runtime a setup would put in a profile.
type Target struct {
	Handle  string
	BaseURL string // the service's base URL, as the owner gave it (no trailing slash)
	Runtime string
}

// Inspection is what Inspect found.
type Inspection struct {
	Disposition Disposition
	Reasons     []string // sorted; for Refused, every refusal found
	// Findings explain each refusal for the owner, in words. They may name local paths, so they are
	// shown on the terminal, never in the plan's JSON.
	Findings   []string
	Checkpoint *Checkpoint // the interrupted setup, for Resume
	Identity   *Identity   // the identity the profile holds, if any
}

// InspectOptions tune Inspect.
type InspectOptions struct {
	// Held: the caller holds the profile's lock itself (a setup re-inspecting under its lock), so the
	// lock does not make the profile active.
	Held bool
}

type inspector struct {
	refusals []string
	findings []string
}

func (in *inspector) refuse(reason, finding string) {
	if !slices.Contains(in.refusals, reason) {
		in.refusals = append(in.refusals, reason)
	}
	in.findings = append(in.findings, finding)
}

// classify records err of a check of path: an unsafe file, or an inspection that could not conclude.
func (in *inspector) classify(path string, err error) {
	var unsafe *ErrUnsafe
	if errors.As(err, &unsafe) {
		in.refuse(ReasonUnsafePermissions, unsafe.Error())
		return
	}
	in.refuse(ReasonInspectionInconclusive, fmt.Sprintf("%s: %v", path, err))
}

// Inspect decides the disposition of profile p for target, reading only: it creates, changes and
// locks nothing.
func (s Store) Inspect(name string, target Target, opts InspectOptions) Inspection {
	p, err := s.Open(name)
	if err != nil {
		return Inspection{Disposition: Refused, Reasons: []string{ReasonInvalidProfileName}, Findings: []string{err.Error()}}
	}
	in := &inspector{}
	for _, dir := range []string{s.Root, filepath.Join(s.Root, "profiles")} {
		if err := checkParent(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			in.classify(dir, err)
		}
	}
	fi, err := os.Lstat(p.Dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if len(in.refusals) == 0 {
			return Inspection{Disposition: Create, Reasons: []string{ReasonProfileAbsent}}
		}
		return in.refused(nil, nil)
	case err != nil:
		in.classify(p.Dir, err)
		return in.refused(nil, nil)
	case fi.Mode()&fs.ModeSymlink != 0:
		in.refuse(ReasonUnsafePermissions, p.Dir+" is a symbolic link")
		return in.refused(nil, nil)
	case !fi.IsDir():
		in.refuse(ReasonInspectionInconclusive, p.Dir+" is not a directory")
		return in.refused(nil, nil)
	}
	if err := checkPrivate(p.Dir, fi); err != nil {
		in.classify(p.Dir, err)
	}
	if _, err := os.ReadDir(p.Dir); err != nil {
		in.classify(p.Dir, err)
		return in.refused(nil, nil)
	}
	present := map[string]bool{}
	unusable := false // a file that is not a regular file: nothing in it is read
	for _, f := range []string{IdentityFile, KeyFile, CheckpointFile, ConfigFile, HeartbeatFile, LockFile, SettingsLockFile, MCPStateFile} {
		path := p.Path(f)
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			in.classify(path, err)
			continue
		}
		present[f] = true
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			in.refuse(ReasonUnsafePermissions, path+" is a symbolic link")
			unusable = true
		case !fi.Mode().IsRegular():
			in.refuse(ReasonInspectionInconclusive, path+" is not a regular file")
			unusable = true
		default:
			if err := checkPrivate(path, fi); err != nil {
				in.classify(path, err)
			}
		}
	}
	for _, d := range []string{filepath.Join(p.Dir, RuntimeDir), p.RuntimeData(target.Runtime), filepath.Join(p.Dir, LogDir)} {
		fi, err := os.Lstat(d)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			in.classify(d, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			in.refuse(ReasonUnsafePermissions, d+" is a symbolic link")
		case !fi.IsDir():
			in.refuse(ReasonInspectionInconclusive, d+" is not a directory")
		default:
			if err := checkParent(d); err != nil {
				in.classify(d, err)
			}
		}
	}
	if !opts.Held {
		active, err := p.Active()
		switch {
		case err != nil:
			in.classify(p.Path(LockFile), err)
		case active:
			in.refuse(ReasonProfileActive, "a running svc-connector (a setup or an arena runner) holds this profile")
		}
	}
	if unusable {
		return in.refused(nil, nil)
	}

	var id *Identity
	if present[IdentityFile] {
		if id, err = p.ReadIdentity(); err != nil {
			in.refuse(ReasonInspectionInconclusive, err.Error())
			id = nil
		}
	}
	var cp *Checkpoint
	if present[CheckpointFile] {
		if cp, err = p.ReadCheckpoint(); err != nil {
			in.refuse(ReasonInspectionInconclusive, err.Error())
			cp = nil
		}
	}
	if present[ConfigFile] {
		if _, err := p.ReadConfig(); err != nil {
			in.refuse(ReasonInspectionInconclusive, err.Error())
		}
	}
	sameIdentity := func(handle, base string) bool { return handle == target.Handle && base == target.BaseURL }
	if id != nil && !sameIdentity(id.Handle, id.BaseURL) {
		in.refuse(ReasonIdentityConflict, fmt.Sprintf("the profile holds the identity of handle %q at %s", id.Handle, id.BaseURL))
	}
	if cp != nil && !sameIdentity(cp.Handle, cp.BaseURL) {
		in.refuse(ReasonIdentityConflict, fmt.Sprintf("the profile holds an interrupted setup of handle %q at %s", cp.Handle, cp.BaseURL))
	}
	pending := cp != nil && cp.State != StateComplete
	if pending && cp.Runtime != target.Runtime {
		in.refuse(ReasonCheckpointConflict, fmt.Sprintf("the interrupted setup is for runtime %q: resume it with that runtime", cp.Runtime))
	}
	switch {
	case id != nil && !present[KeyFile]:
		in.refuse(ReasonInspectionInconclusive, "the profile holds an identity without its key (key.pem)")
	case id == nil && cp == nil && present[KeyFile]:
		in.refuse(ReasonInspectionInconclusive, "the profile holds a key (key.pem) of no identity and no setup")
	case id == nil && cp != nil && !cp.State.Before(StateRedeemed):
		in.refuse(ReasonInspectionInconclusive, fmt.Sprintf("the setup checkpoint says %s, but the profile holds no identity", cp.State))
	case id != nil && pending && cp.State.Before(StateRedeemed):
		in.refuse(ReasonInspectionInconclusive, fmt.Sprintf("the profile holds an identity, but its setup checkpoint says %s", cp.State))
	case cp != nil && !cp.State.Before(StateKeyMade):
		if !present[KeyFile] {
			in.refuse(ReasonInspectionInconclusive, fmt.Sprintf("the setup checkpoint says %s, but the profile holds no key", cp.State))
		} else if key, err := p.LoadKey(); err != nil {
			in.classify(p.Path(KeyFile), err)
		} else if PublicKey(key) != cp.PublicKey {
			in.refuse(ReasonInspectionInconclusive, "the profile's key is not the key its setup checkpoint made")
		}
	}
	if len(in.refusals) > 0 {
		return in.refused(cp, id)
	}
	switch {
	case pending:
		return Inspection{Disposition: Resume, Reasons: []string{ReasonCheckpoint + string(cp.State)}, Checkpoint: cp, Identity: id}
	case id != nil:
		return Inspection{Disposition: Adopt, Reasons: []string{ReasonSameIdentity}, Checkpoint: cp, Identity: id}
	default:
		return Inspection{Disposition: Adopt, Reasons: []string{ReasonProfileUnbound}}
	}
}

func (in *inspector) refused(cp *Checkpoint, id *Identity) Inspection {
	r := slices.Clone(in.refusals)
	slices.Sort(r)
	return Inspection{Disposition: Refused, Reasons: r, Findings: in.findings, Checkpoint: cp, Identity: id}
}
