-- The inbox of updates is append-only: vacuum only marks its pages all-visible and freezes them,
-- and nothing waits for that. At PostgreSQL's default pace one vacuum rewrites a minute's worth
-- of pages in seconds, and under heavy intake those writes crowd out the commits that store
-- updates. Paced at a fifth of the default it spreads the same work over more time.
ALTER TABLE telegram_update SET (autovacuum_vacuum_cost_delay = 10);
