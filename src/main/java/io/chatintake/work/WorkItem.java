package io.chatintake.work;

/** One stored item to handle, as claimed by a worker. {@code sourceKey} is its idempotency key. */
public record WorkItem(long id, String kind, String sourceKey, long sourceId, String chatKey, int attempts) {
}
