package io.chatintake.work;

import java.util.Locale;

/**
 * A work item's state, stored in {@code work_item.state} as its lower-case name: pending ->
 * running (claimed) -> done, or failed (retried at next_attempt_at) -> parked after the last attempt.
 * Erased: its content was erased on request before it ran (never claimed, never retried).
 */
public enum ItemState {
    PENDING, RUNNING, DONE, FAILED, PARKED, ERASED;

    /** The value in {@code work_item.state} (and the {@code outcome} tag of the handler timer). */
    public String stored() {
        return name().toLowerCase(Locale.ROOT);
    }
}
