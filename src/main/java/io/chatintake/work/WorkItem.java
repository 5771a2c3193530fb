package io.chatintake.work;

/**
 * One stored item to handle, as claimed by a worker. {@code sourceKey} is its idempotency key;
 * {@code claimToken} fences the claim: an outcome counts only while the item still carries it.
 */
public record WorkItem(long id, String kind, String sourceKey, long sourceId, String chatKey, int attempts, long claimToken) {
}
