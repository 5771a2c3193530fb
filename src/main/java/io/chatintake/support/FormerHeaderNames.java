package io.chatintake.support;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * Header names that were renamed to their component's prefix: a header is set under both names and
 * read under either, so a route written against the former name keeps working, including a route
 * that sets the former name to override what the component put there.
 */
public final class FormerHeaderNames {
    /** What {@link #copy} set under each former name, to tell a route's own value from the copy. */
    private static final String COPIED = "ChatIntakeFormerHeaderValues";

    private FormerHeaderNames() {
    }

    /** Copies each header present under its current name to its former name. */
    public static void copy(Message message, Map<String, String> formerByCurrent) {
        Map<String, Object> copied = copied(message);
        formerByCurrent.forEach((current, former) -> {
            Object value = message.getHeader(current);
            if (value != null) {
                message.setHeader(former, value);
                copied.put(former, value);
            }
        });
    }

    /**
     * The header under its current name; under its former name when only that one was set by the
     * route (absent from the message, or changed after {@link #copy}).
     */
    public static <T> T read(Message message, String current, String former, Class<T> type) {
        Map<String, Object> copied = copied(message);
        Object formerValue = message.getHeader(former);
        Object currentValue = message.getHeader(current);
        boolean formerChanged = formerValue != null && !Objects.equals(formerValue, copied.get(former));
        boolean currentChanged = currentValue != null && !Objects.equals(currentValue, copied.get(former));
        return (formerChanged && !currentChanged) || currentValue == null
                ? message.getHeader(former, type) : message.getHeader(current, type);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> copied(Message message) {
        Exchange exchange = message.getExchange();
        if (exchange == null) {
            return new HashMap<>();
        }
        Map<String, Object> copied = exchange.getProperty(COPIED, Map.class);
        if (copied == null) {
            copied = new HashMap<>();
            exchange.setProperty(COPIED, copied);
        }
        return copied;
    }
}
