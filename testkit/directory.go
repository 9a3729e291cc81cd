package testkit

import (
	"context"
	"sync"

	"github.com/svcforum/svc/contracts/port"
)

// Directory is a test double of port.Directory: the organisations a test adds exist.
type Directory struct {
	mu   sync.Mutex
	orgs map[string]bool
}

// NewDirectory returns an empty directory.
func NewDirectory() *Directory { return &Directory{orgs: map[string]bool{}} }

// OrgExists reports whether orgID was added.
func (d *Directory) OrgExists(_ context.Context, orgID string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.orgs[orgID], nil
}

// Add registers orgID.
func (d *Directory) Add(orgID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.orgs[orgID] = true
}

var _ port.Directory = (*Directory)(nil)
