package io.chatintake.channel.telegram;

import static io.chatintake.store.Transactions.inTransaction;

import io.chatintake.support.CrashPoint;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.store.JsonbText;
import io.chatintake.work.TraceContext;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * The durable inbox of Telegram updates: one transaction stores a whole getUpdates
 * batch and saves {@code max(update_id) + 1} as the bot's next offset, after checking that this
 * poller still holds the {@link PollLease}. Only after it commits may the next getUpdates send the
 * higher offset, which is what confirms the batch to Telegram.
 * <p>
 * The lease renewal, the batch (arrays unnested server-side) and the checkpoint go in with one
 * statement, so storing 100 updates costs one round trip and the commit, not 100: one row per
 * update and the checkpoint, nothing else. What is derived from the updates (their work items, the
 * album children of media-group parts with their attachment rows and album scheduling) follows
 * from storage ({@link ScheduleCheckpoint}), in a transaction of its own: the next getUpdates
 * waits only for what confirming needs. An
 * update PostgreSQL's jsonb refuses ({@link JsonbText}) goes in with the others, as text, flagged
 * with the reason: it must not hold up its batch, and with it the bot, forever.
 */
public final class TelegramUpdateStore {
    /** Telegram children belong to the default workspace; a bot is its own account within it. */
    public static final String WORKSPACE = "default";

    /** SQLState class of the errors a value jsonb refuses raises (22P02, 22P05, 22003, ...). */
    private static final String DATA_EXCEPTION = "22";

    private final DataSource dataSource;
    private final ChildMessageListener childListener;

    public TelegramUpdateStore(DataSource dataSource, ChildMessageListener childListener) {
        this.dataSource = dataSource;
        this.childListener = childListener;
    }

    /**
     * An update this transaction stored for the first time: hand it to the route.
     *
     * @param rawReason null when the update is stored as jsonb; else why jsonb refused it (it is then
     *                  stored as text, flagged, and handed on all the same)
     */
    public record StoredUpdate(long rowId, long updateId, int generation, String type, String json, String idempotencyKey,
                               String rawReason, String chatId, String traceContext) {
        /** Its work item: per-chat order needs the chat, which storing read from the update already. */
        WorkQueue.NewWork work(long botId) {
            return TelegramWorkSource.workFor(botId, rowId, updateId, generation, chatId, traceContext);
        }
    }

    /** @param gap updates before this batch that another getUpdates caller confirmed, if any */
    public record StoredBatch(List<StoredUpdate> stored, int duplicates, long nextOffset, Optional<UpdateGap.Gap> gap) {
        /** The highest inbox row this batch stored (0 when it stored none): what its work is scheduled through. */
        public long lastRowId() {
            return stored.stream().mapToLong(StoredUpdate::rowId).max().orElse(0);
        }

        /** The stored updates' work items, in row order. */
        public List<WorkQueue.NewWork> work(long botId) {
            return stored.stream().map(u -> u.work(botId)).toList();
        }

        /** The rows that may be media-group parts, whose album children scheduling derives. */
        public Set<Long> mediaGroupParts() {
            return mediaGroupParts(stored);
        }

        private static Set<Long> mediaGroupParts(List<StoredUpdate> stored) {
            return stored.stream().filter(u -> MediaGroupChildren.mayBePart(u.json())).map(StoredUpdate::rowId).collect(Collectors.toSet());
        }
    }

    /** The lease was taken over: this poller must stop; nothing was stored, the offset did not move. */
    public static final class LeaseLostException extends Exception {
        LeaseLostException(long botId) {
            super("poll lease of bot " + botId + " was taken over by another process; checkpoint not advanced");
        }
    }

