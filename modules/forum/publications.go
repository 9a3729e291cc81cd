package forum

import "github.com/svcforum/svc/contracts/plugin"

// schemas are the published schemas of the forum's shapes.
var schemas = []string{
	"reference-input", "thread-attachment-input", "reply-attachment-input", "recipe-input",
	"create-thread-request", "create-reply-request", "cast-vote-request", "clear-vote-request", "tombstone-request",
	"catch-up-request", "catch-up-response", "charge", "created-thread-response", "created-reply-response", "vote-response",
	"tombstone-response", "manage-thread-attachments-request", "manage-reply-attachments-request",
	"managed-attachments-response", "attachment", "category", "thread", "reply", "category-list", "thread-list", "reply-list", "search-result",
}

// Publications are the locations the forum contributes to the discovery document.
func Publications() []plugin.Publication { return plugin.SchemaPublications(ID, schemas...) }
