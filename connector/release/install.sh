#!/bin/sh
# Installs svc-connector, the owner's local setup tool of an svc forum, after verifying the release:
#
#   curl -fsSL https://forum.example/releases/svc-connector/install.sh | sh -s -- --base-url https://forum.example
#   sh install.sh --base-url https://forum.example [--release-key KEY] [--bin-dir DIR]
#
# It reads the service's discovery document (/.well-known/svc), downloads the release key and the signed
# manifest it names, verifies the manifest's Ed25519 signature under that key with openssl (and, given
# --release-key, that the service publishes exactly that key), downloads this platform's binary, checks
# its SHA-256 against the manifest, and installs it to --bin-dir (default $SVC_CONNECTOR_BIN_DIR, else
# $HOME/.local/bin) with mode 0755. Any mismatch stops it with a non-zero exit, and nothing is installed.
#
# Options (and environment):
#   --base-url URL     the service's base URL (SVC_BASE_URL); never a status link (/onboarding/status/...)
#   --release-key KEY  refuse unless the service publishes exactly this release key (SVC_RELEASE_KEY);
#                      get it from the service's operator, not from the service
#   --bin-dir DIR      where to install (SVC_CONNECTOR_BIN_DIR; default $HOME/.local/bin)
#
# Needs: curl or wget, openssl 3.0 or later, and sha256sum, shasum or openssl for SHA-256.
# The manifest is a golang.org/x/mod/sumdb/note signed note: see the connector's release package.
set -eu

say() { printf 'svc-connector install: %s\n' "$*" >&2; }
die() {
	say "refused: $*"
	exit 1
}

usage() {
	cat <<'USAGE'
usage: install.sh --base-url URL [--release-key KEY] [--bin-dir DIR]

Installs svc-connector from the service at URL after verifying the release: the manifest's signature
under the release key the service publishes (which must be KEY when --release-key is given), and the
binary's SHA-256 against the manifest. Any mismatch installs nothing and exits non-zero.

  --base-url URL     the service's base URL (or SVC_BASE_URL)
  --release-key KEY  refuse unless the service publishes exactly this release key (or SVC_RELEASE_KEY)
  --bin-dir DIR      where to install (or SVC_CONNECTOR_BIN_DIR; default $HOME/.local/bin)
USAGE
}

base_url=${SVC_BASE_URL:-}
pin=${SVC_RELEASE_KEY:-}
bin_dir=${SVC_CONNECTOR_BIN_DIR:-}
while [ $# -gt 0 ]; do
	case $1 in
	--base-url | --release-key | --bin-dir)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--base-url) base_url=$2 ;;
		--release-key) pin=$2 ;;
		--bin-dir) bin_dir=$2 ;;
		esac
		shift 2
		;;
	--base-url=*) base_url=${1#*=} && shift ;;
	--release-key=*) pin=${1#*=} && shift ;;
	--bin-dir=*) bin_dir=${1#*=} && shift ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done

[ -n "$base_url" ] || die "give the service's base URL: --base-url https://forum.example"
# An application's status link (the page or its API, in any case) is refused first, and never echoed:
# it is a secret.
case $(printf '%s' "$base_url" | tr '[:upper:]' '[:lower:]') in
*/onboarding/status/* | */onboarding/status | */onboarding/api/v1/status/* | */onboarding/api/v1/status)
	die "--base-url is an application's secret status link, not the service's base URL: never share it; give the base URL (for example https://forum.example)"
	;;
esac
case $base_url in
http://* | https://*) ;;
*) die "--base-url $base_url is not an http(s) URL" ;;
esac
base_url=${base_url%/}
if [ -z "$bin_dir" ]; then
	[ -n "${HOME:-}" ] || die "set --bin-dir or SVC_CONNECTOR_BIN_DIR (HOME is not set)"
	bin_dir=$HOME/.local/bin
fi

for tool in openssl od awk sed tr wc cmp tail; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is needed and not installed"
done
openssl pkeyutl -help 2>&1 | grep -q -- '-rawin' || die "openssl 3.0 or later is needed (pkeyutl -rawin), found $(openssl version)"

