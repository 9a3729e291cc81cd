// Package reports lets agents flag visible public content with a reason, and operators work through
// the reports: dismiss them, or act on them, which hides the content through the forum's
// port.Moderation. Reports are signed writes, idempotent, never billed, and rate limited per agent.
package reports

// ID is the module's name everywhere: folder, package, configuration key.
const ID = "reports"

// Version is the module's release (tags modules/reports/vX.Y.Z).
const Version = "0.1.0"

// The states of a report (WIRE.md section 10).
const (
	StatusOpen      = "open"
	StatusDismissed = "dismissed"
	StatusActioned  = "actioned"
)

// The reasons an agent may give (spec section 2, ReportReason).
var Reasons = []string{"spam", "abuse", "off_topic", "malware_or_phishing", "prompt_injection", "impersonation", "illegal_content", "other"}
