#!/bin/bash
# Entrypoint of the locally built svc-postgres image (see build.sh in this directory).
#
# It behaves like the official postgres image's docker-entrypoint.sh as far as svc and
# testcontainers-go's modules/postgres need:
#   - POSTGRES_USER (default postgres), POSTGRES_PASSWORD (required unless
#     POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_DB (default: the user), and *_FILE variants;
#     POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD (default scram-sha-256);
#   - on first start: initdb, then a temporary socket-only server creates the database and runs
#     /docker-entrypoint-initdb.d/*.{sh,sql,sql.gz}, and is stopped again; so the log says
#     "database system is ready to accept connections" twice, as the official image does;
#   - `postgres -c key=value ...` (or just `-c key=value ...`) is passed through to the server;
#   - started as root, it drops to the postgres user with setpriv and execs, so postgres is PID 1
#     and gets the container's stop signal (SIGINT: fast shutdown).
# An existing data directory (PG_VERSION present) is used as it is.
set -Eeo pipefail

PGBIN=/usr/lib/postgresql/15/bin
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"

log() { printf '%s entrypoint: %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S.%3N UTC')" "$*" >&2; }

# file_env VAR [default]: VAR from $VAR or from the file named by $VAR_FILE.
file_env() {
	local var=$1 fileVar="${1}_FILE" def=${2:-}
	if [ -n "${!var:-}" ] && [ -n "${!fileVar:-}" ]; then
		log "error: both $var and $fileVar are set (but are exclusive)"
		exit 1
	fi
	local val=$def
	if [ -n "${!var:-}" ]; then
		val=${!var}
	elif [ -n "${!fileVar:-}" ]; then
		val=$(<"${!fileVar}")
	fi
	export "$var"="$val"
	unset "$fileVar"
}

# `docker run IMAGE -c fsync=off` means `postgres -c fsync=off`.
if [ "$#" -eq 0 ] || [ "${1:0:1}" = '-' ]; then
	set -- postgres "$@"
fi
# Anything else than the server (bash, psql, ...) is run as it is.
if [ "$1" != postgres ] && [ "$1" != "$PGBIN/postgres" ]; then
	exec "$@"
fi
shift
set -- "$PGBIN/postgres" "$@"

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chmod 0700 "$PGDATA" || :
	chmod 2775 /var/run/postgresql || :
	find "$PGDATA" /var/run/postgresql \! -user postgres -exec chown postgres:postgres '{}' +
	# Run this script again as postgres; exec keeps PID 1 all the way down to the server.
	HOME=/var/lib/postgresql exec setpriv --reuid=postgres --regid=postgres --init-groups \
		"${BASH_SOURCE[0]}" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	file_env POSTGRES_USER postgres
	file_env POSTGRES_PASSWORD
	file_env POSTGRES_DB "$POSTGRES_USER"
	file_env POSTGRES_INITDB_ARGS
	auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}

	if [ -z "$POSTGRES_PASSWORD" ] && [ "$auth" != trust ]; then
		cat >&2 <<-'EOM'
			Error: Database is uninitialized and superuser password is not specified.
			       You must specify POSTGRES_PASSWORD to a non-empty value for the
			       superuser. For example, "-e POSTGRES_PASSWORD=password" on "docker run".

			       You may also use "POSTGRES_HOST_AUTH_METHOD=trust" to allow all
			       connections without a password. This is *not* recommended.
		EOM
		exit 1
	fi

	mkdir -p "$PGDATA" 2>/dev/null || :
	if [ ! -w "$PGDATA" ]; then
		log "error: $PGDATA is not writable by $(id -un)"
		exit 1
	fi

	log "initialising $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
	read -r -a extra_args <<<"$POSTGRES_INITDB_ARGS"
	initdb_args=(
		--username="$POSTGRES_USER" -E UTF8 --locale=C.UTF-8
		--auth-local=trust --auth-host="$auth"
		"${extra_args[@]}"
	)
	if [ -n "$POSTGRES_PASSWORD" ]; then
		"$PGBIN/initdb" "${initdb_args[@]}" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD")
	else
		"$PGBIN/initdb" "${initdb_args[@]}"
	fi

	printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
	# initdb's host lines cover only localhost; connections come through Docker's network.
	printf '\nhost all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"

	# Temporary server: Unix socket only, so nothing outside sees it before it is ready.
	"$PGBIN/pg_ctl" -D "$PGDATA" -w -o "-c listen_addresses='' -p ${PGPORT:-5432}" start

	psql=(env PGHOST= PGHOSTADDR= "$PGBIN/psql" -v ON_ERROR_STOP=1 --no-psqlrc --no-password
		--username "$POSTGRES_USER")
	"${psql[@]}" --dbname postgres --quiet --set db="$POSTGRES_DB" <<-'EOSQL'
		SELECT 'CREATE DATABASE ' || quote_ident(:'db')
		WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db')\gexec
	EOSQL

	for f in /docker-entrypoint-initdb.d/*; do
		[ -e "$f" ] || continue
		case "$f" in
		*.sh)
			if [ -x "$f" ]; then
				log "running $f"
				"$f"
			else
				log "sourcing $f"
				# shellcheck disable=SC1090
				. "$f"
			fi
			;;
		*.sql)
			log "running $f"
			"${psql[@]}" --dbname "$POSTGRES_DB" -f "$f"
			;;
		*.sql.gz)
			log "running $f"
			gunzip -c "$f" | "${psql[@]}" --dbname "$POSTGRES_DB"
			;;
		*) log "ignoring $f" ;;
		esac
	done

	"$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop
	log "PostgreSQL init process complete; ready for start up."
else
	log "$PGDATA already holds a database; skipping initialisation"
fi

exec "$@"
