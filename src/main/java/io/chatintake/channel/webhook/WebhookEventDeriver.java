package io.chatintake.channel.webhook;

import static io.chatintake.store.Transactions.inRedoableTransaction;

import io.chatintake.message.ChannelMessageStore;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.support.CrashPoint;
import io.chatintake.work.Derivation;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Derives stored webhook events ({@link WebhookEventStore}: one row each before the 2xx) after
 * their commit: in one transaction per chunk, oldest first, it upserts their child messages, tells
 * the children's listeners (attachment rows, album links), schedules their work items and marks
 * them derived. Everything it needs is in the event's row, so any process derives any channel's
 * events. A crash before the commit leaves the events underived for whoever derives next.
 * <p>
 * An event the database refuses to derive (a child key too long for its index, a value out of a
 * column's range) would fail its chunk at every try and hold up every later event: when a chunk
 * is refused for its data, the events are derived one at a time, and one refused alone is set
 * aside. It is marked derived without its child, its {@code parse_error} says why, and its work item is
 * scheduled outside any chat's lane, so its handler still runs from the stored row.
 */
public final class WebhookEventDeriver implements Derivation {
    private static final Logger LOG = LoggerFactory.getLogger(WebhookEventDeriver.class);
    /**
     * One deriver at a time in the whole database: two deriving disjoint events of one chat at once
     * could commit the later event's work item first and give it the lower id.
     */
    private static final String LOCK = "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.webhook_event derivation'))";

    /** Through V41's partial index. SKIP LOCKED: an event an erasure holds is left to it (it ends underived work). */
    private static final String TAKE = """
            SELECT id, workspace, channel, event_id, occurred_at, child, work_kind, chat_key, trace_context
              FROM webhook_event WHERE derived_at IS NULL ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED""";

    /** The child is in channel_message now: the event's row no longer carries a copy. */
    private static final String MARK = "UPDATE webhook_event SET derived_at = now(), child = NULL WHERE id = ANY (?)";

    private static final String TAKE_ONE = """
            SELECT id, workspace, channel, event_id, occurred_at, child, work_kind, chat_key, trace_context
              FROM webhook_event WHERE id = ? AND derived_at IS NULL FOR UPDATE SKIP LOCKED""";

    private static final String NEXT_ID = "SELECT min(id) FROM webhook_event WHERE derived_at IS NULL";

    /** The set-aside event's row as it is, its child unread: the child may be what cannot be read. */
    private static final String TAKE_ASIDE = """
            SELECT workspace, channel, event_id, work_kind, trace_context
              FROM webhook_event WHERE id = ? AND derived_at IS NULL FOR UPDATE SKIP LOCKED""";

    private static final String MARK_ASIDE = """
            UPDATE webhook_event SET derived_at = now(), child = NULL, parse_error = COALESCE(parse_error, ?) WHERE id = ?""";

    private static final String ANY = "SELECT EXISTS (SELECT 1 FROM webhook_event WHERE derived_at IS NULL)";

    private final DataSource dataSource;
    private final ChildMessageListener childListener;

    public WebhookEventDeriver(DataSource dataSource, ChildMessageListener childListener) {
        this.dataSource = dataSource;
        this.childListener = childListener;
    }

    /** An event as stored, with what its derivation needs. */
    private record Underived(long id, String workspace, String channel, String eventId, Timestamp occurredAt, MappedChild child,
                             String workKind, String chatKey, String traceContext) {
        boolean aboutAChild() {
            return child != null && child.message().messageId() != null;
        }

        ChannelMessageStore.MessageEvent messageEvent() {
            return new ChannelMessageStore.MessageEvent(eventId, occurredAt == null ? null : occurredAt.toInstant(), child.message(),
                    child.change());
        }

        WorkQueue.NewWork work() {
            return new WorkQueue.NewWork(workKind, workspace + ":" + channel + ":" + eventId, id, chatKey, traceContext);
        }
    }

    @Override
    public int deriveNext(int limit) throws SQLException {
        try {
            return derive(limit, null);
        } catch (SQLException | RuntimeException e) {
            if (!refusedForItsData(e)) {
                throw e;
            }
            return deriveOneAtATime(limit);
        }
    }

    /** The oldest underived events, {@code limit} of them, or only the event {@code onlyId} when given. */
    private int derive(int limit, Long onlyId) throws SQLException {
        return inRedoableTransaction(dataSource, c -> {
            lock(c);
            List<Underived> events = onlyId == null ? take(c, TAKE, limit) : take(c, TAKE_ONE, onlyId);
            if (events.isEmpty()) {
                return 0;
            }
            deriveChildren(c, events);
            // A row without a kind was written by hand, not by intake: it has nothing to schedule.
            WorkQueue.schedule(c, events.stream().filter(e -> e.workKind() != null).map(Underived::work).toList());
            CrashPoint.reach(CrashPoint.WEBHOOK_DURING_DERIVATION);
            try (PreparedStatement mark = c.prepareStatement(MARK)) {
                mark.setArray(1, c.createArrayOf("bigint", events.stream().map(Underived::id).toArray()));
                mark.executeUpdate();
            }
            return events.size();
        });
    }

    /** Ends early at an event another transaction holds (an erasure): the next pass takes it up again. */
    private int deriveOneAtATime(int limit) throws SQLException {
        int taken = 0;
        for (Long next = nextUnderived(); next != null && taken < limit; next = nextUnderived()) {
            try {
                if (derive(1, next) == 0) {
                    return taken;
                }
            } catch (SQLException | RuntimeException e) {
                if (!refusedForItsData(e)) {
                    throw e;
                }
                setAside(next, e);
            }
            taken++;
        }
        return taken;
    }

    private Long nextUnderived() throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(NEXT_ID); ResultSet rs = ps.executeQuery()) {
            rs.next();
            long id = rs.getLong(1);
            return rs.wasNull() ? null : id;
        }
    }

    /** Marks the event derived without its child and schedules its work item outside any lane: a long chat key may be what was refused. */
    private void setAside(long id, Exception refusal) throws SQLException {
        String reason = "child_not_derivable" + (refusal instanceof SQLException sql && sql.getSQLState() != null ? "_" + sql.getSQLState() : "");
        inRedoableTransaction(dataSource, c -> {
            lock(c);
            try (PreparedStatement take = c.prepareStatement(TAKE_ASIDE)) {
                take.setLong(1, id);
                try (ResultSet rs = take.executeQuery()) {
                    if (!rs.next()) {
                        return null;
                    }
                    String workspace = rs.getString(1);
                    String channel = rs.getString(2);
                    String eventId = rs.getString(3);
                    String workKind = rs.getString(4);
                    if (workKind != null) {
                        WorkQueue.schedule(c, List.of(new WorkQueue.NewWork(workKind, workspace + ":" + channel + ":" + eventId, id, null,
                                rs.getString(5))));
                    }
                    LOG.warn("{} webhook: the event in row {} is stored, but the database refuses its child message ({}); set aside without"
                            + " it, its handler runs from the stored event", channel, id, reason);
                }
            }
            try (PreparedStatement mark = c.prepareStatement(MARK_ASIDE)) {
                mark.setString(1, reason);
                mark.setLong(2, id);
                mark.executeUpdate();
            }
            return null;
        });
    }

    /**
     * What the event's own data makes the database or the mapping refuse, as opposed to a database
     * that is away: a data exception (22), an integrity violation (23), a program limit such as
     * an index row's size (54), or a child that does not read back.
     */
    private static boolean refusedForItsData(Exception e) {
        if (e instanceof SQLException sql) {
            String state = sql.getSQLState();
            return state != null && (state.startsWith("22") || state.startsWith("23") || state.startsWith("54"));
        }
        return true;
    }

    private static void lock(Connection c) throws SQLException {
        try (PreparedStatement lock = c.prepareStatement(LOCK)) {
            lock.execute();
        }
    }

    @Override
    public boolean anyUnderived() throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(ANY); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    /** @param parameter the limit of {@link #TAKE} or the id of {@link #TAKE_ONE} */
    private static List<Underived> take(Connection c, String sql, long parameter) throws SQLException {
        List<Underived> events = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, parameter);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String child = rs.getString(6);
                    events.add(new Underived(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getTimestamp(5),
                            child == null ? null : MappedChild.parse(child), rs.getString(7), rs.getString(8), rs.getString(9)));
                }
            }
        }
        return events;
    }

    /**
     * The events' children, in the events' order, one workspace at a time (a child's key includes
     * it), then what the listeners write for them, in the same transaction.
     */
    private void deriveChildren(Connection c, List<Underived> events) throws SQLException {
        Map<String, List<Underived>> byWorkspace = new LinkedHashMap<>();
        events.stream().filter(Underived::aboutAChild).forEach(e -> byWorkspace.computeIfAbsent(e.workspace(), w -> new ArrayList<>()).add(e));
        List<ChildMessageListener.StoredChild> told = new ArrayList<>();
        for (Map.Entry<String, List<Underived>> workspace : byWorkspace.entrySet()) {
            List<Underived> these = workspace.getValue();
            List<ChannelMessageStore.Applied> applied = ChannelMessageStore.applyAll(c, workspace.getKey(),
                    these.stream().map(Underived::messageEvent).toList());
            for (int i = 0; i < these.size(); i++) {
                if (childListener.mayWrite(these.get(i).child().message())) {
                    told.add(ChildMessageListener.StoredChild.of(applied.get(i), these.get(i).traceContext()));
                }
            }
        }
        if (!told.isEmpty()) {
            childListener.stored(c, told);
        }
    }
}
