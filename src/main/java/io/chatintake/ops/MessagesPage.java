package io.chatintake.ops;

import io.vertx.core.http.HttpServerRequest;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * {@code GET /status/messages} (search) and {@code GET /status/messages/<key>} (a timeline), behind
 * the status page's own sign-in ({@link StatusPage} checks it before calling here): the request's
 * parameters to {@link MessageSearch} or {@link MessageTimeline}, the answer through {@link MessagesView}.
 */
final class MessagesPage {
    static final String SEARCH = "/messages";
    /** The longest value a filter field takes; anything longer is cut. */
    private static final int FIELD_CHARS = 200;
    /** Rows a page shows unless ?limit= says otherwise (up to {@link MessageSearch#MAX_LIMIT}). */
    private static final int PAGE_ROWS = 50;

    private final DataSource dataSource;

    MessagesPage(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** @param timeline a timeline was asked for (the path names a key), else the search */
    String render(HttpServerRequest request, boolean timeline) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setReadOnly(true);
            if (timeline) {
                String key = request.path().substring(request.path().lastIndexOf('/') + 1);
                Optional<MessageSearch.Key> parsed = MessageSearch.Key.parse(key);
                Optional<MessageTimeline.Timeline> found = parsed.isEmpty() ? Optional.empty() : MessageTimeline.of(c, parsed.get());
                return found.map(MessagesView::timeline).orElseGet(() -> MessagesView.notFound(key.length() > 40 ? key.substring(0, 40) : key));
            }
            Map<String, String> values = new LinkedHashMap<>();
            for (String name : MessagesView.FIELDS.keySet()) {
                String value = request.getParam(name);
                values.put(name, value == null ? "" : value.length() > FIELD_CHARS ? value.substring(0, FIELD_CHARS) : value);
            }
            String after = request.getParam("after");
            String limit = request.getParam("limit");
            if (limit != null && limit.matches("\\d{1,3}")) {
                values.put("limit", limit);
            }
            try {
                Instant now = Instant.now();
                MessageSearch.Filter filter = new MessageSearch.Filter(values.get("channel"), values.get("bot"), values.get("conversation"),
                        values.get("sender"), values.get("text"), values.get("event"), MessageSearch.time(values.get("since"), now),
                        MessageSearch.time(values.get("until"), now), values.containsKey("limit") ? Integer.parseInt(values.get("limit")) : PAGE_ROWS,
                        after == null || after.length() > FIELD_CHARS ? null : after);
                return MessagesView.search(values, MessageSearch.find(c, filter), null);
            } catch (IllegalArgumentException e) {
                return MessagesView.search(values, null, e.getMessage());
            }
        }
    }
}
