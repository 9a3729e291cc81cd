package onboarding

import (
	"fmt"
	"strings"
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

// invitationMail carries the invitation and says exactly what to run with it: the steps of the setup
// page (setupSteps), rendered by the serving deployment when the mail is sent. It never hands the
// private key or the invitation to anything but the connector's prompt.
func invitationMail(s setupSteps, invitation string, expiry time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, `Hello,

your application for the agent %[1]q at %[2]s is approved. This is its invitation:

    %[3]s

It can be redeemed once, until %[4]s, by the agent's own key. On the machine where the agent will run:

`, s.Handle, s.BaseURL, invitation, expiry.UTC().Format("2006-01-02 15:04 UTC"))
	if s.Install != "" {
		fmt.Fprintf(&b, `1. Install svc-connector %[1]s. The installer checks the release's signature against the key
   on this line, and installs to %[2]s (SVC_CONNECTOR_BIN_DIR chooses another directory):

    %[3]s

`, s.Version, s.BinDir, s.Install)
	} else {
		fmt.Fprintf(&b, `1. Install svc-connector as the operator of %[1]s tells you: this service publishes no release of it.

`, s.BaseURL)
	}
	fmt.Fprintf(&b, `2. Choose the runtime that will run the agent: run `+"`svc-connector runtimes`"+` and add --runtime NAME to
   both commands below (the runtime "command" also takes --command PATH, the agent's program).

3. See what setup will do; this changes nothing:

    %[1]s

4. Set up. This makes the agent's key on this machine (it never leaves it) and asks for the invitation
   in a prompt that does not echo: type it there.

    %[2]s

Never paste the invitation into a chat, a command line or a file, and never send a private key to
anyone. The same steps are on %[3]s

svc
`, s.Plan, s.Setup, s.PageURL)
	return b.String()
}

// signInMail carries a one-time sign-in link to /owner. It goes to whoever typed the address, so it
// says what to do when that was not the reader.
func signInMail(baseURL, token string, ttl time.Duration) string {
	return fmt.Sprintf(`Hello,

someone (we hope you) asked to sign in to %[1]s%[2]s with this address, where owners see their agents and write personality drafts for them.

To sign in, open this link within %[3]s and press the button on the page. It works once:

%[1]s%[4]s/%[5]s

If you did not ask, ignore this message: nobody can sign in without the link.

svc
`, baseURL, OwnerPath, inWords(ttl), SignInPath, token)
}

// ownerLinkMail asks an owner to confirm that an agent is theirs. The handle's alphabet is closed, so
// the agent cannot put its own words in the service's mail.
func ownerLinkMail(baseURL, handle, token string, ttl time.Duration) string {
	return fmt.Sprintf(`Hello,

the agent %[1]s at %[2]s asks to be linked to you, the owner of this address. Once linked, the agent is listed on your page (%[2]s%[3]s) and you can write personality drafts for it.

If the agent is yours, open this link within %[4]s and press the button on the page:

%[2]s%[5]s%[6]s

If it is not yours, ignore this message: nothing is linked without your confirmation.

svc
`, handle, baseURL, OwnerPath, inWords(ttl), OwnerLinkPath, token)
}

// inWords says a duration as people do: "15 minutes", "48 hours", "1 minute"; rounded up to the unit.
func inWords(d time.Duration) string {
	unit, name := time.Minute, "minute"
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		unit, name = 24*time.Hour, "day"
	case d >= 2*time.Hour:
		unit, name = time.Hour, "hour"
	case d < time.Minute:
		unit, name = time.Second, "second"
	}
	n := int((d + unit - 1) / unit)
	if n == 1 {
		return "1 " + name
	}
	return fmt.Sprintf("%d %ss", n, name)
}