    // An identical payload already stored under the id is a redelivery; a different one is a new
    // update that reuses an old id (Telegram restarts ids after a week idle) and gets the next generation.
    // An update jsonb refuses comes with its text in raw_payload (payload NULL) and the reason.
    // The earlier rows of an id are read per update (an aggregate keeps the lateral a per-row index
    // lookup): as a NOT EXISTS, a plan cached while the table was small hashed all of the bot's
    // updates for every batch. Only where {@code guard} holds.
    private static String insertBatchIf(String guard) {
        return """
                INSERT INTO telegram_update (bot_id, update_id, generation, update_type, payload, raw_payload, raw_reason)
                SELECT ?, i.update_id, COALESCE(earlier.generation + 1, 0),
                       i.update_type, i.payload::jsonb, i.raw_payload, i.raw_reason
                  FROM unnest(?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[])
                       WITH ORDINALITY AS i(update_id, update_type, payload, raw_payload, raw_reason, n)
                 CROSS JOIN LATERAL (SELECT max(t.generation) AS generation,
                                            bool_or(t.payload = i.payload::jsonb OR t.raw_payload = i.raw_payload) AS same
                                       FROM telegram_update t WHERE t.bot_id = ? AND t.update_id = i.update_id) earlier
                 WHERE earlier.same IS NOT TRUE AND %s
                 ORDER BY i.n
                ON CONFLICT ON CONSTRAINT telegram_update_key DO NOTHING
                RETURNING id, update_id, generation, update_type, %s AS chat_id, raw_reason""".formatted(guard, UpdateChat.sqlIdOf("payload"));
    }

    /** A pushed update's statement: no lease to hold. */
    static final String INSERT_BATCH = insertBatchIf("true");

    private static final String LEASE_HELD = "EXISTS (SELECT 1 FROM renewed)";

    // A polled batch is one statement, one round trip: the lease renewed, the gap before the batch
    // recorded, the updates inserted and the checkpoint advanced, each only while the lease is held.
    // One row however many updates went in: the lease and checkpoint rows counted, the gap if any,
    // then each inserted update (none: NULLs).
    private static final String STORE_POLLED = """
            WITH %s,
            %s,
            inserted AS (%s),
            advanced AS (
                UPDATE telegram_checkpoint
                   SET next_offset = ?, last_poll_at = now(), last_batch_at = now(),
                       stored_count = stored_count + (SELECT count(*) FROM inserted),
                       duplicate_count = duplicate_count + ?::bigint - (SELECT count(*) FROM inserted), updated_at = now()
                 WHERE bot_id = ? AND %s
                RETURNING 1)
            SELECT (SELECT count(*) FROM renewed), (SELECT count(*) FROM advanced), g.from_update_id, g.to_update_id, g.detected_at,
                   i.id, i.update_id, i.generation, i.update_type, i.chat_id, i.raw_reason
              FROM (SELECT 1) AS one LEFT JOIN gap g ON true LEFT JOIN inserted i ON true"""
            .formatted(PollLease.RENEWED, UpdateGap.recordedIf(LEASE_HELD), insertBatchIf(LEASE_HELD), LEASE_HELD);

    public StoredBatch store(PollLease.Held lease, Duration leaseDuration, List<BotApiClient.RawUpdate> batch)
            throws SQLException, LeaseLostException {
        if (batch.isEmpty()) {
            throw new IllegalArgumentException("an empty batch confirms nothing and is not stored");
        }
        // The cheap scan finds what jsonb is known to refuse, with no round trip of its own.
        List<String> rawReasons = batch.stream().map(u -> JsonbText.refusal(u.json()).orElse(null)).toList();
        TraceContext.Call span = TraceContext.batch("telegram poll batch", "chat_intake.bot_id", Long.toString(lease.botId()));
        try {
            StoredBatch stored = store(lease, leaseDuration, batch, rawReasons, span);
            span.end("stored", null);
            return stored;
        } catch (LeaseLostException e) {
            span.end("lease lost", null);
            throw e;
        } catch (SQLException e) {
            span.end("not stored", null);
            if (e.getSQLState() == null || !e.getSQLState().startsWith(DATA_EXCEPTION)) {
                throw e;
            }
            // jsonb refused something the scan does not know (e.g. a number beyond numeric's range):
            // ask PostgreSQL about each update on its own. Rare, so those round trips do not matter.
            List<String> asked = askDatabase(batch, rawReasons);
            if (asked.equals(rawReasons)) {
                throw e;
            }
            return store(lease, leaseDuration, batch, asked, span);
        }
    }