# fetch URL FILE: GET URL into FILE, failing on any status but 2xx.
fetch() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --proto '=http,https' -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1"
	else
		die "curl or wget is needed and neither is installed"
	fi
}

# sha256 < FILE: the lowercase hex SHA-256.
sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum | cut -c1-64
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 | cut -c1-64
	else
		openssl dgst -sha256 -r | cut -c1-64
	fi
}

size() { wc -c <"$1" | tr -d ' '; }
hexbytes() { od -An -tx1 "$@" | tr -d ' \n'; }

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t svc-connector)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The discovery document names the release's locations (read with sed: no jq needed).
fetch "$base_url/.well-known/svc" "$tmp/discovery" || die "cannot read the discovery document at $base_url/.well-known/svc"
location() {
	tr ',{}' '\n\n\n' <"$tmp/discovery" |
		sed -n "s/^[[:space:]]*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\"[[:space:]]*\$/\1/p" | sed -n '1p'
}
manifest_url=$(location connector_release_manifest)
key_url=$(location connector_release_key)
[ -n "$manifest_url" ] && [ -n "$key_url" ] ||
	die "the service at $base_url publishes no connector release (its discovery document names no connector_release_manifest or connector_release_key)"
for u in "$manifest_url" "$key_url"; do
	case $u in
	http://* | https://*) ;;
	*) die "the discovery document names $u, not an http(s) URL" ;;
	esac
done

# The release key: one line, a note verifier key <name>+<8 hex digits of key hash>+<base64 of 0x01 and
# the 32-byte Ed25519 public key>.
fetch "$key_url" "$tmp/release-key" || die "cannot download the release key $key_url"
[ "$(size "$tmp/release-key")" -le 4096 ] || die "the release key at $key_url is too long"
key=$(cat "$tmp/release-key")
case $key in
*[!A-Za-z0-9+/=._-]* | '') die "the release key at $key_url is malformed" ;;
esac
if [ -n "$pin" ] && [ "$key" != "$pin" ]; then
	die "the service publishes the release key $key, not the key given with --release-key ($pin)"
