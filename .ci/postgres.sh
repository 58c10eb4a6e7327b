# PostgreSQL for the Postgres store tests: a throw-away server of the distribution's packages,
# with its own data directory, listening only on a Unix socket in that directory, stopped when
# .ci/run exits (even on failure). Sourced by .ci/run (uses apt_install and cleanups), twice:
# with `ci_install_only` set it only installs the packages. Exports AGENTFLOW_PG_URL.
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    apt_install postgresql
fi
[[ -n ${ci_install_only:-} ]] && return 0

pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
pg_dir=$(mktemp -d)
chown postgres: "$pg_dir"
runuser -u postgres -- "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U postgres >/dev/null
runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w \
    -o "-c listen_addresses='' -k $pg_dir -c max_connections=200" start >/dev/null
cleanups+=("runuser -u postgres -- '$pg_bin/pg_ctl' -D '$pg_dir/data' -m fast -w stop >/dev/null; rm -rf '$pg_dir'")
runuser -u postgres -- "$pg_bin/createdb" -h "$pg_dir" agentflow
export AGENTFLOW_PG_URL="postgres://postgres@localhost/agentflow?host=$pg_dir"
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') at $AGENTFLOW_PG_URL"
