package io.chatintake.channel.telegram;

import io.chatintake.channel.webhook.Delivery;
import io.chatintake.channel.webhook.WebhookEvent;
import io.chatintake.channel.webhook.WebhookEventSink;
import io.chatintake.message.ChildMessageListener;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * A bot in webhook mode ({@code POST /webhooks/telegram/<bot name>}, routes/telegram-webhook.yaml):
 * each verified update goes into {@code telegram_update} through {@link TelegramUpdateStore#storePushed},
 * with the same keys, work and media-group children as a polled one. The bot is known by name from
 * {@code telegram_checkpoint}, which {@code telegram set-webhook} (or polling) created.
 */
public final class TelegramWebhookSink implements WebhookEventSink {
    /** The route's path parameter naming the bot: {@code /webhooks/telegram/{bot}}. */
    public static final String BOT_PARAMETER = "bot";

    private DataSource dataSource;
    private ChildMessageListener childMessageListener;
    private volatile TelegramUpdateStore updates;

    @Override
    public List<Stored> store(Delivery delivery, List<WebhookEvent> events) throws SQLException {
        String botName = delivery.param().apply(BOT_PARAMETER);
        long botId = botId(botName);
        List<Stored> result = new ArrayList<>(events.size());
        for (WebhookEvent event : events) {
            BotApiClient.RawUpdate update = update(event);
            List<TelegramUpdateStore.StoredUpdate> stored = updates().storePushed(botId, update);
            result.add(stored.isEmpty() ? new Stored(0, false) : new Stored(stored.get(0).rowId(), true));
        }
        return result;
    }

    private static BotApiClient.RawUpdate update(WebhookEvent event) {
        if (event.payloadJson() == null || event.eventId() == null || !event.eventId().matches("-?\\d{1,19}")) {
            throw new IllegalArgumentException("an authenticated request that is not a Telegram update (no update_id); not stored");
        }
        try {
            return new BotApiClient.RawUpdate(Long.parseLong(event.eventId()), BotApiClient.typeOf(event.payloadJson()),
                    event.payloadJson());
        } catch (IOException e) {
            throw new IllegalArgumentException("a Telegram update that is not JSON; not stored");
        }
    }

    private long botId(String botName) throws SQLException {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT bot_id FROM telegram_checkpoint WHERE bot_name = ? ORDER BY updated_at DESC LIMIT 1")) {
            ps.setString(1, botName);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new IllegalStateException("telegram bot '" + botName + "' is unknown here: run `telegram set-webhook --bot "
                            + botName + " --url ...` (it records the bot); the update is not stored and Telegram retries it");
                }
                return rs.getLong(1);
            }
        }
    }

    private TelegramUpdateStore updates() {
        if (updates == null) {
            if (dataSource == null || childMessageListener == null) {
                throw new IllegalStateException("telegram webhook: dataSource and childMessageListener must be set");
            }
            updates = new TelegramUpdateStore(dataSource, childMessageListener);
        }
        return updates;
    }

    public void setDataSource(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    public void setChildMessageListener(ChildMessageListener childMessageListener) {
        this.childMessageListener = childMessageListener;
    }
}
