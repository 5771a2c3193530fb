package io.chatintake.work;

import java.util.List;

/**
 * A run a worker claimed: due items of one chat's lane in id order (for an ordered kind
 * its consecutive items from the head), or one item without a chat, all under one claim token.
 * {@code chatKey} is null for an item without a chat; {@code headId} is the lane's head when it
 * was claimed.
 */
public record WorkRun(long token, String kind, String chatKey, long headId, boolean ordered, List<WorkItem> items) {
    public boolean laned() {
        return chatKey != null;
    }
}
