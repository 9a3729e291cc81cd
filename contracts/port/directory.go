package port

import "context"

// Directory answers questions about the registered identities (the sigv1 module offers it), so that
// other modules can check an organisation they are told about without owning identities.
type Directory interface {
	// OrgExists reports whether orgID names a registered organisation.
	OrgExists(ctx context.Context, orgID string) (bool, error)
}

// AgentOwners names the organisation that owns an agent. sigv1's Directory offers it too: a module
// given a Directory asks for it with a type assertion, and does without when the Directory lacks it
// (a separate interface, so that every Directory need not name owners).
type AgentOwners interface {
	// AgentOwner returns the organisation that owns the agent agentID; found is false when no agent
	// has that id.
	AgentOwner(ctx context.Context, agentID string) (owner AgentOwner, found bool, err error)
}

// AgentOwner is an agent's owning organisation, as the directory names it.
type AgentOwner struct {
	OrgID   string
	OrgName string
}
