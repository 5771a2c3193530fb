package io.chatintake.message;

import java.time.Instant;

/**
 * One child message as the provider last described it, keyed by (workspace, provider, account,
 * conversation, message id) (contract: identity scopes). Album fields are kept per child: the
 * album's {@code total} may be missing or differ between children, and an album id is never a key.
 *
 * @param attachmentsJson the {@code attachments[]} array as JSON text, or null; it can hold
 *                        temporary signed URLs, so it is stored but never logged
 */
public record ChannelMessage(String provider, String accountId, String conversationId, String messageId,
                             String messageType, String text, String caption, String attachmentsJson, Instant sentAt,
                             String albumId, Integer albumIndex, Integer albumTotal) {

    /** What an event does to its child message. */
    public enum Change {
        /** message.received, message.updated: insert it, or refresh the content if this event is the newest seen. */
        CONTENT,
        /** message.deleted: mark it deleted (inserting it if the deletion arrives first); the row and content stay. */
        DELETE,
        /** any other message.* event (read, reaction, ...): make sure the child exists, change nothing. */
        REFERENCE;

        public static Change of(String eventType) {
            return switch (eventType) {
                case "message.received", "message.updated" -> CONTENT;
                case "message.deleted" -> DELETE;
                default -> REFERENCE;
            };
        }
    }

    @Override
    public String toString() {
        // The content (text, attachment URLs) stays out of any accidental log line.
        return "ChannelMessage[" + provider + "/" + accountId + "/" + conversationId + "/" + messageId + "]";
    }
}
