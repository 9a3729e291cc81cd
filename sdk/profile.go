package sdk

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// A profile is a directory holding one agent identity, the format the connector writes and every agent
// program on the machine reads (README.md, "Profiles"):
//
//	identity.json  {"base_url": ..., "handle": ..., "agent_id": ..., "key_id": ..., "org_id": ...,
//	                "agent_api": "https://agents.example/agent-api/v1"}
//	key.pem        the Ed25519 private key, PKCS#8 PEM ("PRIVATE KEY"), mode 0600
const (
	ProfileIdentityFile = "identity.json"
	ProfileKeyFile      = "key.pem"
)

// ProfileIdentity is identity.json: the redeemed identity and the service it belongs to. The private
// key is in key.pem beside it, never here.
type ProfileIdentity struct {
	BaseURL  string `json:"base_url"`
	Handle   string `json:"handle"`
	AgentID  string `json:"agent_id"`
	KeyID    string `json:"key_id"`
	OrgID    string `json:"org_id"`
	AgentAPI string `json:"agent_api"`
}

// LoadIdentity reads the profile in profileDir: the identity to give New, and the service's base URL.
// The key file is opened without following a symbolic link (O_NOFOLLOW on unix) and the file opened is
// the file checked and read. It refuses, with an error that names the file but never shows the key, a
// key file that is not a regular file (a symbolic link included), that group or others may read or
// write (on unix: chmod 600 it), that is not a PKCS#8 "PRIVATE KEY" PEM block of an Ed25519 key, and an
// identity.json that lacks a member or names an agent plane URL not ending in /agent-api/v1.
func LoadIdentity(profileDir string) (id *Identity, baseURL string, err error) {
	raw, err := os.ReadFile(filepath.Join(profileDir, ProfileIdentityFile))
	if err != nil {
		return nil, "", fmt.Errorf("svc: profile: %w", err)
	}
	var p ProfileIdentity
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, "", fmt.Errorf("svc: profile: %s is not the identity JSON: %w", filepath.Join(profileDir, ProfileIdentityFile), err)
	}
	for name, v := range map[string]string{"base_url": p.BaseURL, "handle": p.Handle, "agent_id": p.AgentID, "key_id": p.KeyID, "org_id": p.OrgID, "agent_api": p.AgentAPI} {
		if v == "" {
			return nil, "", fmt.Errorf("svc: profile: %s has no %s", filepath.Join(profileDir, ProfileIdentityFile), name)
		}
	}
	if _, err := parseBase(p.BaseURL); err != nil {
		return nil, "", fmt.Errorf("svc: profile: base_url: %w", err)
	}
	if _, err := agentAPIURL(p.AgentAPI); err != nil {
		return nil, "", fmt.Errorf("svc: profile: %w", err)
	}
	if err := checkIDs(p.AgentID, p.KeyID); err != nil {
		return nil, "", fmt.Errorf("svc: profile: %w", err)
	}
	key, err := readKey(filepath.Join(profileDir, ProfileKeyFile))
	if err != nil {
		return nil, "", err
	}
	return &Identity{AgentID: p.AgentID, KeyID: p.KeyID, PrivateKey: key, AgentAPI: p.AgentAPI, Handle: p.Handle, OrgID: p.OrgID}, p.BaseURL, nil
}

// maxKeyFile bounds what readKey reads: a PEM Ed25519 key is about 120 bytes.
const maxKeyFile = 64 << 10

// readKey reads a PKCS#8 PEM Ed25519 key from a file only its owner may read. It opens the file first,
// never following a symbolic link (on unix), and checks the file it opened, so that the file checked is
// the file read, whatever the path names by then.
func readKey(path string) (ed25519.PrivateKey, error) { return readKeyFile(path, nil) }

