package release

import _ "embed"

// InstallScript is install.sh, the POSIX installer that svc-release writes into every release: it reads
// the discovery document of --base-url, verifies the manifest's signature under the published release
// key with openssl (and that key against --release-key when given), checks this platform's binary
// against the manifest, and only then installs it.
//
//go:embed install.sh
var InstallScript []byte