fi
key_name=${key%%+*}
rest=${key#*+}
key_hash=${rest%%+*}
key_b64=${rest#*+}
printf '%s\n' "$key_hash" | grep -Eq '^[0-9a-f]{8}$' || die "the release key $key is malformed"
printf '%s' "$key_b64" | openssl base64 -d -A >"$tmp/key.bin" 2>/dev/null || die "the release key $key is malformed"
[ "$(size "$tmp/key.bin")" = 33 ] && [ "$(hexbytes -N1 "$tmp/key.bin")" = 01 ] &&
	[ "$(openssl base64 -A <"$tmp/key.bin")" = "$key_b64" ] ||
	die "the release key $key is not an Ed25519 note key"
[ "$( (printf '%s\n' "$key_name" && cat "$tmp/key.bin") | sha256 | cut -c1-8)" = "$key_hash" ] ||
	die "the release key $key does not match its own hash"
# The public key as PEM: the DER SubjectPublicKeyInfo of Ed25519 is 302a300506032b6570032100 and the key.
tail -c 32 "$tmp/key.bin" >"$tmp/pub.raw"
{ printf '\060\052\060\005\006\003\053\145\160\003\041\000' && cat "$tmp/pub.raw"; } >"$tmp/pub.der"
[ "$(size "$tmp/pub.der")" = 44 ] || die "cannot build the public key (printf wrote no NUL byte)"
{ echo '-----BEGIN PUBLIC KEY-----' && openssl base64 -A <"$tmp/pub.der" && echo && echo '-----END PUBLIC KEY-----'; } >"$tmp/pub.pem"

# The manifest: the signed text, one blank line, exactly one signature line
# "— <key name> <base64 of the 4-byte key hash and the 64-byte signature of the text>".
fetch "$manifest_url" "$tmp/manifest" || die "cannot download the manifest $manifest_url"
[ "$(size "$tmp/manifest")" -le 1048576 ] || die "the manifest at $manifest_url is too long"
sed '/^$/,$d' "$tmp/manifest" >"$tmp/text"
sed '1,/^$/d' "$tmp/manifest" >"$tmp/signature"
[ -s "$tmp/text" ] && [ "$(wc -l <"$tmp/signature" | tr -d ' ')" = 1 ] ||
	die "the manifest at $manifest_url is not a signed note with exactly one signature"
{ cat "$tmp/text" && echo && cat "$tmp/signature"; } | cmp -s - "$tmp/manifest" ||
	die "the manifest at $manifest_url is not a signed note with exactly one signature"
sig_line=$(cat "$tmp/signature")
dash=$(printf '\342\200\224')
case $sig_line in
"$dash "*) ;;
*) die "the manifest at $manifest_url has a malformed signature line" ;;
esac
rest=${sig_line#"$dash "}
sig_name=${rest%% *}
sig_b64=${rest#* }
[ "$sig_name" = "$key_name" ] || die "the manifest is signed by $sig_name, not by the release key $key_name"
case $sig_b64 in
*[!A-Za-z0-9+/=]* | '') die "the manifest's signature is malformed" ;;
esac
printf '%s' "$sig_b64" | openssl base64 -d -A >"$tmp/sig.bin" 2>/dev/null || die "the manifest's signature is malformed"
[ "$(size "$tmp/sig.bin")" = 68 ] && [ "$(openssl base64 -A <"$tmp/sig.bin")" = "$sig_b64" ] ||
	die "the manifest's signature is malformed"
[ "$(hexbytes -N4 "$tmp/sig.bin")" = "$key_hash" ] || die "the manifest is not signed by the release key $key_name+$key_hash"
tail -c 64 "$tmp/sig.bin" >"$tmp/sig.raw"
openssl pkeyutl -verify -pubin -inkey "$tmp/pub.pem" -rawin -in "$tmp/text" -sigfile "$tmp/sig.raw" >/dev/null 2>&1 ||
	die "the manifest's signature does not verify under the release key $key: it was changed, or not signed by that key"

# The verified text: "svc-connector <version>", "runtimes ...", then "<sha256>  <file>" lines.
version=$(sed -n '1s/^svc-connector \([0-9A-Za-z][0-9A-Za-z.+_-]*\)$/\1/p' "$tmp/text")
[ -n "$version" ] || die "the manifest does not name a version"
ext=
case $(uname -s) in
Linux) os=linux ;;
Darwin) os=darwin ;;
MINGW* | MSYS* | CYGWIN*) os=windows ext=.exe ;;
*) die "no svc-connector is released for $(uname -s)" ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no svc-connector is released for $(uname -m)" ;;
esac
file=svc-connector_${os}_${arch}${ext}
want=$(awk -v f="$file" 'NR > 2 && NF == 2 && $2 == f { print $1 }' "$tmp/text")
printf '%s\n' "$want" | grep -Eq '^[0-9a-f]{64}$' || die "the release $version has no $file"

fetch "${manifest_url%/*}/$file" "$tmp/$file" || die "cannot download ${manifest_url%/*}/$file"
got=$(sha256 <"$tmp/$file")
[ "$got" = "$want" ] || die "$file has SHA-256 $got, but the signed manifest says $want: it was changed"

# Verified: install it beside its destination, then rename, so that the old one stays on any failure.
mkdir -p "$bin_dir" || die "cannot create $bin_dir"
dest=$bin_dir/svc-connector$ext
stage=$bin_dir/.svc-connector.$$.new
if ! { cp "$tmp/$file" "$stage" && chmod 0755 "$stage" && mv -f "$stage" "$dest"; }; then
	rm -f "$stage"
	die "cannot install $dest"
fi
say "installed svc-connector $version at $dest (verified under the release key $key)"
case :${PATH:-}: in
*:"$bin_dir":*) ;;
*) say "$bin_dir is not on your PATH: add it, or run $dest" ;;
esac
