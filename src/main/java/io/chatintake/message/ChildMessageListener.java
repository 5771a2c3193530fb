package io.chatintake.message;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.function.Predicate;

/**
 * Told about child messages inside the transaction that stored them, so that what it writes
 * (album scheduling, attachment rows and their downloads) commits or rolls back with the child.
 * Channels store children and call it; they never know who listens (the application registers
 * the listeners), so no channel depends on albums or attachments.
 */
public interface ChildMessageListener {

    /**
     * A child row of {@code channel_message}; {@code inserted} when this transaction created it,
     * {@code albumAssigned} when this transaction gave it an album id it did not have before
     * (at insert, or later: a child first seen through a reaction gets its album with its content),
     * {@code hasAttachments} when its row lists attachments (false: nothing to look up for them),
     * {@code traceContext} the traceparent of the message that brought it (null while tracing is off).
     */
    record StoredChild(long id, boolean inserted, boolean albumAssigned, boolean hasAttachments, String traceContext) {
        public static StoredChild of(ChannelMessageStore.Applied applied, String traceContext) {
            return new StoredChild(applied.id(), applied.inserted(), applied.albumAssigned(), applied.hasAttachments(), traceContext);
        }
    }

    /** What a listener writes for the children just stored, in their transaction. */
    @FunctionalInterface
    interface Writes {
        void stored(Connection transaction, List<StoredChild> children) throws SQLException;
    }

    void stored(Connection transaction, List<StoredChild> children) throws SQLException;

    /**
     * Whether storing a child as this message describes it can give this listener anything to
     * write. A channel may leave out the children whose message cannot, and when no listener can,
     * store the child with one statement that commits by itself, without a transaction around it.
     */
    boolean mayWrite(ChannelMessage message);

    static ChildMessageListener of(Predicate<ChannelMessage> mayWrite, Writes writes) {
        return new ChildMessageListener() {
            @Override
            public void stored(Connection transaction, List<StoredChild> children) throws SQLException {
                writes.stored(transaction, children);
            }

            @Override
            public boolean mayWrite(ChannelMessage message) {
                return mayWrite.test(message);
            }
        };
    }

    /** Tells each listener in turn, in the same transaction. */
    static ChildMessageListener all(List<ChildMessageListener> listeners) {
        List<ChildMessageListener> copy = List.copyOf(listeners);
        return of(message -> copy.stream().anyMatch(listener -> listener.mayWrite(message)), (transaction, children) -> {
            if (children.isEmpty()) {
                return;
            }
            for (ChildMessageListener listener : copy) {
                listener.stored(transaction, children);
            }
        });
    }
}
