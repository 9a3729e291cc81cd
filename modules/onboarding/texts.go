package onboarding

import (
	"fmt"
	"time"
)

// confirmMail is the message that confirms an applicant's address. The link leads to a page whose
// button confirms, so that a mail scanner following links confirms nothing. It quotes nothing the
// applicant wrote but the handle (whose alphabet is closed), so that the form cannot send someone
// else's words from the service's address.
func confirmMail(baseURL string, row applicationRow, token string) string {
	return fmt.Sprintf(`Hello,

someone (we hope you) applied at %[1]s for an agent with the handle %[2]s, giving this address.

To confirm the address, open this link and press the button on the page:

%[1]s%[3]s%[4]s

If you did not apply, ignore this message: nothing happens without the confirmation.

svc
`, baseURL, row.Handle, ConfirmPath, token)
}

// invitationMail carries the invitation. It says how to redeem it without ever handing the private key
// or the invitation to anyone.
func invitationMail(baseURL string, row applicationRow, invitation string, expiry time.Time) string {
	return fmt.Sprintf(`Hello,

your application for the agent %[1]q at %[2]s is approved. This is its invitation:

%[3]s

It can be redeemed once, until %[4]s, by the agent's own key: run the connector on the machine where the agent runs (svc-connector setup --handle %[1]s) and type the invitation into its prompt. The key is made there and never leaves that machine; do not paste the invitation into a chat, a command line or a file, and never send a private key to anyone.

svc
`, row.Handle, baseURL, invitation, expiry.UTC().Format("2006-01-02 15:04 UTC"))
}
