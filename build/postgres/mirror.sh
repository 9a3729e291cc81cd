# The Debian mirror build/postgres/build.sh bootstraps from: the machine's own package sources, never a
# mirror named here. Sourced by build.sh (and by host/buildscripts_test.go, with fixture directories).
# shellcheck shell=bash

# debian_mirror SUITE [APT_ETC]: prints the first URI, in APT's order, of a source of binary packages
# ("deb") for SUITE itself (not SUITE-updates or SUITE-security) in APT_ETC (default /etc/apt):
# sources.list, then sources.list.d/*.list (one-line style) and *.sources (deb822 style) by name.
# Stanzas with "Enabled: no", and URIs debootstrap cannot fetch from (only http, https and file are
# taken), are passed over; comments are ignored. $SVC_DEBIAN_MIRROR, when set, is taken as it is.
# Fails, saying what was read, when there is none.
debian_mirror() {
	local suite=$1 etc=${2:-/etc/apt} m
	if [ -n "${SVC_DEBIAN_MIRROR:-}" ]; then
		echo "${SVC_DEBIAN_MIRROR%/}"
		return 0
	fi
	# APT reads sources.list, then the directory's files in the order of their names, whatever their
	# style.
	local files=() f
	[ -f "$etc/sources.list" ] && files+=("$etc/sources.list")
	while IFS= read -r f; do
		[ -f "$f" ] && files+=("$f")
	done < <(printf '%s\n' "$etc"/sources.list.d/*.list "$etc"/sources.list.d/*.sources | LC_ALL=C sort)
	m=
	for f in "${files[@]}"; do
		case "$f" in
		*.sources) m=$(deb822_uri "$suite" <"$f") ;;
		*) m=$(one_line_uri "$suite" <"$f") ;;
		esac
		[ -n "$m" ] && break
	done
	if [ -z "$m" ]; then
		printf 'no package source for Debian %s in %s/sources.list or %s/sources.list.d/*.list, *.sources: add one there (deb <mirror> %s main), or name a mirror in SVC_DEBIAN_MIRROR\n' \
			"$suite" "$etc" "$etc" "$suite" >&2
		return 1
	fi
	echo "${m%/}"
}

# one_line_uri SUITE < FILE: the first URI of a "deb URI SUITE COMPONENT..." line; an option list in
# brackets may follow the type.
one_line_uri() {
	awk -v suite="$1" '
		{ sub(/#.*/, "") }
		$1 != "deb" { next }
		{
			line = $0
			sub(/^[ \t]*deb[ \t]+/, "", line)
			if (line ~ /^\[/) { if (!sub(/^\[[^]]*\][ \t]*/, "", line)) next }
			n = split(line, f, /[ \t]+/)
			if (n >= 2 && f[2] == suite && f[1] ~ /^(https?|file):\/\//) { print f[1]; exit }
		}'
}

# deb822_uri SUITE < FILE: the first URI of a stanza whose Types has deb and Suites has SUITE. Field
# names are matched in any case; a line starting with a space or a tab continues the field above it.
deb822_uri() {
	awk -v suite="$1" '
		function flush(   i, n, u, t, s) {
			if (tolower(fields["enabled"]) != "no" && (" " fields["types"] " ") ~ / deb / && (" " fields["suites"] " ") ~ (" " suite " ")) {
				n = split(fields["uris"], u, " ")
				for (i = 1; i <= n; i++) if (u[i] ~ /^(https?|file):\/\//) { print u[i]; found = 1; exit }
			}
			delete fields
			key = ""
		}
		/^#/ { next }
		/^[ \t]*$/ { flush(); next }
		/^[ \t]/ { if (key != "") { v = $0; gsub(/[ \t]+/, " ", v); fields[key] = fields[key] v } next }
		{
			i = index($0, ":")
			if (i == 0) next
			key = tolower(substr($0, 1, i - 1))
			v = substr($0, i + 1)
			gsub(/[ \t]+/, " ", v)
			sub(/^ /, "", v)
			sub(/ $/, "", v)
			fields[key] = v
		}
		END { if (!found) flush() }'
}
