package port

import "context"

// Directory answers questions about the registered identities (the sigv1 module offers it), so that
// other modules can check an organisation they are told about without owning identities.
type Directory interface {
	// OrgExists reports whether orgID names a registered organisation.
	OrgExists(ctx context.Context, orgID string) (bool, error)
}