    private StoredBatch store(PollLease.Held lease, Duration leaseDuration, List<BotApiClient.RawUpdate> batch, List<String> rawReasons,
                              TraceContext.Call span) throws SQLException, LeaseLostException {
        long botId = lease.botId();
        long firstUpdateId = batch.stream().mapToLong(BotApiClient.RawUpdate::updateId).min().getAsLong();
        long nextOffset = batch.stream().mapToLong(BotApiClient.RawUpdate::updateId).max().getAsLong() + 1;
        Columns columns = Columns.of(batch, rawReasons);
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                Polled polled;
                try (PreparedStatement ps = c.prepareStatement(STORE_POLLED)) {
                    int next = PollLease.bindRenewal(ps, 1, lease, leaseDuration);
                    next = UpdateGap.bindRecording(ps, next, botId, firstUpdateId);
                    next = columns.bind(c, ps, next, botId);
                    ps.setLong(next, nextOffset);
                    ps.setLong(next + 1, batch.size());
                    ps.setLong(next + 2, botId);
                    try (ResultSet rs = ps.executeQuery()) {
                        polled = Polled.read(rs, columns);
                    }
                }
                if (!polled.leaseHeld()) {
                    c.rollback();
                    throw new LeaseLostException(botId);
                }
                if (!polled.advanced()) {
                    throw new SQLException("no checkpoint row for bot " + botId);
                }
                List<StoredUpdate> stored = stored(botId, batch, polled.inserted(), span);
                CrashPoint.reach(CrashPoint.TELEGRAM_DURING_TRANSACTION);
                c.commit();
                return new StoredBatch(stored, batch.size() - stored.size(), nextOffset, polled.gap());
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(c);
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /**
     * Webhook mode: one update Telegram pushed, stored exactly as a polled one (same keys, same
     * work, same media-group children), in one transaction with its work item and children: pushes
     * commit in any order, so no mark could tell which of them are scheduled or derived, and with
     * no poller in webhook mode nothing would come back for a push whose derivation a crash lost. There is no lease (Telegram
     * sends to one URL) and the offset is not moved: a webhook's 2xx is what confirms an update,
     * and after a switch back to polling the saved offset only ever re-reads updates, which are
     * then recognised as stored. Returns the update if this delivery stored it first, else empty.
     */
    public List<StoredUpdate> storePushed(long botId, BotApiClient.RawUpdate update) throws SQLException {
        return inTransaction(dataSource, c -> {
            List<StoredUpdate> stored = storePushedUpdate(c, botId, update);
            try (PreparedStatement ps = c.prepareStatement(COUNT_PUSHED)) {
                ps.setLong(1, stored.size());
                ps.setLong(2, 1 - stored.size());
                ps.setLong(3, botId);
                ps.executeUpdate();
            }
            return stored;
        });
    }

    private static final String COUNT_PUSHED = """
            UPDATE telegram_checkpoint
               SET last_batch_at = now(), stored_count = stored_count + ?, duplicate_count = duplicate_count + ?, updated_at = now()
             WHERE bot_id = ?""";

    /** A pushed update, its work item, its media-group child and the child's listeners, in the caller's transaction. */
    private List<StoredUpdate> storePushedUpdate(Connection c, long botId, BotApiClient.RawUpdate update) throws SQLException {
        List<BotApiClient.RawUpdate> batch = List.of(update);
        Columns columns = Columns.of(batch, Collections.singletonList(JsonbText.refusal(update.json()).orElse(null)));
        List<Inserted> inserted = new ArrayList<>(batch.size());
        try (PreparedStatement ps = c.prepareStatement(INSERT_BATCH)) {
            columns.bind(c, ps, 1, botId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    inserted.add(columns.inserted(rs, 1));
                }
            }
        }
        List<StoredUpdate> stored = stored(botId, batch, inserted, TraceContext.Call.NONE);
        WorkQueue.schedule(c, stored.stream().map(u -> u.work(botId)).toList());
        UpdateText.copy(c, stored.stream().map(StoredUpdate::rowId).toList());
        Map<Long, String> traces = new HashMap<>();
        stored.forEach(u -> traces.put(u.rowId(), u.traceContext()));
        MediaGroupChildren.derive(c, childListener, StoredBatch.mediaGroupParts(stored), traces);
        return stored;
    }

    private record Inserted(long rowId, long updateId, int generation, String type, String chatId, String rawReason) {
    }

    /** What a polled batch's statement did. */
    private record Polled(boolean leaseHeld, boolean advanced, Optional<UpdateGap.Gap> gap, List<Inserted> inserted) {
        static Polled read(ResultSet rs, Columns columns) throws SQLException {
            rs.next();
            Polled polled = new Polled(rs.getLong(1) == 1, rs.getLong(2) == 1, UpdateGap.read(rs, 3), new ArrayList<>());
            do {
                rs.getLong(6);
                if (!rs.wasNull()) {
                    polled.inserted.add(columns.inserted(rs, 6));
                }
            } while (rs.next());
            return polled;
        }
    }