// readKeyFile is readKey, running opened (when not nil: tests) once the file is open, before it is
// checked and read.
func readKeyFile(path string, opened func()) (ed25519.PrivateKey, error) {
	f, err := openKeyFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if opened != nil {
		opened()
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("svc: profile: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("svc: profile: the key file %s is not a regular file", path)
	}
	if ownerOnlyModes() && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("svc: profile: the key file %s may be read or written by others (mode %04o): make it readable by its owner only (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("svc: profile: reading %s: %w", path, err)
	}
	if len(raw) > maxKeyFile {
		return nil, fmt.Errorf("svc: profile: the key file %s is larger than a key", path)
	}
	return parseKey(path, raw)
}

// parseKey reads the PKCS#8 PEM Ed25519 key of the file at path, never showing it in an error.
func parseKey(path string, raw []byte) (ed25519.PrivateKey, error) {
	block, rest := pem.Decode(raw)
	if block == nil || block.Type != "PRIVATE KEY" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("svc: profile: the key file %s is not one PEM block of type PRIVATE KEY", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("svc: profile: the key file %s does not hold a PKCS#8 key", path)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("svc: profile: the key file %s holds a %T, not an Ed25519 key", path, k)
	}
	return key, nil
}

// ownerOnlyModes reports whether file modes say who may read a file (not on Windows or Plan 9).
func ownerOnlyModes() bool { return runtime.GOOS != "windows" && runtime.GOOS != "plan9" }

// WriteIdentity writes the profile of a redeemed identity into profileDir (made with mode 0700 when
// missing): key.pem, then identity.json, so that identity.json exists only once the key does. key.pem
// is never replaced: it is created, mode 0600, only where none exists (written to a temporary file,
// synced, then hard-linked to its name, which fails when the name exists; where the file system has no
// hard links, created with O_EXCL), and a key.pem already there must hold this very key (a connector
// resuming an interrupted setup), else WriteIdentity fails and changes nothing. identity.json is written
// to a temporary file and renamed over its name, so that a reader never sees half of either file.
// agent_api is the redemption's edge channel (its only channel when it names one). It refuses to
// replace a profile of another agent or key: remove that profile first.
func WriteIdentity(profileDir string, baseURL string, r *Redemption, key ed25519.PrivateKey) error {
	if r == nil || r.AgentID == "" || r.KeyID == "" || r.OrgID == "" || r.Handle == "" {
		return errors.New("svc: profile: the redemption is incomplete")
	}
	if len(key) != ed25519.PrivateKeySize {
		return errors.New("svc: profile: the private key must be an ed25519.PrivateKey")
	}
	base, err := parseBase(baseURL)
	if err != nil {
		return fmt.Errorf("svc: profile: base URL: %w", err)
	}
	agentAPI, err := r.agentAPI("")
	if err != nil {
		return fmt.Errorf("svc: profile: %w", err)
	}
	// What LoadIdentity would refuse is not written: the redemption's answer is not usable.
	if _, err := agentAPIURL(agentAPI); err != nil {
		return fmt.Errorf("svc: profile: the redemption's %w", err)
	}
	if err := checkIDs(r.AgentID, r.KeyID); err != nil {
		return fmt.Errorf("svc: profile: the redemption's %w", err)
	}
	if err := os.MkdirAll(profileDir, 0o700); err != nil {
		return fmt.Errorf("svc: profile: %w", err)
	}
	if old, err := os.ReadFile(filepath.Join(profileDir, ProfileIdentityFile)); err == nil {
		var p ProfileIdentity
		if json.Unmarshal(old, &p) == nil && (p.AgentID != r.AgentID || p.KeyID != r.KeyID) {
			return fmt.Errorf("svc: profile: %s holds another identity (agent %s, key %s): choose another profile or remove it", profileDir, p.AgentID, p.KeyID)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("svc: profile: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("svc: profile: encoding the key: %w", err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	doc, err := json.MarshalIndent(ProfileIdentity{BaseURL: base.String(), Handle: r.Handle, AgentID: r.AgentID, KeyID: r.KeyID, OrgID: r.OrgID, AgentAPI: agentAPI}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeKey(profileDir, pemKey, key); err != nil {
		return err
	}
	return writeAtomic(profileDir, ProfileIdentityFile, append(doc, '\n'))
}

// writeKey creates dir/key.pem holding pemKey, or, when one exists, checks that it holds key. It never
// replaces an existing file.
func writeKey(dir string, pemKey []byte, key ed25519.PrivateKey) error {
	path := filepath.Join(dir, ProfileKeyFile)
	err := createExclusive(dir, ProfileKeyFile, pemKey)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	held, err := readKey(path)
	if err != nil {
		return fmt.Errorf("svc: profile: %s already holds a key file, which cannot be used (%w): remove the profile or choose another", dir, err)
	}
	if !held.Equal(key) {
		return fmt.Errorf("svc: profile: %s already holds another key (%s): it is never replaced; choose another profile or remove it", dir, path)
	}
	return nil
}

// createExclusive creates dir/name with data and mode 0600, failing with an error that wraps
// fs.ErrExist when the name exists. The data is written to a temporary file, synced and hard-linked to
// its name, so that a reader never sees half of it; where the file system has no hard links, the file is
// created with O_EXCL and written in place.
func createExclusive(dir, name string, data []byte) error {
	target := filepath.Join(dir, name)
	tmp, err := writeTemp(dir, name, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	linkErr := os.Link(tmp, target)
	switch {
	case linkErr == nil:
		syncDir(dir)
		return nil
	case errors.Is(linkErr, fs.ErrExist):
		return fmt.Errorf("svc: profile: %s: %w", target, fs.ErrExist)
	}
	// No hard links here (some file systems, some platforms): create the name itself, exclusively.
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("svc: profile: %s: %w", target, fs.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("svc: profile: %w (and a hard link failed: %v)", err, linkErr)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(target)
		return fmt.Errorf("svc: profile: writing %s: %w", name, err)
	}
	syncDir(dir)
	return nil
}

// writeAtomic writes data to dir/name through a temporary file of mode 0600 in dir, synced, then
// renamed; the directory is synced after (where the platform allows it).
func writeAtomic(dir, name string, data []byte) error {
	tmp, err := writeTemp(dir, name, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("svc: profile: %w", err)
	}
	syncDir(dir)
	return nil
}

// writeTemp writes data to a new temporary file of mode 0600 in dir, synced and closed, and returns its
// path; on failure nothing is left.
func writeTemp(dir, name string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("svc: profile: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil && ownerOnlyModes() {
		return "", fmt.Errorf("svc: profile: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return "", fmt.Errorf("svc: profile: writing %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("svc: profile: writing %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("svc: profile: writing %s: %w", name, err)
	}
	ok = true
	return tmp, nil
}

// syncDir syncs a directory after a name in it changed, where the platform allows it (best effort).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
