package io.chatintake.channel.telegram;

import io.chatintake.support.CrashPoint;
import io.chatintake.message.ChildMessageListener;
import io.chatintake.work.WorkQueue;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * The durable inbox of Telegram updates (seed 004): one transaction stores a whole getUpdates
 * batch and saves {@code max(update_id) + 1} as the bot's next offset, after checking that this
 * poller still holds the {@link PollLease}. Only after it commits may the next getUpdates send the
 * higher offset, which is what confirms the batch to Telegram.
 * <p>
 * The batch goes in with one statement (arrays unnested server-side), so storing 100 updates
 * costs one round trip, not 100.
 */
public final class TelegramInbox {
    /** Telegram children belong to the default workspace; a bot is its own account within it. */
    public static final String WORKSPACE = "default";

    private final DataSource dataSource;
    private final ChildMessageListener childListener;

    public TelegramInbox(DataSource dataSource, ChildMessageListener childListener) {
        this.dataSource = dataSource;
        this.childListener = childListener;
    }

    /** An update this transaction stored for the first time: hand it to the route. */
    public record StoredUpdate(long rowId, long updateId, int generation, String type, String json, long workItemId,
                               String idempotencyKey) {
    }

    public record StoredBatch(List<StoredUpdate> stored, int duplicates, long nextOffset) {
    }

    /** The lease was taken over: this poller must stop; nothing was stored, the offset did not move. */
    public static final class LeaseLostException extends Exception {
        LeaseLostException(long botId) {
            super("poll lease of bot " + botId + " was taken over by another process; checkpoint not advanced");
        }
    }

    // One statement, one round trip, for the whole batch: renew the lease (fencing: nothing is
    // stored once another process took it over), insert the updates, advance the checkpoint.
    // An identical payload already stored under the id is a redelivery; a different one is a new
    // update that reuses an old id (Telegram restarts ids after a week idle) and gets the next generation.
    // The first row always comes, with the lease and checkpoint counts, even when nothing was new.
    private static final String STORE_BATCH = """
            WITH lease AS (%s RETURNING bot_id),
            batch AS (
                INSERT INTO telegram_update (bot_id, update_id, generation, update_type, payload)
                SELECT lease.bot_id, i.update_id,
                       COALESCE((SELECT max(t.generation) + 1 FROM telegram_update t
                                  WHERE t.bot_id = lease.bot_id AND t.update_id = i.update_id), 0),
                       i.update_type, i.payload
                  FROM lease, unnest(?::bigint[], ?::text[], ?::jsonb[]) WITH ORDINALITY AS i(update_id, update_type, payload, n)
                 WHERE NOT EXISTS (SELECT 1 FROM telegram_update t
                                    WHERE t.bot_id = lease.bot_id AND t.update_id = i.update_id AND t.payload = i.payload)
                 ORDER BY i.n
                ON CONFLICT ON CONSTRAINT telegram_update_key DO NOTHING
                RETURNING id, update_id, generation, update_type, %s AS chat_id),
            advanced AS (
                UPDATE telegram_checkpoint
                   SET next_offset = ?, last_poll_at = now(), last_batch_at = now(),
                       stored_count = stored_count + (SELECT count(*) FROM batch),
                       duplicate_count = duplicate_count + ? - (SELECT count(*) FROM batch), updated_at = now()
                 WHERE bot_id = (SELECT bot_id FROM lease)
                RETURNING bot_id)
            SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM advanced),
                   b.id, b.update_id, b.generation, b.update_type, b.chat_id
              FROM (SELECT 1) AS one LEFT JOIN batch b ON true""".formatted(PollLease.RENEW, UpdateChat.sqlIdOf("payload"));

    // Parts of a media group become album children in channel_message like any channel's
    // (provider telegram-bot, account = bot id, conversation = chat id) and are scheduled into their
    // album in this same transaction. Other messages stay only in telegram_update: copying every
    // text would double the write cost of intake for nothing albums need. Files are described,
    // not fetched: the attachment fetcher does that.
    private static final String CHILDREN = """
            WITH msgs AS (
                SELECT u.bot_id, u.update_id,
                       COALESCE(u.payload -> 'message', u.payload -> 'channel_post', u.payload -> 'business_message') AS m
                  FROM telegram_update u WHERE u.id = ANY (?::bigint[]))
            INSERT INTO channel_message (workspace, provider, account_id, conversation_id, message_id, message_type,
                                         text, caption, attachments, sent_at, album_id, first_event_id, last_event_at)
            SELECT '%s', 'telegram-bot', bot_id::text, m -> 'chat' ->> 'id', m ->> 'message_id',
                   COALESCE((SELECT k FROM unnest(ARRAY['photo', 'video', 'document', 'audio', 'voice', 'animation',
                                                        'video_note', 'sticker', 'location', 'contact', 'text']) k
                              WHERE jsonb_exists(m, k) LIMIT 1), 'unknown'),
                   m ->> 'text', m ->> 'caption',
                   (SELECT jsonb_agg(jsonb_build_object('telegram_bot_id', bot_id, 'telegram_file_id', f ->> 'file_id',
                                                        'file_unique_id', f ->> 'file_unique_id', 'kind', k,
                                                        'file_size', f -> 'file_size', 'mime_type', f ->> 'mime_type',
                                                        'file_name', f ->> 'file_name'))
                      FROM (SELECT e.key AS k, CASE WHEN e.key = 'photo' THEN e.value -> -1 ELSE e.value END AS f
                              FROM jsonb_each(m) e
                             WHERE e.key IN ('photo', 'video', 'document', 'audio', 'voice', 'animation', 'video_note', 'sticker')) files),
                   to_timestamp((m ->> 'date')::bigint), m ->> 'media_group_id',
                   'telegram:' || bot_id || ':' || update_id, to_timestamp((m ->> 'date')::bigint)
              FROM msgs WHERE m ->> 'media_group_id' IS NOT NULL AND m -> 'chat' ->> 'id' IS NOT NULL AND m ->> 'message_id' IS NOT NULL
            ON CONFLICT (workspace, provider, account_id, conversation_id, message_id) DO NOTHING
            RETURNING id""".formatted(WORKSPACE);