    /** A batch as the insert's arrays; the chats of raw updates, which SQL cannot read, read here. */
    private record Columns(Long[] ids, String[] types, String[] payloads, String[] raws, String[] rawReasons, Map<Long, String> rawChats) {
        static Columns of(List<BotApiClient.RawUpdate> batch, List<String> rawReasons) {
            Columns columns = new Columns(new Long[batch.size()], new String[batch.size()], new String[batch.size()], new String[batch.size()],
                    rawReasons.toArray(String[]::new), new HashMap<>());
            for (int i = 0; i < batch.size(); i++) {
                BotApiClient.RawUpdate update = batch.get(i);
                columns.ids[i] = update.updateId();
                columns.types[i] = update.type();
                if (rawReasons.get(i) == null) {
                    columns.payloads[i] = update.json();
                } else {
                    columns.raws[i] = update.json();
                    // Jackson can read a raw update's chat, so it keeps its order.
                    UpdateChat.idOf(update.json()).ifPresent(chat -> columns.rawChats.put(update.updateId(), chat));
                }
            }
            return columns;
        }

        /** Binds the insert's parameters from {@code index} on; @return the next free index */
        int bind(Connection c, PreparedStatement ps, int index, long botId) throws SQLException {
            ps.setLong(index, botId);
            ps.setArray(index + 1, c.createArrayOf("bigint", ids));
            ps.setArray(index + 2, c.createArrayOf("text", types));
            ps.setArray(index + 3, c.createArrayOf("text", payloads));
            ps.setArray(index + 4, c.createArrayOf("text", raws));
            ps.setArray(index + 5, c.createArrayOf("text", rawReasons));
            ps.setLong(index + 6, botId);
            return index + 7;
        }

        /** The inserted row whose RETURNING columns start at {@code column}. */
        Inserted inserted(ResultSet rs, int column) throws SQLException {
            long updateId = rs.getLong(column + 1);
            String rawReason = rs.getString(column + 5);
            String chat = rawReason == null ? rs.getString(column + 4) : rawChats.get(updateId);
            return new Inserted(rs.getLong(column), updateId, rs.getInt(column + 2), rs.getString(column + 3), chat, rawReason);
        }
    }

    /** Whether PostgreSQL takes each update as jsonb, asked one by one: null when it does, else the reason. */
    private List<String> askDatabase(List<BotApiClient.RawUpdate> batch, List<String> rawReasons) throws SQLException {
        List<String> asked = new ArrayList<>(rawReasons);
        try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT CAST(? AS jsonb) IS NULL")) {
            for (int i = 0; i < batch.size(); i++) {
                if (asked.get(i) != null) {
                    continue;
                }
                ps.setString(1, batch.get(i).json());
                try {
                    ps.executeQuery().close();
                } catch (SQLException e) {
                    if (e.getSQLState() == null || !e.getSQLState().startsWith(DATA_EXCEPTION)) {
                        throw e;
                    }
                    asked.set(i, "jsonb_rejected_" + e.getSQLState());
                }
            }
        }
        return asked;
    }

    /** The inserted rows in row order, with the JSON exactly as Telegram sent it, not jsonb's normalised text. */
    /** Each stored update starts a trace of its own, linked to its batch's span; a pushed one continues its request's. */
    private static List<StoredUpdate> stored(long botId, List<BotApiClient.RawUpdate> batch, List<Inserted> inserted, TraceContext.Call span) {
        inserted.sort((a, b) -> Long.compare(a.rowId(), b.rowId()));
        Map<Long, String> sent = new HashMap<>();
        batch.forEach(u -> sent.put(u.updateId(), u.json()));
        List<StoredUpdate> stored = new ArrayList<>(inserted.size());
        for (Inserted u : inserted) {
            stored.add(new StoredUpdate(u.rowId(), u.updateId(), u.generation(), u.type(), sent.get(u.updateId()),
                    TelegramWorkSource.idempotencyKey(botId, u.updateId(), u.generation()), u.rawReason(), u.chatId(),
                    span == TraceContext.Call.NONE ? TraceContext.current()
                            : span.linkedTrace("telegram update", "chat_intake.telegram.update_type", u.type())));
        }
        return stored;
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // the connection is broken; the transaction is gone with it
        }
    }
}
