#!/usr/bin/env bash
# Installs and starts a local PostgreSQL for the tests that check Machi is not SQLite-only.
# Prints the DATABASE_URL to use. Needs root (CI runs as root); on failure prints nothing and exits 1.
set -euo pipefail
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq postgresql >/dev/null
fi
version=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | grep -q .; then
  pg_createcluster "$version" main >/dev/null
fi
pg_ctlcluster "$version" main start >/dev/null 2>&1 || true
for _ in $(seq 1 30); do
  su postgres -c "psql -qtAc 'select 1'" >/dev/null 2>&1 && break
  sleep 1
done
su postgres -c "psql -qtAc \"DO \\\$\\\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='machi') THEN CREATE ROLE machi LOGIN PASSWORD 'machi' CREATEDB; END IF; END \\\$\\\$;\"" >/dev/null
echo "postgresql+psycopg://machi:machi@127.0.0.1:5432/postgres"
