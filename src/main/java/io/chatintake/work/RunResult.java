package io.chatintake.work;

import java.time.Instant;
import java.util.Objects;

/**
 * What became of one item of a run. {@code error} is the failure's text (work_item.last_error),
 * {@code nextAttemptAt} when a failed or deferred item is due again.
 */
public record RunResult(WorkItem item, Kind kind, String error, Instant nextAttemptAt) {
    /** The ways a handler's run of an item ends, each with the state the item is stored in. */
    public enum Kind {
        DONE(ItemState.DONE),
        /** Done for good without its effect (refused permanently, e.g. the bot was blocked): work_item.outcome 'undeliverable'. */
        UNDELIVERABLE(ItemState.DONE),
        FAILED(ItemState.FAILED),
        PARKED(ItemState.PARKED),
        /** Back to pending, its attempt not counted: a limit said "not yet" ({@link DeferReason}). */
        DEFERRED(ItemState.PENDING);

        private final ItemState state;

        Kind(ItemState state) {
            this.state = state;
        }
    }

    public static RunResult done(WorkItem item) {
        return new RunResult(item, Kind.DONE, null, null);
    }

    public static RunResult failed(WorkItem item, String error, Instant nextAttemptAt) {
        return new RunResult(item, Kind.FAILED, Objects.requireNonNull(error), Objects.requireNonNull(nextAttemptAt));
    }

    public static RunResult parked(WorkItem item, String error) {
        return new RunResult(item, Kind.PARKED, Objects.requireNonNull(error), null);
    }

    /** Done for good without its effect (refused permanently, e.g. the bot was blocked): never retried. */
    public static RunResult undeliverable(WorkItem item, String reason) {
        return new RunResult(item, Kind.UNDELIVERABLE, Objects.requireNonNull(reason), null);
    }

    /**
     * Back to pending until {@code until}, its attempt not counted and its last error kept: a
     * limit said "not yet" ({@link DeferReason}). A run stops at it, and its lane waits for it.
     */
    public static RunResult deferred(WorkItem item, Instant until) {
        return new RunResult(item, Kind.DEFERRED, null, Objects.requireNonNull(until));
    }

    /** The state the item is stored in after this outcome. */
    public ItemState state() {
        return kind.state;
    }

    public boolean isDeferred() {
        return kind == Kind.DEFERRED;
    }

    /** An ordered run stops here and its chat waits for this item's next attempt. */
    public boolean holdsItsChat() {
        return kind == Kind.FAILED || isDeferred();
    }
}