    public StoredBatch store(PollLease.Held lease, Duration leaseDuration, List<BotApiClient.RawUpdate> batch)
            throws SQLException, LeaseLostException {
        if (batch.isEmpty()) {
            throw new IllegalArgumentException("an empty batch confirms nothing and is not stored");
        }
        long nextOffset = batch.stream().mapToLong(BotApiClient.RawUpdate::updateId).max().getAsLong() + 1;
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                List<StoredUpdate> stored = insert(c, lease, leaseDuration, batch, nextOffset);
                List<Long> children = storeChildren(c, stored.stream()
                        .filter(u -> u.json().contains("\"media_group_id\"")).toList());
                childListener.stored(c, children.stream().map(id -> new ChildMessageListener.StoredChild(id, true)).toList());
                int duplicates = batch.size() - stored.size();
                CrashPoint.reach(CrashPoint.TELEGRAM_DURING_TRANSACTION);
                c.commit();
                return new StoredBatch(stored, duplicates, nextOffset);
            } catch (SQLException | RuntimeException | LeaseLostException e) {
                rollbackQuietly(c);
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    private record Inserted(long rowId, long updateId, int generation, String type, String chatId) {
        /** The update's identity across id restarts: {@code <bot id>:<update id>[:<generation>]}. */
        String idempotencyKey(long botId) {
            return botId + ":" + updateId + (generation == 0 ? "" : ":" + generation);
        }
    }

    private static List<StoredUpdate> insert(Connection c, PollLease.Held lease, Duration leaseDuration,
                                             List<BotApiClient.RawUpdate> batch, long nextOffset) throws SQLException, LeaseLostException {
        long botId = lease.botId();
        Long[] ids = new Long[batch.size()];
        String[] types = new String[batch.size()];
        String[] payloads = new String[batch.size()];
        for (int i = 0; i < batch.size(); i++) {
            ids[i] = batch.get(i).updateId();
            types[i] = batch.get(i).type();
            payloads[i] = batch.get(i).json();
        }
        List<Inserted> inserted = new ArrayList<>(batch.size());
        try (PreparedStatement ps = c.prepareStatement(STORE_BATCH)) {
            int p = 0;
            ps.setDouble(++p, leaseDuration.toMillis() / 1000.0);
            ps.setLong(++p, botId);
            ps.setString(++p, lease.holder());
            ps.setLong(++p, lease.fencingToken());
            ps.setArray(++p, c.createArrayOf("bigint", ids));
            ps.setArray(++p, c.createArrayOf("text", types));
            ps.setArray(++p, c.createArrayOf("text", payloads));
            ps.setLong(++p, nextOffset);
            ps.setLong(++p, batch.size());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getLong(1) != 1) {
                    throw new LeaseLostException(botId);
                }
                if (rs.getLong(2) != 1) {
                    throw new SQLException("no checkpoint row for bot " + botId);
                }
                do {
                    if (rs.getObject(3) != null) {
                        inserted.add(new Inserted(rs.getLong(3), rs.getLong(4), rs.getInt(5), rs.getString(6), rs.getString(7)));
                    }
                } while (rs.next());
            }
        }
        inserted.sort((a, b) -> Long.compare(a.rowId(), b.rowId()));
        // Each new update becomes a work item in the same transaction: stored means scheduled.
        List<WorkQueue.NewWork> work = inserted.stream().map(u -> new WorkQueue.NewWork(TelegramWorkSource.KIND,
                u.idempotencyKey(botId), u.rowId(), u.chatId() == null ? null : botId + ":" + u.chatId())).toList();
        Map<Long, Long> workItems = new HashMap<>();
        WorkQueue.schedule(c, work).forEach(s -> workItems.put(s.sourceId(), s.workItemId()));
        // Hand on the JSON exactly as Telegram sent it, not jsonb's normalised text.
        Map<Long, String> sent = new HashMap<>();
        batch.forEach(u -> sent.put(u.updateId(), u.json()));
        List<StoredUpdate> stored = new ArrayList<>(inserted.size());
        for (Inserted u : inserted) {
            stored.add(new StoredUpdate(u.rowId(), u.updateId(), u.generation(), u.type(), sent.get(u.updateId()),
                    workItems.getOrDefault(u.rowId(), 0L), u.idempotencyKey(botId)));
        }
        return stored;
    }

    /** Only media-group parts become children; a batch without one costs no extra round trip. */
    private static List<Long> storeChildren(Connection c, List<StoredUpdate> stored) throws SQLException {
        List<Long> children = new ArrayList<>();
        if (stored.isEmpty()) {
            return children;
        }
        try (PreparedStatement ps = c.prepareStatement(CHILDREN)) {
            ps.setArray(1, c.createArrayOf("bigint", stored.stream().map(StoredUpdate::rowId).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    children.add(rs.getLong(1));
                }
            }
        }
        return children;
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // the connection is broken; the transaction is gone with it
        }
    }
}
