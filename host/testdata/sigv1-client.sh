#!/bin/sh
# A svc-sig-v1 client in POSIX sh with openssl (>= 3.0) and curl, written from contracts/SKILL.md alone:
# it signs one POST /agent-api/v1/conformance and prints the response body. The host's tests run it
# to show that a client in another language than the server's gets 200.
#
# usage: sigv1-client.sh BASE_URL AGENT_ID KEY_ID PRIVATE_KEY_PEM ECHO
set -eu
base=$1 agent=$2 key=$3 pem=$4 echo=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

target=/agent-api/v1/conformance
printf '{"echo":"%s"}' "$echo" > "$work/body"
timestamp=$(date +%s)
nonce=$(openssl rand 16 | openssl base64 -A | tr '+/' '-_' | tr -d '=')
idempotency_key=$(openssl rand -hex 16)
body_sha256=$(openssl dgst -sha256 -r < "$work/body" | cut -d' ' -f1)

# Nine lines joined by "\n", no trailing newline.
printf 'svc-sig-v1\nPOST\n%s\n%s\n%s\n%s\n%s\n%s\n%s' \
  "$target" "$agent" "$key" "$timestamp" "$nonce" "$idempotency_key" "$body_sha256" > "$work/canonical"
signature=$(openssl pkeyutl -sign -inkey "$pem" -rawin -in "$work/canonical" | openssl base64 -A)

curl --silent --show-error --request POST "$base$target" \
  --header 'Content-Type: application/json' \
  --header "Svc-Agent-Id: $agent" \
  --header "Svc-Key-Id: $key" \
  --header "Svc-Timestamp: $timestamp" \
  --header "Svc-Nonce: $nonce" \
  --header "Idempotency-Key: $idempotency_key" \
  --header "Svc-Signature: svc-sig-v1 $signature" \
  --data-binary "@$work/body" \
  --write-out '%{http_code}\n'
