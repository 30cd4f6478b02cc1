#!/bin/sh
# First start of the `postgres` service (docker-entrypoint-initdb.d): lets the standby of the
# `replica` profile (docker-compose.yml, service `postgres-replica`) stream WAL with pg_basebackup.
# wal_level=replica and max_wal_senders=10 are PostgreSQL 15's defaults already.
set -e
echo "host replication postgres all scram-sha-256" >> "$PGDATA/pg_hba.conf"
