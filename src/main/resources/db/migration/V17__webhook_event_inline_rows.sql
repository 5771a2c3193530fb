-- An event row (raw body and parsed JSON, each about as big as the delivery) passes the 2 kB at
-- which PostgreSQL compresses a row before writing it. For typical deliveries (a few kB) that
-- compression ran inside every webhook transaction and was about a fifth of the database's CPU
-- per delivery; rows up to 8 kB are now kept inline as they are. Bigger rows are still
-- compressed and moved out of line.
ALTER TABLE webhook_event SET (toast_tuple_target = 8160);
