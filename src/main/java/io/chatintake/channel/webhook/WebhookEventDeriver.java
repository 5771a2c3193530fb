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

/**
 * Derives stored webhook events ({@link WebhookEventStore}: one row each before the 2xx) after
 * their commit: in one transaction per chunk, oldest first, it upserts their child messages, tells
 * the children's listeners (attachment rows, album links), schedules their work items and marks
 * them derived. Everything it needs is in the event's row, so any process derives any channel's
 * events. A crash before the commit leaves the events underived for whoever derives next.
 */
public final class WebhookEventDeriver implements Derivation {
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
        return inRedoableTransaction(dataSource, c -> {
            try (PreparedStatement lock = c.prepareStatement(LOCK)) {
                lock.execute();
            }
            List<Underived> events = take(c, limit);
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

    @Override
    public boolean anyUnderived() throws SQLException {
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(ANY); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    private static List<Underived> take(Connection c, int limit) throws SQLException {
        List<Underived> events = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(TAKE)) {
            ps.setInt(1, limit);
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
