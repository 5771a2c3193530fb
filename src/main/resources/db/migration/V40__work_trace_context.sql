-- The W3C trace context (traceparent) of the message a work item is for, written by the insert
-- that stages or schedules the work, so that its handler's spans join the message's trace in any
-- process, later or after a restart. NULL while tracing is off.
ALTER TABLE work_staged ADD COLUMN trace_context text;
ALTER TABLE work_item ADD COLUMN trace_context text;
