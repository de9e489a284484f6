-- PostgreSQL's limit for durable one-statement transactions on this machine: one single-row UPDATE
-- per transaction (autocommit), so one WAL flush each. Used by bench/all.mjs (pgbench -f).
\set aid random(1, 100000)
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
